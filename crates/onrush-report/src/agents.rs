//! The agents of a distributed run (`onrush run --agents N`): who ran the load, how each one
//! fared, and its rate second by second. Read from `summary.json`'s `distributed` section
//! (the controller's record of each agent, onrush-results' `DistributedRun`) and from each agent's own results under
//! `agents/<name>/` (its `intervals.jsonl`, which the controller keeps beside the merge).
//!
//! Shown as a table (rate, clock, start, health, loss) and as a chart of requests per second
//! per agent, so that a reader sees which machine fell behind or was lost, and when. A run
//! that was not distributed has no such section.

use std::fmt::Write as _;
use std::path::Path;

use onrush_results::{Extras, IntervalsReader, Line, INTERVALS_FILE};

use crate::fmt::{esc, rate, thousands};
use crate::ReportError;

/// One agent, as the controller recorded it and as its own results tell.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Agent {
    pub name: String,
    pub address: String,
    pub threads: Option<u64>,
    pub clock_offset_ms: Option<f64>,
    pub clock_rtt_ms: Option<f64>,
    pub start_late_ms: Option<f64>,
    pub lost_at_s: Option<f64>,
    pub lost_reason: String,
    /// `on_agent_loss: replace`: the spare that took over this lost agent's segment.
    pub replaced_by: String,
    /// A spare: the lost agent it replaced, and where in the run it joined (s).
    pub replaces: String,
    pub joined_at_s: Option<f64>,
    pub results_received: bool,
    /// `healthy`, `saturated`, or empty when its summary did not arrive.
    pub verdict: String,
    pub cpu_percent_max: Option<f64>,
    pub health_message: String,
    /// Requests completed per second (its own `intervals.jsonl`; empty when there is none).
    pub requests: Vec<u64>,
    pub failures: Vec<u64>,
}

impl Agent {
    fn total_requests(&self) -> u64 {
        self.requests.iter().sum()
    }

    /// Its mean rate over the seconds it ran.
    fn mean_rate(&self) -> f64 {
        match self.requests.len() {
            0 => 0.0,
            n => self.total_requests() as f64 / n as f64,
        }
    }
}

/// The agents of the run in `dir`: none when `extras` has no `distributed` section (read
/// through onrush-results, whatever version wrote it). An agent whose results are missing
/// (lost before it handed any over) is listed without a series; a results file that exists
/// but does not read is an error naming it.
pub(crate) fn load(dir: &Path, extras: &Extras) -> Result<Vec<Agent>, ReportError> {
    let Some(run) = extras.distributed_run() else {
        return Ok(Vec::new());
    };
    let mut agents = Vec::with_capacity(run.agents.len());
    for a in run.agents {
        let generator = a.generator.as_ref();
        let mut agent = Agent {
            threads: Some(a.threads),
            clock_offset_ms: Some(a.clock_offset_ms),
            clock_rtt_ms: Some(a.clock_rtt_ms),
            start_late_ms: a.start_late_ms,
            lost_at_s: a.lost_at_s,
            lost_reason: a.lost_reason.unwrap_or_default(),
            replaced_by: a.replaced_by.unwrap_or_default(),
            replaces: a.replaces.unwrap_or_default(),
            joined_at_s: a.joined_at_s,
            results_received: a.results_received,
            verdict: generator.map(|g| g.verdict.clone()).unwrap_or_default(),
            cpu_percent_max: generator.map(|g| g.cpu_percent_max),
            health_message: generator.map(|g| g.message.clone()).unwrap_or_default(),
            name: a.name,
            address: a.address,
            ..Agent::default()
        };
        // A name is a directory under agents/: never follow one out of it.
        let safe = !agent.name.is_empty()
            && !agent.name.contains(['/', '\\'])
            && agent.name != "."
            && agent.name != "..";
        let path = dir.join("agents").join(&agent.name).join(INTERVALS_FILE);
        if safe && path.is_file() {
            (agent.requests, agent.failures) = per_second(&path)?;
        }
        agents.push(agent);
    }
    Ok(agents)
}

/// Requests and failures per second of one `intervals.jsonl`, from the counters of its step
/// lines only (no histogram is decoded: this is read once per agent).
fn per_second(path: &Path) -> Result<(Vec<u64>, Vec<u64>), ReportError> {
    let read_err = |e: onrush_results::ReadError| match e {
        onrush_results::ReadError::Io { path, source } => ReportError::io(&path, source),
        e => ReportError::parse(e.path(), e.line().unwrap_or(1), e.message()),
    };
    let mut lines = IntervalsReader::open(path).map_err(read_err)?;
    let (mut requests, mut failures) = (Vec::new(), Vec::new());
    while let Some(line) = lines.next_line().map_err(read_err)? {
        let Line::Step(l) = &line else { continue };
        if l.t >= crate::intervals::MAX_SECONDS {
            return Err(read_err(
                lines.error(format!("second t = {} is out of range", l.t)),
            ));
        }
        let t = l.t as usize;
        if requests.len() <= t {
            requests.resize(t + 1, 0);
            failures.resize(t + 1, 0);
        }
        requests[t] += l.requests;
        failures[t] += l.failures;
    }
    Ok((requests, failures))
}

fn ms_or_dash(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.1} ms"))
}

/// The "Agents" section: one row per agent; nothing for a run that was not distributed.
pub(crate) fn table(out: &mut String, agents: &[Agent]) {
    if agents.is_empty() {
        return;
    }
    let lost = agents.iter().filter(|a| a.lost_at_s.is_some()).count();
    let _ = write!(
        out,
        r#"<section id="agents" class="block"><h2>Agents</h2><p class="note">{} agent{} ran this plan's load, each its segment of it; their results are merged exactly above, and kept apart under <code>agents/</code>.{}</p><div class="scroll"><table class="grid"><thead><tr><th>agent</th><th>address</th><th class="num">threads</th><th class="num">requests</th><th class="num">mean rate</th><th class="num">failures</th><th class="num">clock offset</th><th class="num">start late</th><th class="num">CPU peak</th><th>generator</th><th>lost, replaced</th></tr></thead><tbody>"#,
        agents.len(),
        if agents.len() == 1 { "" } else { "s" },
        if lost > 0 {
            format!(
                r#" <span class="bad">Partial run: {lost} lost; their results up to their last second are included.</span>"#
            )
        } else {
            String::new()
        }
    );
    for a in agents {
        let offset = match (a.clock_offset_ms, a.clock_rtt_ms) {
            (Some(o), Some(rtt)) => format!("{o:+.1} ms ± {:.1}", rtt / 2.0),
            (Some(o), None) => format!("{o:+.1} ms"),
            _ => "-".into(),
        };
        let (verdict_class, verdict) = match a.verdict.as_str() {
            "" => (
                "bad",
                if a.results_received {
                    "no verdict".to_string()
                } else {
                    "no results handed over".to_string()
                },
            ),
            "healthy" => ("ok-note", "healthy".to_string()),
            v => ("bad", format!("{v}: {}", a.health_message)),
        };
        let mut lost = match a.lost_at_s {
            Some(s) => format!(
                r#"<span class="bad">at {s:.1} s: {}</span>"#,
                esc(&a.lost_reason)
            ),
            None => "-".into(),
        };
        if !a.replaced_by.is_empty() {
            let _ = write!(lost, "; replaced by {}", esc(&a.replaced_by));
        }
        if !a.replaces.is_empty() {
            lost = format!(
                "spare: took over {}'s segment at {} s",
                esc(&a.replaces),
                a.joined_at_s
                    .map_or_else(|| "?".into(), |s| format!("{s:.1}"))
            );
        }
        let failures: u64 = a.failures.iter().sum();
        let _ = write!(
            out,
            r#"<tr{row}><td>{}</td><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}/s</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="{verdict_class}">{}</td><td>{lost}</td></tr>"#,
            esc(&a.name),
            esc(&a.address),
            a.threads.map_or_else(|| "-".into(), |t| t.to_string()),
            thousands(a.total_requests()),
            rate(a.mean_rate()),
            thousands(failures),
            offset,
            ms_or_dash(a.start_late_ms),
            a.cpu_percent_max
                .map_or_else(|| "-".into(), |c| format!("{c:.0}%")),
            esc(&verdict),
            row = if a.lost_at_s.is_some() {
                r#" class="bad""#
            } else {
                ""
            },
        );
    }
    out.push_str("</tbody></table></div></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `summary.json`'s top-level fields, as onrush-results reads them.
    fn extra(json: &str) -> Extras {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_run_that_was_not_distributed_has_no_agents() {
        let dir = std::env::temp_dir();
        assert!(load(&dir, &extra("{}")).unwrap().is_empty());
        assert!(load(&dir, &extra(r#"{"distributed": 3}"#))
            .unwrap()
            .is_empty());
        let mut out = String::new();
        table(&mut out, &[]);
        assert!(out.is_empty());
    }

    #[test]
    fn an_agent_without_results_is_listed_and_a_name_never_leaves_agents() {
        let dir = std::env::temp_dir().join(format!("onrush-report-agents-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("agents")).unwrap();
        // `..` would name dir itself; a file there must not be read as the agent's.
        std::fs::write(dir.join(INTERVALS_FILE), "not json\n").unwrap();
        let agents = load(
            &dir,
            &extra(
                r#"{"distributed": {"agents": [
                    {"name": "lg1", "address": "10.0.0.5:40000", "threads": 2,
                     "clock_offset_ms": -1.25, "clock_rtt_ms": 0.5, "start_late_ms": 0.3,
                     "lost_at_s": 5.0, "lost_reason": "no word for 3 s",
                     "replaced_by": "lg9", "results_received": false},
                    {"name": "..", "results_received": true,
                     "generator": {"verdict": "saturated", "cpu_percent_max": 99.5,
                                   "message": "CPU"}}
                ]}}"#,
            ),
        )
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(agents.len(), 2);
        assert_eq!(agents[0].name, "lg1");
        assert_eq!(agents[0].lost_at_s, Some(5.0));
        assert!(agents[0].requests.is_empty() && agents[1].requests.is_empty());
        assert_eq!(agents[1].verdict, "saturated");
        let mut out = String::new();
        table(&mut out, &agents);
        assert!(out.contains("Partial run: 1 lost"), "{out}");
        assert!(
            out.contains("-1.2 ms ± 0.2") || out.contains("-1.3 ms ± 0.2"),
            "{out}"
        );
        assert!(
            out.contains("at 5.0 s: no word for 3 s</span>; replaced by lg9"),
            "{out}"
        );
        assert!(out.contains("no results handed over"), "{out}");
        assert!(out.contains("saturated: CPU"), "{out}");
    }
}
