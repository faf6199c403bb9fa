//! Merging the results of several runs (e.g. one per load-generator machine), streaming: the
//! inputs are read second by second side by side (each file is in second order), so memory
//! holds one second of each run, not the runs.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use onrush_results::{HistDecoder, IntervalsReader, Line, ReadError};

use crate::aggregate::{Aggregate, RunMeta};
use crate::files;
use crate::hist::Encoder;
use crate::record::{Layout, StepKind};
use crate::snapshot::{CheckCounts, ScenarioInterval, StepInterval};
use crate::summary::{Extras, Summary};
use crate::{INTERVALS_FILE, SUMMARY_FILE};

/// Why [`merge`] failed; every variant names the file (and line) at fault.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("merge needs at least one results directory")]
    NoInput,
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}:{line}: {msg}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        msg: String,
    },
}

impl MergeError {
    fn parse(path: &Path, line: usize, msg: impl Into<String>) -> MergeError {
        MergeError::Parse {
            path: path.to_path_buf(),
            line,
            msg: msg.into(),
        }
    }
}

impl From<ReadError> for MergeError {
    fn from(e: ReadError) -> MergeError {
        match e {
            ReadError::Io { path, source } => MergeError::Io { path, source },
            e => MergeError::parse(e.path(), e.line().unwrap_or(1), e.message()),
        }
    }
}

/// One run being read: its reader and the line read ahead (with its line number).
struct Input {
    reader: IntervalsReader,
    next: Option<(usize, Line)>,
}

impl Input {
    fn open(dir: &Path) -> Result<Input, MergeError> {
        let mut input = Input {
            reader: IntervalsReader::open(&dir.join(INTERVALS_FILE))?,
            next: None,
        };
        input.advance()?;
        Ok(input)
    }

    fn advance(&mut self) -> Result<(), MergeError> {
        self.next = self
            .reader
            .next_line()?
            .map(|l| (self.reader.line_number(), l));
        Ok(())
    }

    fn next_t(&self) -> Option<u64> {
        self.next.as_ref().and_then(|(_, l)| l.t())
    }

    /// The read-ahead line when it is of second `t`.
    fn take_if(&mut self, t: u64) -> Result<Option<(usize, Line)>, MergeError> {
        if self.next_t() != Some(t) {
            return Ok(None);
        }
        let taken = self.next.take();
        self.advance()?;
        Ok(taken)
    }
}

/// Reads `intervals.jsonl` of every directory in `dirs`, aligns the runs by second index,
/// merges counters and histograms exactly, and writes `summary.json` and `intervals.jsonl` to
/// `out` (created when missing). Steps are matched by (scenario, step) name; a step present in
/// only some runs is included. The merged run starts at the earliest start and lasts as long as
/// the longest run. Returns the summary written.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Summary, MergeError> {
    if dirs.is_empty() {
        return Err(MergeError::NoInput);
    }
    let mut inputs = Vec::new();
    for dir in dirs {
        inputs.push(Input::open(dir)?);
    }
    let mut agg = Aggregate::new(&Layout::default());
    for input in &inputs {
        for s in &input.reader.header().layout {
            agg.add_layout(&files::scenario_layout(s));
        }
    }
    let out_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MergeError::Io { path, source }
    };
    fs::create_dir_all(out).map_err(out_err(out))?;
    // The lines go to a scratch file first: the header, written before them, lists every
    // step, and a step may first appear in the last second of the last run.
    let scratch = out.join(format!(".{INTERVALS_FILE}.merging"));
    let merged = merge_lines(&mut inputs, &mut agg, &scratch);
    let written = merged.and_then(|()| {
        let runs: Vec<&onrush_results::Header> = inputs.iter().map(|i| i.reader.header()).collect();
        let mut plans: Vec<&str> = Vec::new();
        for r in &runs {
            if !plans.contains(&r.plan.as_str()) {
                plans.push(&r.plan);
            }
        }
        let merged_from: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let meta = RunMeta {
            plan: plans.join("+"),
            start_unix_ms: runs.iter().map(|r| r.start_unix_ms).min().unwrap_or(0),
            duration_s: Some(runs.iter().map(|r| r.duration_s).fold(0.0, f64::max)),
            merged_from: Some(merged_from.clone()),
        };
        let summary = agg.summary(&meta, &Extras::default());
        let header = files::header(
            &meta.plan,
            meta.start_unix_ms,
            summary.run.duration_s,
            &agg.layout(),
            Some(merged_from),
        );
        let path = out.join(INTERVALS_FILE);
        write_with_header(&path, &header, &scratch).map_err(out_err(&path))?;
        let path = out.join(SUMMARY_FILE);
        summary.write_to(&path).map_err(out_err(&path))?;
        Ok(summary)
    });
    let _ = fs::remove_file(&scratch);
    written
}

/// Merges the inputs second by second into `scratch` (lines without the header), feeding
/// `agg`.
fn merge_lines(
    inputs: &mut [Input],
    agg: &mut Aggregate,
    scratch: &Path,
) -> Result<(), MergeError> {
    let w_err = |source| MergeError::Io {
        path: scratch.to_path_buf(),
        source,
    };
    let mut w = BufWriter::new(File::create(scratch).map_err(w_err)?);
    let mut dec = HistDecoder::new();
    let mut enc = Encoder::new();
    while let Some(t) = inputs.iter().filter_map(Input::next_t).min() {
        let mut scen: Vec<(usize, ScenarioInterval)> = Vec::new();
        let mut steps: Vec<((usize, usize), StepInterval)> = Vec::new();
        for input in inputs.iter_mut() {
            while let Some((no, line)) = input.take_if(t)? {
                let bad = |m: String| MergeError::parse(input.reader.path(), no, m);
                match line {
                    Line::Scenario(l) => {
                        let mut d = files::scenario_interval(&l, &mut dec).map_err(bad)?;
                        let si = agg.scenario_index(&l.scenario);
                        for c in &l.checks {
                            let ci = agg.check_index(si, &c.step, &c.name);
                            if d.checks.len() <= ci {
                                d.checks.resize(ci + 1, CheckCounts::default());
                            }
                            d.checks[ci].add(&CheckCounts {
                                passes: c.passes,
                                fails: c.fails,
                            });
                        }
                        match scen.iter_mut().find(|(i, _)| *i == si) {
                            Some((_, acc)) => acc.merge(d),
                            None => scen.push((si, d)),
                        }
                    }
                    Line::Step(ref l) | Line::Group(ref l) => {
                        let kind = if matches!(line, Line::Group(_)) {
                            StepKind::Group
                        } else {
                            StepKind::Request
                        };
                        let d = files::step_interval(l, &mut dec).map_err(bad)?;
                        let si = agg.scenario_index(&l.scenario);
                        let key = (si, agg.step_index_kind(si, &l.step, kind));
                        match steps.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, acc)) => acc.merge(d),
                            None => steps.push((key, d)),
                        }
                    }
                    Line::Header(_) | Line::Other(_) => {}
                }
            }
        }
        // Same order as the collector writes: per scenario its line, then its steps.
        scen.sort_by_key(|(si, _)| *si);
        steps.sort_by_key(|(k, _)| *k);
        let mut steps = steps.into_iter().peekable();
        for si in 0..agg.scenarios.len() {
            if let Some((_, d)) = scen.iter().find(|(i, _)| *i == si) {
                let sc = &agg.scenarios[si];
                let names: Vec<(&str, &str)> = sc
                    .checks
                    .iter()
                    .map(|c| (c.step.as_str(), c.name.as_str()))
                    .collect();
                let l = files::scenario_line(t, &sc.name, d, &names, &mut enc);
                writeln!(w, "{}", Line::Scenario(l).to_json()).map_err(w_err)?;
                agg.add_scenario(t, si, d);
            }
            while let Some(((_, sti), d)) = steps.next_if(|((s, _), _)| *s == si) {
                let sc = &agg.scenarios[si];
                let st = &sc.steps[sti];
                let l = files::step_line(t, &sc.name, &st.name, &d, &mut enc);
                let line = if st.kind.is_group() {
                    Line::Group(l)
                } else {
                    Line::Step(l)
                };
                writeln!(w, "{}", line.to_json()).map_err(w_err)?;
                agg.add_step(t, si, sti, &d);
            }
        }
    }
    w.flush().map_err(w_err)
}

/// Writes `header` then the lines of `body` to `path`.
fn write_with_header(path: &Path, header: &onrush_results::Header, body: &Path) -> io::Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    writeln!(w, "{}", Line::Header(header.clone()).to_json())?;
    io::copy(&mut BufReader::new(File::open(body)?), &mut w)?;
    w.flush()
}
