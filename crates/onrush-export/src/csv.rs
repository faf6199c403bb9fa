//! CSV of a results directory's per-second intervals (`onrush export DIR --csv`).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use onrush_metrics::hist::new_hist;
use onrush_metrics::{decode_hist, Hist, MsStats, INTERVALS_FILE, RESULTS_FORMAT_VERSION};
use serde::Deserialize;

use crate::ExportError;

/// The header row of [`export_csv`] (without the line break).
pub const CSV_HEADER: &str = "time_unix_ms,second,scenario,step,requests,failures,rps,bytes_in,\
bytes_out,latency_min_ms,latency_mean_ms,p50_ms,p90_ms,p95_ms,p99_ms,max_ms";

/// The `scenario` and `step` of the per-second totals row.
const ALL: &str = "*";

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Header(Header),
    Step(StepLine),
    Scenario(ScenarioLine),
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct Header {
    onrush_results: u32,
    start_unix_ms: u64,
    #[serde(default = "one")]
    interval_s: f64,
    #[serde(default)]
    layout: Vec<LayoutScenario>,
}

fn one() -> f64 {
    1.0
}

#[derive(Deserialize)]
struct LayoutScenario {
    scenario: String,
    #[serde(default)]
    steps: Vec<String>,
    /// The names in `steps` that are groups (transactions): not request rows.
    #[serde(default)]
    groups: Vec<String>,
}

#[derive(Deserialize)]
struct StepLine {
    t: u64,
    scenario: String,
    step: String,
    #[serde(default)]
    requests: u64,
    #[serde(default)]
    failures: u64,
    #[serde(default)]
    bytes_in: u64,
    #[serde(default)]
    bytes_out: u64,
    #[serde(default)]
    latency: Option<String>,
}

#[derive(Deserialize)]
struct ScenarioLine {
    t: u64,
}

#[derive(Default)]
struct Counts {
    requests: u64,
    failures: u64,
    bytes_in: u64,
    bytes_out: u64,
}

impl Counts {
    fn add(&mut self, l: &StepLine) {
        self.requests += l.requests;
        self.failures += l.failures;
        self.bytes_in += l.bytes_in;
        self.bytes_out += l.bytes_out;
    }
}

/// The steps in row order, and the current second's data per step.
struct Table {
    start_unix_ms: u64,
    interval_s: f64,
    names: Vec<(String, String)>,
    index: HashMap<(String, String), usize>,
    second: Option<u64>,
    counts: Vec<Counts>,
    hists: Vec<Option<Hist>>,
    buf: String,
}

impl Table {
    fn step(&mut self, scenario: &str, step: &str) -> usize {
        let key = (scenario.to_string(), step.to_string());
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.names.len();
        self.names.push(key.clone());
        self.index.insert(key, i);
        self.counts.push(Counts::default());
        self.hists.push(None);
        i
    }

    /// Writes the rows of the current second (every known step, then the totals) and resets.
    fn flush(&mut self, w: &mut impl Write) -> Result<(), ExportError> {
        let Some(t) = self.second.take() else {
            return Ok(());
        };
        let time = self.start_unix_ms + (t as f64 * self.interval_s * 1000.0).round() as u64;
        let mut total = Counts::default();
        let mut total_hist = new_hist();
        self.buf.clear();
        for i in 0..self.names.len() {
            let c = std::mem::take(&mut self.counts[i]);
            let h = self.hists[i].take();
            let stats = h.as_ref().map_or_else(MsStats::default, MsStats::from_hist);
            if let Some(h) = &h {
                total_hist
                    .add(h)
                    .map_err(|e| ExportError::Write(std::io::Error::other(format!("{e:?}"))))?;
            }
            let (sc, st) = &self.names[i];
            row(&mut self.buf, time, t, sc, st, &c, self.interval_s, &stats);
            total.requests += c.requests;
            total.failures += c.failures;
            total.bytes_in += c.bytes_in;
            total.bytes_out += c.bytes_out;
        }
        let stats = MsStats::from_hist(&total_hist);
        row(
            &mut self.buf,
            time,
            t,
            ALL,
            ALL,
            &total,
            self.interval_s,
            &stats,
        );
        w.write_all(self.buf.as_bytes()).map_err(ExportError::Write)
    }
}

#[allow(clippy::too_many_arguments)]
fn row(
    out: &mut String,
    time: u64,
    t: u64,
    scenario: &str,
    step: &str,
    c: &Counts,
    interval_s: f64,
    s: &MsStats,
) {
    use std::fmt::Write as _;
    let _ = write!(out, "{time},{t},");
    csv_field(scenario, out);
    out.push(',');
    csv_field(step, out);
    let rps = if interval_s > 0.0 {
        c.requests as f64 / interval_s
    } else {
        0.0
    };
    let _ = write!(
        out,
        ",{},{},{rps},{},{},{},{},{},{},{},{},{}\r\n",
        c.requests,
        c.failures,
        c.bytes_in,
        c.bytes_out,
        s.min,
        s.mean,
        s.p50,
        s.p90,
        s.p95,
        s.p99,
        s.max
    );
}

/// Appends one CSV field, quoted per RFC 4180 when it holds a comma, a double quote, CR or LF
/// (double quotes doubled inside).
pub fn csv_field(v: &str, out: &mut String) {
    if v.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&v.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(v);
    }
}

/// Reads `DIR/intervals.jsonl` and writes a CSV (RFC 4180: CRLF line ends, fields quoted when
/// needed) with the header [`CSV_HEADER`] and, for each second, one row per step — every step
/// of the header's layout, zeros when it had no request that second — then a totals row with
/// scenario and step `*`. Latencies are in ms with the conventions of `summary.json`
/// (percentiles and max: HdrHistogram's highest equivalent value). Streams: memory does not
/// grow with the length of the run.
pub fn export_csv(dir: &Path, w: &mut impl Write) -> Result<(), ExportError> {
    let path = dir.join(INTERVALS_FILE);
    let read_err = |e| ExportError::Read {
        path: path.clone(),
        source: e,
    };
    let parse_err = |line: usize, msg: String| ExportError::Parse {
        path: path.clone(),
        line,
        msg,
    };
    let reader = BufReader::new(File::open(&path).map_err(read_err)?);
    let mut table: Option<Table> = None;
    for (i, text) in reader.lines().enumerate() {
        let n = i + 1;
        let text = text.map_err(read_err)?;
        if text.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(&text).map_err(|e| {
            let msg = if table.is_none() {
                format!("not an onrush intervals file (the first line must be the header): {e}")
            } else {
                e.to_string()
            };
            parse_err(n, msg)
        })?;
        let (t, step) = match (line, table.as_mut()) {
            (Line::Header(h), None) => {
                if h.onrush_results > RESULTS_FORMAT_VERSION {
                    return Err(parse_err(
                        n,
                        format!(
                            "results format {} is newer than this onrush reads ({})",
                            h.onrush_results, RESULTS_FORMAT_VERSION
                        ),
                    ));
                }
                let mut tb = Table {
                    start_unix_ms: h.start_unix_ms,
                    interval_s: h.interval_s,
                    names: Vec::new(),
                    index: HashMap::new(),
                    second: None,
                    counts: Vec::new(),
                    hists: Vec::new(),
                    buf: String::new(),
                };
                for s in &h.layout {
                    for st in s.steps.iter().filter(|st| !s.groups.contains(st)) {
                        tb.step(&s.scenario, st);
                    }
                }
                w.write_all(CSV_HEADER.as_bytes())
                    .and_then(|()| w.write_all(b"\r\n"))
                    .map_err(ExportError::Write)?;
                table = Some(tb);
                continue;
            }
            (Line::Header(_), Some(_)) => return Err(parse_err(n, "a second header line".into())),
            (_, None) => {
                return Err(parse_err(
                    n,
                    "not an onrush intervals file: the first line must be the header".into(),
                ))
            }
            (Line::Other, Some(_)) => continue,
            (Line::Scenario(l), Some(_)) => (l.t, None),
            (Line::Step(l), Some(_)) => (l.t, Some(l)),
        };
        let tb = table.as_mut().expect("set by the header");
        match tb.second {
            Some(cur) if t < cur => {
                return Err(parse_err(
                    n,
                    format!("second {t} after second {cur}: lines must be in second order"),
                ))
            }
            Some(cur) if t > cur => {
                tb.flush(w)?;
                tb.second = Some(t);
            }
            Some(_) => {}
            None => tb.second = Some(t),
        }
        if let Some(l) = step {
            let i = tb.step(&l.scenario, &l.step);
            tb.counts[i].add(&l);
            if let Some(text) = &l.latency {
                let h = decode_hist(text).map_err(|e| parse_err(n, format!("latency: {e}")))?;
                match &mut tb.hists[i] {
                    Some(acc) => acc
                        .add(&h)
                        .map_err(|e| parse_err(n, format!("latency: {e:?}")))?,
                    slot => *slot = Some(h),
                }
            }
        }
    }
    let mut table = table.ok_or_else(|| parse_err(1, "empty file: no header line".into()))?;
    table.flush(w)?;
    w.flush().map_err(ExportError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4180_quoting() {
        let f = |v: &str| {
            let mut o = String::new();
            csv_field(v, &mut o);
            o
        };
        assert_eq!(f("home"), "home");
        assert_eq!(f("a,b"), "\"a,b\"");
        assert_eq!(f("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(f("two\nlines"), "\"two\nlines\"");
        assert_eq!(f("cr\r"), "\"cr\r\"");
        assert_eq!(f(" spaced "), " spaced ");
        assert_eq!(f(""), "");
        assert_eq!(CSV_HEADER.split(',').count(), 16);
    }
}
