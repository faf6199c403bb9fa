//! CSV of a results directory's per-second intervals (`onrush export DIR --csv`).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use onrush_metrics::hist::new_hist;
use onrush_metrics::{Hist, MsStats, INTERVALS_FILE};
use onrush_results::{HistDecoder, IntervalsReader, Line, ReadError, StepLine};

use crate::ExportError;

/// The header row of [`export_csv`] (without the line break).
pub const CSV_HEADER: &str = "time_unix_ms,second,scenario,step,requests,failures,rps,bytes_in,\
bytes_out,latency_min_ms,latency_mean_ms,p50_ms,p90_ms,p95_ms,p99_ms,max_ms";

/// The `scenario` and `step` of the per-second totals row.
const ALL: &str = "*";

impl From<ReadError> for ExportError {
    fn from(e: ReadError) -> ExportError {
        match e {
            ReadError::Io { path, source } => ExportError::Read { path, source },
            e => ExportError::Parse {
                path: e.path().to_path_buf(),
                line: e.line().unwrap_or(1),
                msg: e.message(),
            },
        }
    }
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
    let mut lines = IntervalsReader::open(&dir.join(INTERVALS_FILE))?;
    let header = lines.header();
    let mut table = Table {
        start_unix_ms: header.start_unix_ms,
        interval_s: f64::from(header.interval_s),
        names: Vec::new(),
        index: HashMap::new(),
        second: None,
        counts: Vec::new(),
        hists: Vec::new(),
        buf: String::new(),
    };
    // Groups (transactions) are not request rows.
    for s in &header.layout {
        for st in s.request_steps() {
            table.step(&s.scenario, st);
        }
    }
    w.write_all(CSV_HEADER.as_bytes())
        .and_then(|()| w.write_all(b"\r\n"))
        .map_err(ExportError::Write)?;
    let mut decoder = HistDecoder::new();
    while let Some(line) = lines.next_line()? {
        // The reader checks that seconds never go back.
        let (t, step) = match line {
            Line::Scenario(l) => (l.t, None),
            Line::Step(l) => (l.t, Some(l)),
            _ => continue,
        };
        if table.second.is_some_and(|cur| t > cur) {
            table.flush(w)?;
        }
        table.second = Some(t);
        if let Some(l) = step {
            let i = table.step(&l.scenario, &l.step);
            table.counts[i].add(&l);
            if let Some(text) = &l.latency {
                let h = decoder
                    .decode_hist(text)
                    .map_err(|e| lines.error(format!("latency: {e}")))?;
                match &mut table.hists[i] {
                    Some(acc) => acc
                        .add(&h)
                        .map_err(|e| lines.error(format!("latency: {e:?}")))?,
                    slot => *slot = Some(h),
                }
            }
        }
    }
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
