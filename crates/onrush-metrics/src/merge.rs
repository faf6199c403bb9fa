//! Merging the results of several runs (e.g. one per load-generator machine).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Map;

use crate::aggregate::{Aggregate, RunMeta};
use crate::files::{
    self, Header, Line, ScenarioLine, StepLine, INTERVALS_FILE, RESULTS_FORMAT_VERSION,
};
use crate::hist::Encoder;
use crate::record::{Layout, StepKind};
use crate::snapshot::{CheckCounts, ScenarioInterval, StepInterval};
use crate::summary::Summary;

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

/// Where a line came from, for error messages.
struct Src {
    file: usize,
    line: usize,
}

/// One results directory read back.
struct Run {
    pub path: PathBuf,
    pub header: Header,
}

/// Lines of all runs grouped by second, in reading order.
#[derive(Default)]
struct BySecond {
    /// Step and group lines (`true`: a group).
    steps: Vec<(Src, StepLine, bool)>,
    scenarios: Vec<(Src, ScenarioLine)>,
}

fn read_run(
    file_idx: usize,
    path: &Path,
    seconds: &mut BTreeMap<u64, BySecond>,
) -> Result<Run, MergeError> {
    let io_err = |e| MergeError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let reader = BufReader::new(File::open(path).map_err(io_err)?);
    let mut header = None;
    for (i, text) in reader.lines().enumerate() {
        let n = i + 1;
        let text = text.map_err(io_err)?;
        if text.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(&text).map_err(|e| {
            let msg = if header.is_none() {
                format!("not an onrush intervals file (the first line must be the header): {e}")
            } else {
                e.to_string()
            };
            MergeError::parse(path, n, msg)
        })?;
        let src = Src {
            file: file_idx,
            line: n,
        };
        match (line, &header) {
            (Line::Header(h), None) => {
                if h.onrush_results > RESULTS_FORMAT_VERSION {
                    return Err(MergeError::parse(
                        path,
                        n,
                        format!(
                            "results format {} is newer than this onrush reads ({})",
                            h.onrush_results, RESULTS_FORMAT_VERSION
                        ),
                    ));
                }
                header = Some(h);
            }
            (Line::Header(_), Some(_)) => {
                return Err(MergeError::parse(path, n, "a second header line"));
            }
            (_, None) => {
                return Err(MergeError::parse(
                    path,
                    n,
                    "not an onrush intervals file: the first line must be the header",
                ));
            }
            (Line::Step(l), Some(_)) => seconds.entry(l.t).or_default().steps.push((src, l, false)),
            (Line::Group(l), Some(_)) => seconds.entry(l.t).or_default().steps.push((src, l, true)),
            (Line::Other, Some(_)) => {}
            (Line::Scenario(l), Some(_)) => {
                seconds.entry(l.t).or_default().scenarios.push((src, l))
            }
        }
    }
    let header = header.ok_or_else(|| MergeError::parse(path, 1, "empty file: no header line"))?;
    Ok(Run {
        path: path.to_path_buf(),
        header,
    })
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
    let mut seconds: BTreeMap<u64, BySecond> = BTreeMap::new();
    let mut runs = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        runs.push(read_run(i, &dir.join(INTERVALS_FILE), &mut seconds)?);
    }

    let mut agg = Aggregate::new(&Layout::default());
    for r in &runs {
        for s in &r.header.layout {
            agg.add_layout(&s.to_layout());
        }
    }

    let mut enc = Encoder::new();
    let mut lines = Vec::new();
    for (t, group) in seconds {
        let mut scen: Vec<(usize, ScenarioInterval)> = Vec::new();
        for (src, l) in &group.scenarios {
            let d = l
                .to_interval()
                .map_err(|m| MergeError::parse(&runs[src.file].path, src.line, m))?;
            let si = agg.scenario_index(&l.scenario);
            let mut d = d;
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
        let mut steps: Vec<((usize, usize), StepInterval)> = Vec::new();
        for (src, l, is_group) in &group.steps {
            let d = l
                .to_interval()
                .map_err(|m| MergeError::parse(&runs[src.file].path, src.line, m))?;
            let si = agg.scenario_index(&l.scenario);
            let kind = if *is_group {
                StepKind::Group
            } else {
                StepKind::Request
            };
            let key = (si, agg.step_index_kind(si, &l.step, kind));
            match steps.iter_mut().find(|(k, _)| *k == key) {
                Some((_, acc)) => acc.merge(d),
                None => steps.push((key, d)),
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
                let l = ScenarioLine::from_interval(t, &sc.name, d, &names, &mut enc);
                lines.push(files::to_json_line(&Line::Scenario(l)));
                agg.add_scenario(t, si, d);
            }
            while let Some(((_, sti), d)) = steps.next_if(|((s, _), _)| *s == si) {
                let sc = &agg.scenarios[si];
                let st = &sc.steps[sti];
                let l = StepLine::from_interval(t, &sc.name, &st.name, &d, &mut enc);
                lines.push(files::to_json_line(&if st.kind.is_group() {
                    Line::Group(l)
                } else {
                    Line::Step(l)
                }));
                agg.add_step(t, si, sti, &d);
            }
        }
    }

    let mut plans: Vec<&str> = Vec::new();
    for r in &runs {
        if !plans.contains(&r.header.plan.as_str()) {
            plans.push(&r.header.plan);
        }
    }
    let merged_from: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let meta = RunMeta {
        plan: plans.join("+"),
        start_unix_ms: runs
            .iter()
            .map(|r| r.header.start_unix_ms)
            .min()
            .unwrap_or(0),
        duration_s: Some(runs.iter().map(|r| r.header.duration_s).fold(0.0, f64::max)),
        merged_from: Some(merged_from.clone()),
    };
    let summary = agg.summary(&meta, &Map::new());
    let header = Header::new(
        &meta.plan,
        meta.start_unix_ms,
        summary.run.duration_s,
        &agg.layout(),
        Some(merged_from),
    );
    files::write_dir(out, &header, lines.iter().map(String::as_str), &summary).map_err(|e| {
        MergeError::Io {
            path: out.to_path_buf(),
            source: e,
        }
    })?;
    Ok(summary)
}
