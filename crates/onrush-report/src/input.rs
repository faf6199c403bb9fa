//! Loading a results directory: `summary.json` (typed, plus the optional top-level keys other
//! parts of onrush add: thresholds, generator health, machine, load models) and the series of
//! `intervals.jsonl`.

use std::path::{Path, PathBuf};

use onrush_metrics::{Summary, INTERVALS_FILE, SUMMARY_FILE};
use onrush_results::ThresholdOutcome;
use serde_json::{Map, Value};

use crate::intervals::{self, Series, StepId};
use crate::ReportError;

/// One run, as the report needs it.
pub(crate) struct Run {
    pub dir: PathBuf,
    pub summary: Summary,
    /// There was no `summary.json` (the run was killed): `summary` is rebuilt from
    /// `intervals.jsonl`.
    pub rebuilt: bool,
    pub extras: Extras,
    pub series: Series,
    /// The agents of a distributed run (none otherwise).
    pub agents: Vec<crate::agents::Agent>,
    /// `events.jsonl`: pauses, stops and load changes asked while the run ran.
    pub events: Vec<onrush_results::Event>,
    /// Rendered as the live page of a run still going (see `ReportOptions::live`).
    pub live: bool,
}

impl Run {
    /// Forgets where the run was made (see `ReportOptions::show_host`): directories and the
    /// plan by their last component, no hostname.
    pub(crate) fn hide_host(&mut self) {
        self.dir = PathBuf::from(last_component(&self.dir.to_string_lossy()));
        // The plan as it was given: a relative path says nothing of the machine, an absolute
        // one (`/home/alice/...`) does. (A plan's name need not be a path at all.)
        let plan = &mut self.summary.run.plan;
        if is_absolute(plan) {
            *plan = last_component(plan);
        }
        if let Some(dirs) = &mut self.summary.run.merged_from {
            for d in dirs.iter_mut() {
                *d = last_component(d);
            }
        }
        self.extras.machine.retain(|(k, _)| k != "hostname");
    }
}

/// `/...`, `~/...`, `C:\...`, `\\server\...`.
fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with('/')
        || path.starts_with('~')
        || path.starts_with("\\\\")
        || (b.len() > 2
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'/' | b'\\'))
}

/// "/home/alice/results/shop-1" -> "shop-1"; a name without a directory stays as it is.
fn last_component(path: &str) -> String {
    let trimmed = path.trim_end_matches(['/', '\\']);
    match trimmed.rsplit(['/', '\\']).next() {
        Some(last) if !last.is_empty() => last.to_string(),
        _ => path.to_string(),
    }
}

/// One of `generator.causes[]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Cause {
    pub cause: String,
    pub detail: String,
    pub fix: String,
    pub first_s: Option<f64>,
}

/// `generator`: did the load generator keep up?
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Generator {
    pub verdict: String,
    pub message: String,
    pub saturated_from_s: Option<f64>,
    pub causes: Vec<Cause>,
    /// The run's peaks (`cpu_percent_max`, ...) as (label, text).
    pub peaks: Vec<(String, String)>,
}

impl Generator {
    pub fn healthy(&self) -> bool {
        self.verdict.eq_ignore_ascii_case("healthy")
    }
}

/// Peaks of `generator` shown in the report: (key, label, unit).
const PEAKS: [(&str, &str, &str); 6] = [
    ("cpu_percent_max", "CPU", "%"),
    ("worker_cpu_percent_max", "busiest worker CPU", "%"),
    ("rss_mb_max", "memory", " MB"),
    ("schedule_lag_p99_ms_max", "schedule lag p99", " ms"),
    ("open_fds_max", "open files", ""),
    ("sockets_to_targets_max", "sockets to the target", ""),
];

/// A number with at most one decimal, without a trailing ".0".
fn trim_num(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// The optional top-level keys of `summary.json`, read leniently: a key of an unexpected
/// type is shown as text or left out, never an error.
#[derive(Clone, Debug, Default)]
pub(crate) struct Extras {
    /// `None`: no `thresholds` key (or not an array). As onrush-results reads them, whatever
    /// version wrote them (`measured_text` is what the report shows).
    pub thresholds: Option<Vec<ThresholdOutcome>>,
    pub generator: Option<Generator>,
    /// `machine` as (key, value) text pairs, hostname / cpus / os first.
    pub machine: Vec<(String, String)>,
    /// `load[]` as (scenario, model, with `connections` when given).
    pub load: Vec<(String, String)>,
    /// `threads`: worker threads of the generator.
    pub threads: Option<u64>,
    pub interrupted: bool,
    pub vars: Vec<(String, String)>,
}

/// A JSON value as display text: strings without quotes, `null` as empty.
pub(crate) fn text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

fn pairs(map: &Map<String, Value>, first: &[&str]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = first
        .iter()
        .filter_map(|k| map.get(*k).map(|v| (k.to_string(), text(Some(v)))))
        .collect();
    for (k, v) in map {
        if !first.contains(&k.as_str()) {
            out.push((k.clone(), text(Some(v))));
        }
    }
    out
}

impl Extras {
    pub fn from_summary(typed: &onrush_results::Extras) -> Extras {
        let thresholds = typed.threshold_outcomes();
        // The rest is read from JSON: the report also shows files of older versions, whose
        // fields may not have today's types (onrush-results keeps those untyped).
        let extra = &typed.to_map();
        let generator = extra
            .get("generator")
            .filter(|g| g.is_object())
            .map(|g| Generator {
                verdict: text(g.get("verdict")),
                message: text(g.get("message")),
                saturated_from_s: g.get("saturated_from_s").and_then(Value::as_f64),
                causes: g
                    .get("causes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|c| Cause {
                        cause: text(c.get("cause")),
                        detail: text(c.get("detail")),
                        fix: text(c.get("fix")),
                        first_s: c.get("first_s").and_then(Value::as_f64),
                    })
                    .collect(),
                peaks: PEAKS
                    .iter()
                    .filter_map(|(k, label, unit)| {
                        let v = g.get(*k)?.as_f64()?;
                        Some((label.to_string(), format!("{}{unit}", trim_num(v))))
                    })
                    .collect(),
            });
        let machine = match extra.get("machine") {
            Some(Value::Object(m)) => pairs(m, &["hostname", "cpus", "os"]),
            _ => Vec::new(),
        };
        let load = extra
            .get("load")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|l| {
                let mut model = text(l.get("model"));
                if let Some(c) = l.get("connections").filter(|c| !c.is_null()) {
                    model = format!("{model} · connections: {}", text(Some(c)));
                }
                (text(l.get("scenario")), model)
            })
            .collect();
        let vars = match extra.get("vars") {
            Some(Value::Object(m)) => pairs(m, &[]),
            _ => Vec::new(),
        };
        Extras {
            thresholds,
            generator,
            machine,
            load,
            threads: extra.get("threads").and_then(Value::as_u64),
            interrupted: extra.get("interrupted").and_then(Value::as_bool) == Some(true),
            vars,
        }
    }

    /// Thresholds failed, of those defined (`None`: none defined).
    pub fn failed_thresholds(&self) -> Option<(usize, usize)> {
        let t = self.thresholds.as_ref().filter(|t| !t.is_empty())?;
        Some((t.iter().filter(|t| !t.passed).count(), t.len()))
    }
}

pub(crate) fn read_summary(path: &Path) -> Result<Summary, ReportError> {
    onrush_results::read_summary(path).map_err(|e| match e {
        onrush_results::ReadError::Io { path, source } => ReportError::io(&path, source),
        e => match e.line() {
            Some(line) => ReportError::parse(e.path(), line, e.message()),
            None => ReportError::Read {
                path: e.path().to_path_buf(),
                msg: e.message(),
            },
        },
    })
}

/// The summary of a run that wrote no `summary.json` (it was killed), rebuilt from its
/// `intervals.jsonl` by onrush-metrics (the code `onrush merge` uses).
fn rebuild_summary(dir: &Path) -> Result<Summary, ReportError> {
    onrush_metrics::rebuild_summary(dir).map_err(|e| match e {
        onrush_metrics::MergeError::Io { path, source } => ReportError::io(&path, source),
        onrush_metrics::MergeError::Parse { path, line, msg } => {
            ReportError::parse(&path, line, msg)
        }
        e => ReportError::Read {
            path: dir.join(INTERVALS_FILE),
            msg: e.to_string(),
        },
    })
}

/// Reads `dir/summary.json` and `dir/intervals.jsonl`; without `summary.json` (a run that was
/// killed), the summary is rebuilt from `intervals.jsonl`.
pub(crate) fn load(dir: &Path) -> Result<Run, ReportError> {
    if !dir.is_dir() {
        return Err(ReportError::NoDir {
            path: dir.to_path_buf(),
        });
    }
    let summary_path = dir.join(SUMMARY_FILE);
    let rebuilt = !summary_path.exists() && dir.join(INTERVALS_FILE).is_file();
    let summary = if rebuilt {
        rebuild_summary(dir)?
    } else {
        read_summary(&summary_path)?
    };
    // Groups have no per-second series (their `group` lines are not request data).
    let known: Vec<StepId> = summary
        .request_steps()
        .map(|s| StepId {
            scenario: s.scenario.clone(),
            name: s.name.clone(),
        })
        .collect();
    let series = intervals::read(&dir.join(INTERVALS_FILE), &known)?;
    Ok(Run {
        dir: dir.to_path_buf(),
        rebuilt,
        extras: Extras::from_summary(&summary.extra),
        agents: crate::agents::load(dir, &summary.extra)?,
        events: onrush_results::read_events(dir)
            .map_err(|e| ReportError::parse(e.path(), e.line().unwrap_or(1), e.message()))?,
        live: false,
        summary,
        series,
    })
}
