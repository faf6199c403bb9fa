//! Merging the results of several runs (e.g. one per load-generator machine), streaming: the
//! inputs are read second by second side by side (each file is in second order), so memory
//! holds one second of each run, not the runs. The same pass over one run, writing nothing,
//! rebuilds the summary of a run that was killed before it wrote `summary.json`.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use onrush_results::{HistDecoder, IntervalsReader, Line, ReadError};

use crate::aggregate::{Aggregate, RunMeta};
use crate::files;
use crate::hist::Encoder;
use crate::merge_extras::{keep_failure_classes, merged_extras, InputRecord};
use crate::record::{Layout, StepKind};
use crate::snapshot::{CheckCounts, ScenarioInterval, StepInterval};
use crate::summary::{Extras, Summary};
use crate::{INTERVALS_FILE, SUMMARY_FILE};

/// Why [`merge`] failed; every variant names the file (and line) at fault.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("merge needs at least one results directory")]
    NoInput,
    #[error(
        "--out {}: this is one of the directories to merge ({}); merging into it would \
         overwrite its results: give another directory to --out",
        out.display(), input.display()
    )]
    OutIsInput { out: PathBuf, input: PathBuf },
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

/// One run being read: its reader, the line read ahead (with its line number), and the
/// seconds seen so far.
struct Input {
    reader: IntervalsReader,
    next: Option<(usize, Line)>,
    seconds: u64,
}

impl Input {
    fn open(dir: &Path) -> Result<Input, MergeError> {
        let mut input = Input {
            reader: IntervalsReader::open(&dir.join(INTERVALS_FILE))?,
            next: None,
            seconds: 0,
        };
        input.advance()?;
        Ok(input)
    }

    /// The run's length: its header's, or, when the run did not finish (its header has no
    /// length), the seconds it wrote.
    fn duration_s(&self) -> f64 {
        let header = self.reader.header();
        if header.unfinished {
            self.seconds as f64
        } else {
            header.duration_s
        }
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
        self.seconds = self.seconds.max(t + 1);
        self.advance()?;
        Ok(taken)
    }
}

/// Reads `intervals.jsonl` of every directory in `dirs`, aligns the runs by second index,
/// merges counters and histograms exactly, and writes `summary.json` and `intervals.jsonl` to
/// `out` (created when missing). Steps are matched by (scenario, step) name; a step present in
/// only some runs is included. The merged run starts at the earliest start and lasts as long as
/// the longest run. The inputs' own top-level fields of `summary.json` (`interrupted`, `vars`,
/// `generator`, ...) are kept as far as a merge can keep them (`merge_extras.rs`). `out` must
/// not be one of `dirs`. Returns the summary written.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Summary, MergeError> {
    if dirs.is_empty() {
        return Err(MergeError::NoInput);
    }
    refuse_out_among_inputs(dirs, out)?;
    let mut inputs = open_inputs(dirs)?;
    let mut agg = aggregate_of(&inputs);
    let out_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MergeError::Io { path, source }
    };
    fs::create_dir_all(out).map_err(out_err(out))?;
    // The lines go to a scratch file first: the header, written before them, lists every
    // step, and a step may first appear in the last second of the last run.
    let scratch = out.join(format!(".{INTERVALS_FILE}.merging"));
    let merged = File::create(&scratch)
        .map_err(out_err(&scratch))
        .and_then(|f| {
            let mut w = BufWriter::new(f);
            merge_lines(&mut inputs, &mut agg, Some((&mut w, &scratch)))?;
            w.flush().map_err(out_err(&scratch))
        });
    let written = merged.and_then(|()| {
        let merged_from: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let meta = merged_meta(&inputs, Some(merged_from.clone()));
        let records = input_records(dirs, &inputs)?;
        let mut summary = agg.summary(&meta, &merged_extras(&records));
        keep_failure_classes(&records, &mut summary.failure_classes);
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
        merge_events(dirs, out)?;
        Ok(summary)
    });
    let _ = fs::remove_file(&scratch);
    written
}

/// The inputs' `events.jsonl` (pauses, stops, load changes) in one, in time order (the runs
/// are aligned by second, so an event keeps its `t`); with several inputs each says whose it
/// was. No file when no input has one (one `out` had is removed).
fn merge_events(dirs: &[PathBuf], out: &Path) -> Result<(), MergeError> {
    let mut all = Vec::new();
    for dir in dirs {
        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        for mut e in onrush_results::read_events(dir)? {
            // A distributed run's agent applied the controller's change: the controller
            // records it once, itself.
            if e.by == onrush_results::BY_CONTROLLER {
                continue;
            }
            // A ramp's stages are every agent's: once in the merge, below.
            if dirs.len() > 1 && e.kind != "stage" {
                e.by = if e.by.is_empty() {
                    name.clone()
                } else {
                    format!("{} ({name})", e.by)
                };
            }
            all.push(e);
        }
    }
    // What `out` had is replaced (a distributed run's controller adds its own after).
    let mut w = onrush_results::EventsWriter::new(out);
    let path = w.path().to_path_buf();
    let _ = fs::remove_file(&path);
    all.sort_by(|a, b| a.t.total_cmp(&b.t));
    all.dedup_by(|a, b| a.kind == "stage" && a == b);
    for e in &all {
        w.write(e).map_err(|source| MergeError::Io {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The summary of the run in `dir` rebuilt from its `intervals.jsonl` alone, by the pass
/// [`merge`] makes (nothing is written): what `summary.json` would hold, without the fields
/// only the end of a run knows (the generator's verdict, thresholds). For a run that was
/// killed before writing `summary.json`; its duration is then the seconds it wrote, and it is
/// marked `interrupted`.
pub fn rebuild_summary(dir: &Path) -> Result<Summary, MergeError> {
    let dirs = [dir.to_path_buf()];
    let mut inputs = open_inputs(&dirs)?;
    let mut agg = aggregate_of(&inputs);
    merge_lines::<io::Sink>(&mut inputs, &mut agg, None)?;
    let meta = merged_meta(&inputs, None);
    let mut extras = Extras::default();
    if inputs[0].reader.header().unfinished {
        extras.interrupted = Some(true);
    }
    Ok(agg.summary(&meta, &extras))
}

/// Refuses an `out` that is one of `dirs` (the same directory by another name too): merging
/// would write over the very files it reads.
fn refuse_out_among_inputs(dirs: &[PathBuf], out: &Path) -> Result<(), MergeError> {
    let Ok(out_real) = fs::canonicalize(out) else {
        return Ok(()); // does not exist yet: no input is in it
    };
    for dir in dirs {
        if fs::canonicalize(dir).is_ok_and(|d| d == out_real) {
            return Err(MergeError::OutIsInput {
                out: out.to_path_buf(),
                input: dir.clone(),
            });
        }
    }
    Ok(())
}

fn open_inputs(dirs: &[PathBuf]) -> Result<Vec<Input>, MergeError> {
    dirs.iter().map(|d| Input::open(d)).collect()
}

/// An aggregate knowing every scenario, step and check of the inputs' headers, in order.
fn aggregate_of(inputs: &[Input]) -> Aggregate {
    let mut agg = Aggregate::new(&Layout::default());
    for input in inputs {
        for s in &input.reader.header().layout {
            agg.add_layout(&files::scenario_layout(s));
        }
    }
    agg
}

/// The merged run's identity, once every line is read.
fn merged_meta(inputs: &[Input], merged_from: Option<Vec<String>>) -> RunMeta {
    let mut plans: Vec<&str> = Vec::new();
    for i in inputs {
        let plan = i.reader.header().plan.as_str();
        if !plans.contains(&plan) {
            plans.push(plan);
        }
    }
    RunMeta {
        plan: plans.join("+"),
        start_unix_ms: inputs
            .iter()
            .map(|i| i.reader.header().start_unix_ms)
            .min()
            .unwrap_or(0),
        duration_s: Some(inputs.iter().map(Input::duration_s).fold(0.0, f64::max)),
        merged_from,
    }
}

/// Each input's `summary.json` (when it has one) for [`merged_extras`].
fn input_records(dirs: &[PathBuf], inputs: &[Input]) -> Result<Vec<InputRecord>, MergeError> {
    dirs.iter()
        .zip(inputs)
        .map(|(dir, input)| {
            let path = dir.join(SUMMARY_FILE);
            let summary = match onrush_results::read_summary(&path) {
                Ok(s) => Some(s),
                Err(ReadError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                    None
                }
                Err(e) => return Err(e.into()),
            };
            let (extras, failure_classes) = match summary {
                Some(s) => (Some(s.extra), s.failure_classes),
                None => (None, Default::default()),
            };
            Ok(InputRecord {
                dir: dir.display().to_string(),
                extras,
                failure_classes,
                unfinished: input.reader.header().unfinished,
            })
        })
        .collect()
}

/// Merges the inputs second by second, feeding `agg`, and writes the merged lines (without the
/// header) to `out` when given (a writer and the path naming it in errors).
fn merge_lines<W: Write>(
    inputs: &mut [Input],
    agg: &mut Aggregate,
    mut out: Option<(&mut W, &Path)>,
) -> Result<(), MergeError> {
    let writing = out.is_some();
    let mut emit = |line: Line| -> Result<(), MergeError> {
        match &mut out {
            Some((w, path)) => writeln!(w, "{}", line.to_json()).map_err(|source| MergeError::Io {
                path: path.to_path_buf(),
                source,
            }),
            None => Ok(()),
        }
    };
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
                if writing {
                    let sc = &agg.scenarios[si];
                    let names: Vec<(&str, &str)> = sc
                        .checks
                        .iter()
                        .map(|c| (c.step.as_str(), c.name.as_str()))
                        .collect();
                    let l = files::scenario_line(t, &sc.name, d, &names, &mut enc);
                    emit(Line::Scenario(l))?;
                }
                agg.add_scenario(t, si, d);
            }
            while let Some(((_, sti), d)) = steps.next_if(|((s, _), _)| *s == si) {
                if writing {
                    let sc = &agg.scenarios[si];
                    let st = &sc.steps[sti];
                    let l = files::step_line(t, &sc.name, &st.name, &d, &mut enc);
                    emit(if st.kind.is_group() {
                        Line::Group(l)
                    } else {
                        Line::Step(l)
                    })?;
                }
                agg.add_step(t, si, sti, &d);
            }
        }
    }
    Ok(())
}

/// Writes `header` then the lines of `body` to `path`.
fn write_with_header(path: &Path, header: &onrush_results::Header, body: &Path) -> io::Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    writeln!(w, "{}", Line::Header(header.clone()).to_json())?;
    io::copy(&mut BufReader::new(File::open(body)?), &mut w)?;
    w.flush()
}
