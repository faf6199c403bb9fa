//! The controller's live line of a distributed run: once a second, the total rate, failures
//! and VUs, and each agent's rate, VUs, CPU and schedule lag (from the lines it streams), or
//! `LOST`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::controller::AgentReport;

/// The controller's live line: per second, the requests and failures of every agent, with
/// each agent's VUs and its own CPU (from the generator lines it streams).
pub(crate) struct LiveStatus {
    quiet: bool,
    /// Per agent: second → (requests, failures, active VUs).
    per_agent: Vec<BTreeMap<u64, (u64, u64, u64)>>,
    /// Per agent: its latest generator line's process CPU (% of one core) and schedule lag
    /// p99 (ms).
    health: Vec<(Option<f64>, Option<f64>)>,
    shown: u64,
    last_print: Instant,
}

impl LiveStatus {
    /// One more agent (a spare that took over a lost one's segment).
    pub(crate) fn add_agent(&mut self) {
        self.per_agent.push(BTreeMap::new());
        self.health.push((None, None));
    }

    pub(crate) fn new(agents: usize, quiet: bool) -> Self {
        LiveStatus {
            quiet,
            per_agent: vec![BTreeMap::new(); agents],
            health: vec![(None, None); agents],
            shown: 0,
            last_print: Instant::now(),
        }
    }

    pub(crate) fn lines(&mut self, agent: usize, bytes: &[u8]) {
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match serde_json::from_slice(line) {
                Ok(onrush_results::Line::Step(s)) => {
                    let e = self.per_agent[agent].entry(s.t).or_default();
                    e.0 += s.requests;
                    e.1 += s.failures;
                }
                Ok(onrush_results::Line::Scenario(s)) => {
                    self.per_agent[agent].entry(s.t).or_default().2 += s.active_vus;
                }
                _ => {}
            }
        }
    }

    pub(crate) fn generator(&mut self, agent: usize, bytes: &[u8]) {
        let last = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice::<onrush_results::GeneratorLine>(l).ok())
            .next_back();
        if let (Some(l), Some(h)) = (last, self.health.get_mut(agent)) {
            *h = (l.cpu_percent.or(h.0), l.schedule_lag_p99_ms);
        }
    }

    /// Prints the newest second every live agent has sent, once.
    pub(crate) fn tick(&mut self, reports: &[AgentReport], done: &[bool]) {
        if self.quiet || self.last_print.elapsed() < Duration::from_millis(900) {
            return;
        }
        let latest = |m: &BTreeMap<u64, (u64, u64, u64)>| m.keys().next_back().copied();
        let Some(t) = self
            .per_agent
            .iter()
            .zip(done)
            .filter(|(_, d)| !**d)
            .filter_map(|(m, _)| latest(m))
            .min()
        else {
            return;
        };
        if t < self.shown {
            return;
        }
        self.shown = t + 1;
        self.last_print = Instant::now();
        let mut total = (0, 0, 0);
        let mut parts = Vec::new();
        for ((a, m), (cpu, lag)) in reports.iter().zip(&self.per_agent).zip(&self.health) {
            let (r, f, vus) = m.get(&t).copied().unwrap_or_default();
            total.0 += r;
            total.1 += f;
            total.2 += vus;
            let mut part = format!("{} {r}/s {vus} VUs", a.name);
            if let Some(cpu) = cpu {
                part.push_str(&format!(" cpu {cpu:.0}%"));
            }
            if let Some(lag) = lag.filter(|l| *l >= 10.0) {
                part.push_str(&format!(" lag p99 {lag:.0} ms"));
            }
            if a.lost_at_s.is_some() {
                part.push_str(" LOST");
            }
            parts.push(part);
        }
        eprintln!(
            "[{}s] {} req/s, {} failed, {} VUs · {}",
            t + 1,
            total.0,
            total.1,
            total.2,
            parts.join(" · ")
        );
        for m in &mut self.per_agent {
            while m.len() > 4 {
                m.pop_first();
            }
        }
    }
}
