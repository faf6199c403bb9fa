//! Reads `intervals.jsonl` into per-second series: counters summed over steps and scenarios,
//! failures by class, active VUs per scenario, latency percentiles of every second (all steps
//! merged, and per step), schedule-lag p99, and the whole-run histograms.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use onrush_metrics::RESULTS_FORMAT_VERSION;
use serde_json::Value;

use crate::hdr::{self, Decoder, Dense};
use crate::input::json_msg;
use crate::lines::RawLine;
use crate::ReportError;

/// Seconds beyond this are taken for a corrupt file (about 115 days).
const MAX_SECONDS: u64 = 10_000_000;

/// One (scenario, step) of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StepId {
    pub scenario: String,
    pub name: String,
}

/// p50 / p90 / p99 / max per second, in ms; `None` for a second without a value.
#[derive(Clone, Debug, Default)]
pub(crate) struct Quantiles {
    pub p50: Vec<Option<f64>>,
    pub p90: Vec<Option<f64>>,
    pub p99: Vec<Option<f64>>,
    pub max: Vec<Option<f64>>,
}

impl Quantiles {
    fn new(n: usize) -> Self {
        Quantiles {
            p50: vec![None; n],
            p90: vec![None; n],
            p99: vec![None; n],
            max: vec![None; n],
        }
    }

    /// Sets second `t` from p50, p90, p99, max in µs.
    fn set(&mut self, t: usize, q: &[u64]) {
        self.p50[t] = Some(us_to_ms(q[0]));
        self.p90[t] = Some(us_to_ms(q[1]));
        self.p99[t] = Some(us_to_ms(q[2]));
        self.max[t] = Some(us_to_ms(q[3]));
    }
}

fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Everything the charts need, per second `0..seconds`.
pub(crate) struct Series {
    pub seconds: usize,
    pub steps: Vec<StepId>,
    pub scenarios: Vec<String>,
    /// Whole-number fields summed per second over the step and scenario lines: `requests`,
    /// `failures`, `bytes_in`, `bytes_out`, `iterations`, `dropped_iterations`,
    /// `connections_opened`, `active_vus`, and any counter a newer writer adds.
    pub counters: BTreeMap<String, Vec<u64>>,
    /// Active VUs per second, one vector per scenario (same order as `scenarios`).
    pub vus: Vec<Vec<u64>>,
    pub failures_by_class: BTreeMap<String, Vec<u64>>,
    /// All steps merged.
    pub latency: Quantiles,
    /// Per step (same order as `steps`).
    pub step_latency: Vec<Quantiles>,
    pub step_requests: Vec<Vec<u64>>,
    /// Schedule lag p99 per second, all scenarios merged.
    pub lag_p99: Vec<Option<f64>>,
    /// Whole-run latency histogram of each step.
    pub step_hists: Vec<Dense>,
}

impl Series {
    /// The whole-run latency histogram, all steps.
    pub fn total_hist(&self) -> Dense {
        let mut total = Dense::default();
        for h in &self.step_hists {
            total.add(h);
        }
        total
    }
}

/// The quantiles of the per-second charts.
const QS: [f64; 4] = [0.5, 0.9, 0.99, 1.0];

/// A histogram to decode: its second, its step (or `LAG` for a scenario's schedule lag), its
/// line number for errors, and the base64 text.
struct Pending<'a> {
    t: u32,
    target: u32,
    line: u32,
    text: std::borrow::Cow<'a, str>,
}

const LAG: u32 = u32::MAX;

#[derive(Default)]
struct Names {
    scenarios: Vec<String>,
    steps: Vec<StepId>,
    scenario_index: HashMap<String, usize>,
    step_index: HashMap<String, HashMap<String, usize>>,
}

impl Names {
    fn scenario(&mut self, name: &str) -> usize {
        if let Some(&i) = self.scenario_index.get(name) {
            return i;
        }
        self.scenarios.push(name.to_string());
        self.scenario_index
            .insert(name.to_string(), self.scenarios.len() - 1);
        self.scenarios.len() - 1
    }

    fn step(&mut self, scenario: &str, name: &str) -> usize {
        if let Some(&i) = self.step_index.get(scenario).and_then(|m| m.get(name)) {
            return i;
        }
        self.scenario(scenario);
        self.steps.push(StepId {
            scenario: scenario.to_string(),
            name: name.to_string(),
        });
        let i = self.steps.len() - 1;
        self.step_index
            .entry(scenario.to_string())
            .or_default()
            .insert(name.to_string(), i);
        i
    }
}

fn slot<T: Clone + Default>(v: &mut Vec<T>, t: usize) -> &mut T {
    if v.len() <= t {
        v.resize(t + 1, T::default());
    }
    &mut v[t]
}

/// Reads `path` (an `intervals.jsonl`). `known_steps` (from `summary.json`) fixes the order
/// of steps that the header's layout may lack.
pub(crate) fn read(path: &Path, known_steps: &[StepId]) -> Result<Series, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::io(path, e))?;
    let err = |line: usize, msg: String| ReportError::parse(path, line, msg);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let mut names = Names::default();

    // Header.
    let (_, first) = lines
        .next()
        .ok_or_else(|| err(1, "empty file: not an onrush intervals file".into()))?;
    let header: Value = serde_json::from_str(first).map_err(|e| err(1, json_msg(&e)))?;
    if header.get("kind").and_then(Value::as_str) != Some("header") {
        return Err(err(
            1,
            "not an onrush intervals file (the first line must be the header)".into(),
        ));
    }
    let version = header.get("onrush_results").and_then(Value::as_u64);
    if version.is_some_and(|v| v > u64::from(RESULTS_FORMAT_VERSION)) {
        return Err(err(1, format!("results format {} is newer than this onrush reads ({RESULTS_FORMAT_VERSION}): use a newer onrush", version.unwrap_or(0))));
    }
    for s in header
        .get("layout")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let scen = s.get("scenario").and_then(Value::as_str).unwrap_or("");
        names.scenario(scen);
        // Groups (`"groups"`: names in `steps`) have `group` lines, not request data.
        let groups: Vec<&str> = s
            .get("groups")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for st in s
            .get("steps")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let st = st.as_str().unwrap_or("");
            if !groups.contains(&st) {
                names.step(scen, st);
            }
        }
    }
    for st in known_steps {
        names.step(&st.scenario, &st.name);
    }

    // Counters now; histograms are stashed and decoded afterwards, second by second.
    let mut counters: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut failures: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut vus: Vec<Vec<u64>> = Vec::new();
    let mut step_requests: Vec<Vec<u64>> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut seconds = 0usize;
    for (no, l) in lines {
        if l.trim().is_empty() {
            continue;
        }
        let raw: RawLine = serde_json::from_str(l).map_err(|e| err(no, json_msg(&e)))?;
        let kind = raw.kind.as_deref().unwrap_or("");
        if kind != "step" && kind != "scenario" {
            continue; // a kind this reader does not know
        }
        let t = raw
            .t
            .ok_or_else(|| err(no, format!("{kind} line without \"t\"")))?;
        if t >= MAX_SECONDS {
            return Err(err(no, format!("second t = {t} is out of range")));
        }
        let t = t as usize;
        seconds = seconds.max(t + 1);
        let scen = raw.scenario.as_deref().unwrap_or("");
        for (k, n) in &raw.numbers {
            if k != "t" {
                if !counters.contains_key(k.as_ref()) {
                    counters.insert(k.to_string(), Vec::new());
                }
                *slot(counters.get_mut(k.as_ref()).expect("inserted"), t) += n;
            }
        }
        if kind == "scenario" {
            let si = names.scenario(scen);
            if vus.len() <= si {
                vus.resize(si + 1, Vec::new());
            }
            let active = raw.numbers.iter().find(|(k, _)| k == "active_vus");
            *slot(&mut vus[si], t) += active.map_or(0, |(_, n)| *n);
            if let Some(text) = raw.schedule_lag {
                pending.push(Pending {
                    t: t as u32,
                    target: LAG,
                    line: no as u32,
                    text,
                });
            }
            continue;
        }
        let step = raw
            .step
            .as_deref()
            .ok_or_else(|| err(no, "step line without \"step\"".into()))?;
        let si = names.step(scen, step);
        if step_requests.len() <= si {
            step_requests.resize(si + 1, Vec::new());
        }
        let requests = raw.numbers.iter().find(|(k, _)| k == "requests");
        *slot(&mut step_requests[si], t) += requests.map_or(0, |(_, n)| *n);
        for (class, n) in &raw.failures_by_class {
            *slot(failures.entry(class.to_string()).or_default(), t) += n;
        }
        if let Some(text) = raw.latency {
            pending.push(Pending {
                t: t as u32,
                target: si as u32,
                line: no as u32,
                text,
            });
        }
    }

    let n_steps = names.steps.len();
    let fit = |v: &mut Vec<u64>| v.resize(seconds, 0);
    counters.values_mut().for_each(fit);
    failures.values_mut().for_each(fit);
    vus.resize(names.scenarios.len(), Vec::new());
    vus.iter_mut().for_each(fit);
    step_requests.resize(n_steps, Vec::new());
    step_requests.iter_mut().for_each(fit);

    pending.sort_by_key(|p| p.t); // stable: keeps the file order within a second
    let hists = decode_all(&pending, seconds, n_steps).map_err(|(line, msg)| err(line, msg))?;
    Ok(Series {
        seconds,
        steps: names.steps,
        scenarios: names.scenarios,
        counters,
        vus,
        failures_by_class: failures,
        latency: hists.latency,
        step_latency: hists.step_latency,
        step_requests,
        lag_p99: hists.lag_p99,
        step_hists: hists.step_hists,
    })
}

struct Decoded {
    latency: Quantiles,
    step_latency: Vec<Quantiles>,
    lag_p99: Vec<Option<f64>>,
    step_hists: Vec<Dense>,
}

impl Decoded {
    fn new(seconds: usize, n_steps: usize) -> Self {
        Decoded {
            latency: Quantiles::new(seconds),
            step_latency: (0..n_steps).map(|_| Quantiles::new(seconds)).collect(),
            lag_p99: vec![None; seconds],
            step_hists: vec![Dense::default(); n_steps],
        }
    }

    /// Takes the seconds `part` filled (the others are `None` there) and its histograms.
    fn absorb(&mut self, part: Decoded) {
        fn take(dst: &mut [Option<f64>], src: Vec<Option<f64>>) {
            for (d, s) in dst.iter_mut().zip(src) {
                if s.is_some() {
                    *d = s;
                }
            }
        }
        fn take_q(dst: &mut Quantiles, src: Quantiles) {
            take(&mut dst.p50, src.p50);
            take(&mut dst.p90, src.p90);
            take(&mut dst.p99, src.p99);
            take(&mut dst.max, src.max);
        }
        take_q(&mut self.latency, part.latency);
        for (d, s) in self.step_latency.iter_mut().zip(part.step_latency) {
            take_q(d, s);
        }
        take(&mut self.lag_p99, part.lag_p99);
        for (d, s) in self.step_hists.iter_mut().zip(part.step_hists) {
            d.add(&s);
        }
    }
}

/// Decodes the stashed histograms (sorted by second) on up to 4 threads, each taking a run
/// of whole seconds.
fn decode_all(
    pending: &[Pending],
    seconds: usize,
    n_steps: usize,
) -> Result<Decoded, (usize, String)> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let threads = if pending.len() < 2_000 { 1 } else { threads };
    // Cut points at second boundaries, about equal in histogram count.
    let mut cuts = vec![0];
    for k in 1..threads {
        let mut i = pending.len() * k / threads;
        while i < pending.len() && i > 0 && pending[i].t == pending[i - 1].t {
            i += 1;
        }
        cuts.push(i.max(*cuts.last().expect("non-empty")));
    }
    cuts.push(pending.len());
    let parts: Vec<Result<Decoded, (usize, String)>> = std::thread::scope(|s| {
        let handles: Vec<_> = cuts
            .windows(2)
            .map(|w| {
                let chunk = &pending[w[0]..w[1]];
                s.spawn(move || decode_chunk(chunk, seconds, n_steps))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a decoding thread panicked"))
            .collect()
    });
    let mut out = Decoded::new(seconds, n_steps);
    for part in parts {
        out.absorb(part?);
    }
    Ok(out)
}

fn decode_chunk(
    chunk: &[Pending],
    seconds: usize,
    n_steps: usize,
) -> Result<Decoded, (usize, String)> {
    let mut out = Decoded::new(seconds, n_steps);
    let mut dec = Decoder::new();
    let mut sparse = Vec::new();
    let mut second = Dense::default();
    let mut lag = Dense::default();
    let mut i = 0;
    while i < chunk.len() {
        let t = chunk[i].t;
        second.clear();
        lag.clear();
        while i < chunk.len() && chunk[i].t == t {
            let p = &chunk[i];
            let field = if p.target == LAG {
                "schedule_lag"
            } else {
                "latency"
            };
            dec.decode(&p.text, &mut sparse)
                .map_err(|e| (p.line as usize, format!("{field}: {e}")))?;
            if p.target == LAG {
                lag.add_sparse(&sparse);
            } else if !sparse.is_empty() {
                let st = p.target as usize;
                let total = sparse.iter().map(|e| e.1).sum();
                let q = hdr::quantiles(sparse.iter().map(|&(i, c)| (i as usize, c)), total, &QS);
                out.step_latency[st].set(t as usize, &q);
                second.add_sparse(&sparse);
                out.step_hists[st].add_sparse(&sparse);
            }
            i += 1;
        }
        if second.total() > 0 {
            out.latency.set(t as usize, &second.quantiles(&QS));
        }
        if lag.total() > 0 {
            out.lag_p99[t as usize] = Some(us_to_ms(lag.quantiles(&[0.99])[0]));
        }
    }
    Ok(out)
}
