//! `summary.json`: the end-of-run summary, its reading (format version checked) and writing.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{json_msg, ReadError};
use crate::extras::Extras;
pub use crate::hist::MsStats;
use crate::version::{absent_version, RESULTS_FORMAT_VERSION};

/// What a step (metric) measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// One sample per request; counted in the request totals.
    #[default]
    Request,
    /// A group (transaction) of steps: one sample per run of the group, its whole duration.
    /// Counted only in its own step entry, never in the request totals.
    Group,
}

impl StepKind {
    /// `"request"` or `"group"`, as in `summary.json`.
    pub fn as_str(&self) -> &'static str {
        match self {
            StepKind::Request => "request",
            StepKind::Group => "group",
        }
    }

    pub fn is_group(&self) -> bool {
        *self == StepKind::Group
    }
}

/// Everything `summary.json` holds. Serialises to exactly that file; the top-level fields
/// added by the caller (`interrupted`, `vars`, `generator`, `thresholds`, ...) live in
/// `extra`, typed, and are flattened into the top level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Format version ([`RESULTS_FORMAT_VERSION`]); absent in files written before it existed
    /// (read as 1).
    #[serde(default = "absent_version")]
    pub onrush_results: u32,
    pub onrush_version: String,
    pub run: RunSummary,
    pub totals: Totals,
    pub scenarios: Vec<ScenarioSummary>,
    pub steps: Vec<StepSummary>,
    /// One per check of the plan (scenario, step, check name), in plan order; empty without
    /// checks (and in files of older versions).
    #[serde(default)]
    pub checks: Vec<CheckSummary>,
    /// Every failure class counted anywhere in the summary (totals and steps), by name: its
    /// group and hint, as the build that counted it knew them, so that a report made by
    /// another build (one without that class's protocol) still shows them. Absent without
    /// failures, and in files of older versions (a reader then knows only its own classes).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failure_classes: BTreeMap<String, FailureClassInfo>,
    /// Caller-provided top-level fields; keys must not clash with the ones above.
    #[serde(flatten)]
    pub extra: Extras,
}

/// `failure_classes`: what a failure class is, beside its count (which is in
/// `failures_by_class`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureClassInfo {
    /// The family the report shows the class under: `connection`, `TLS`, `HTTP`, ..., or
    /// its protocol (`gRPC`).
    #[serde(default)]
    pub group: String,
    /// The plain-language advice printed for it (empty when the build that wrote the file
    /// did not know it either).
    #[serde(default)]
    pub hint: String,
}

impl FailureClassInfo {
    /// The group of a class that names none: registered without one, or read from a file
    /// that did not say.
    pub const OTHER_GROUP: &'static str = "other";

    /// This, with what it leaves unsaid taken from `known`: an empty hint, and an empty
    /// group or [`FailureClassInfo::OTHER_GROUP`] (which stays when neither says more).
    pub fn or(self, known: FailureClassInfo) -> FailureClassInfo {
        let says = |group: &str| !group.is_empty() && group != Self::OTHER_GROUP;
        let group = if says(&self.group) {
            self.group
        } else if says(&known.group) {
            known.group
        } else {
            Self::OTHER_GROUP.to_string()
        };
        let hint = if self.hint.is_empty() {
            known.hint
        } else {
            self.hint
        };
        FailureClassInfo { group, hint }
    }
}

/// `run`: which run this is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Plan name (file stem); for a merge, the common name, or the names joined by `+`.
    pub plan: String,
    /// Start of second 0, Unix time in ms (for a merge: the earliest start).
    pub start_unix_ms: u64,
    /// Length of the run in seconds (for a merge: the longest run).
    pub duration_s: f64,
    /// Number of 1-second intervals in `intervals.jsonl`.
    pub seconds: u64,
    /// Set by `merge`: the result directories merged, in the order given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<String>>,
}

/// `totals`: the whole run, all scenarios and steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub requests: u64,
    pub failures: u64,
    /// failures / requests (0 when there were no requests).
    pub failure_rate: f64,
    pub iterations: u64,
    pub dropped_iterations: u64,
    pub connections_opened: u64,
    /// requests / duration_s.
    pub rps: f64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub latency_ms: MsStats,
    pub service_ms: MsStats,
    pub connect_ms: MsStats,
    pub ttfb_ms: MsStats,
    pub schedule_lag_ms: MsStats,
    /// Non-zero classes only.
    pub failures_by_class: BTreeMap<String, u64>,
    /// Status code → count ("200": n). Requests without a response are not counted.
    pub status_codes: BTreeMap<u16, u64>,
    /// Highest mean request rate over any full 10-second window (sliding by 1 s).
    pub rate_10s_max: f64,
    /// Lowest mean request rate over any full 10-second window (sliding by 1 s).
    pub rate_10s_min: f64,
    /// Length of the window used for `rate_10s_*`: 10, or the whole run when shorter.
    pub rate_10s_window_s: f64,
    /// True when the run had fewer than 10 full seconds, so `rate_10s_*` are the
    /// mean rate of the whole run.
    pub rate_10s_whole_run: bool,
    /// Highest request count of any full second.
    pub rate_1s_max: f64,
    /// Highest total of active VUs seen at the end of any second.
    pub active_vus_max: u64,
    /// TLS handshakes (all zero without TLS; absent in files of older versions).
    #[serde(default)]
    pub handshakes: HandshakeStats,
    /// Checks of every scenario (all zero without checks; absent in files of older versions).
    #[serde(default)]
    pub checks: CheckStats,
}

/// `checks` of totals and scenarios: how many checks passed and failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckStats {
    pub passes: u64,
    pub fails: u64,
    /// passes / (passes + fails); 0 without checks.
    pub pass_rate: f64,
}

impl CheckStats {
    /// passes + fails.
    pub fn total(&self) -> u64 {
        self.passes + self.fails
    }
}

/// `checks[]`: one check of one step of one scenario over the whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    pub scenario: String,
    /// The step (metric name) the check belongs to.
    pub step: String,
    /// The check's name.
    pub name: String,
    pub passes: u64,
    pub fails: u64,
    /// passes / (passes + fails); 0 when the check never ran.
    pub pass_rate: f64,
}

impl CheckSummary {
    /// passes + fails.
    pub fn total(&self) -> u64 {
        self.passes + self.fails
    }
}

/// `handshakes` of totals, scenarios and steps: the TLS handshakes of the requests that
/// opened a TLS connection.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HandshakeStats {
    /// Full handshakes (certificate sent and verified, key exchange).
    pub full: u64,
    /// Resumed handshakes (session ticket or session ID).
    pub resumed: u64,
    /// Handshake times, full and resumed together.
    pub time_ms: MsStats,
}

impl HandshakeStats {
    /// Full plus resumed.
    pub fn total(&self) -> u64 {
        self.full + self.resumed
    }
}

/// `scenarios[]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    pub name: String,
    pub iterations: u64,
    pub dropped_iterations: u64,
    pub connections_opened: u64,
    pub requests: u64,
    pub failures: u64,
    pub failure_rate: f64,
    pub rps: f64,
    /// Requests per second over its own active time, `active_s` (absent without requests, and
    /// in files of older versions): higher than `rps` when it ran for only part of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps_active: Option<f64>,
    /// Its active time: from the start of the first second in which it had requests to the end
    /// of the last, in whole seconds, at most the run's duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_s: Option<f64>,
    pub active_vus_max: u64,
    pub latency_ms: MsStats,
    pub schedule_lag_ms: MsStats,
    #[serde(default)]
    pub handshakes: HandshakeStats,
    /// The scenario's checks (all zero without checks).
    #[serde(default)]
    pub checks: CheckStats,
}

/// `steps[]`: one per (scenario, step) that exists in the layout: request steps and groups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    pub scenario: String,
    pub name: String,
    /// `request` or `group` (`request` in files of older versions). For a group every figure
    /// is about the runs of the group: `requests` counts them, `latency_ms` is the whole
    /// group's duration, `failures` the runs in which a request failed; groups are not in the
    /// totals of their scenario or of the run.
    #[serde(default)]
    pub kind: StepKind,
    pub requests: u64,
    pub failures: u64,
    pub failure_rate: f64,
    pub rps: f64,
    /// Requests per second over its own active time, `active_s` (absent without requests, and
    /// in files of older versions): higher than `rps` when it ran for only part of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps_active: Option<f64>,
    /// Its active time: from the start of the first second in which it had requests to the end
    /// of the last, in whole seconds, at most the run's duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_s: Option<f64>,
    pub failures_by_class: BTreeMap<String, u64>,
    pub status_codes: BTreeMap<u16, u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub latency_ms: MsStats,
    pub service_ms: MsStats,
    /// Only requests that opened a connection: see `connect_ms.count`.
    pub connect_ms: MsStats,
    pub ttfb_ms: MsStats,
    #[serde(default)]
    pub handshakes: HandshakeStats,
}

/// Top-level keys of [`Summary`] that `extra` must not use.
pub(crate) const RESERVED_KEYS: [&str; 8] = [
    "onrush_results",
    "onrush_version",
    "run",
    "totals",
    "scenarios",
    "steps",
    "checks",
    "failure_classes",
];

/// What is read of `summary.json` before the rest: a file of another format version may
/// differ anywhere else.
#[derive(Deserialize)]
struct Probe {
    #[serde(default = "absent_version")]
    onrush_results: u32,
}

impl Summary {
    /// Sets a caller-defined top-level field. Reserved keys (`run`, `totals`, ...) are ignored;
    /// a known key (see [`Extras`]) is stored typed when its value has that key's type.
    pub fn set_extra(&mut self, key: impl Into<String>, value: Value) {
        self.extra.set(key.into(), value);
    }

    /// Top-level `"interrupted": bool`: the run was stopped early (Ctrl-C).
    pub fn set_interrupted(&mut self, interrupted: bool) {
        self.extra.interrupted = Some(interrupted);
    }

    /// Top-level `"vars": {name: value}`: the plan variables in force.
    pub fn set_vars(&mut self, vars: &BTreeMap<String, String>) {
        self.extra.vars = Some(vars.clone());
    }

    /// The request steps (groups left out).
    pub fn request_steps(&self) -> impl Iterator<Item = &StepSummary> {
        self.steps.iter().filter(|s| !s.kind.is_group())
    }

    /// The groups (transactions).
    pub fn groups(&self) -> impl Iterator<Item = &StepSummary> {
        self.steps.iter().filter(|s| s.kind.is_group())
    }

    /// `"interrupted"` as set, false when absent.
    pub fn interrupted(&self) -> bool {
        self.extra.interrupted.unwrap_or(false)
    }

    /// Pretty JSON, as written to `summary.json`.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a summary always serialises")
    }

    /// Writes `summary.json`-style JSON to `path`, whole or not at all: the text goes to a
    /// file beside it that is then renamed, so a process killed while writing (a second
    /// Ctrl-C) never leaves a half-written summary that readers would refuse.
    pub fn write_to(&self, path: &Path) -> io::Result<()> {
        let mut text = self.to_json_pretty();
        text.push('\n');
        crate::write_atomically(path, text.as_bytes())
    }

    /// Reads a `summary.json` (see [`read_summary`]); errors are `InvalidData` naming the file.
    pub fn read_from(path: &Path) -> io::Result<Summary> {
        read_summary(path).map_err(|e| match e {
            ReadError::Io { source, .. } => source,
            e => io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
        })
    }

    /// Parses the text of a `summary.json`; `path` names it in errors.
    pub fn from_json(path: &Path, text: &str) -> Result<Summary, ReadError> {
        let invalid = |e: serde_json::Error| {
            ReadError::parse(
                path,
                e.line().max(1),
                format!("invalid summary.json: {}", json_msg(&e)),
            )
        };
        let probe: Probe = serde_json::from_str(text).map_err(invalid)?;
        if probe.onrush_results != RESULTS_FORMAT_VERSION {
            return Err(ReadError::Version {
                path: path.to_path_buf(),
                line: None,
                found: probe.onrush_results,
                supported: RESULTS_FORMAT_VERSION,
            });
        }
        serde_json::from_str(text).map_err(invalid)
    }
}

/// Reads `path` (a `summary.json`), checking its format version first.
pub fn read_summary(path: &Path) -> Result<Summary, ReadError> {
    let text = fs::read_to_string(path).map_err(|e| ReadError::io(path, e))?;
    Summary::from_json(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TODAY: &str = r#"{
  "onrush_version": "0.1.0",
  "run": {
    "plan": "demo",
    "start_unix_ms": 1767225600000,
    "duration_s": 0.0,
    "seconds": 0
  },
  "totals": {
    "requests": 0, "failures": 0, "failure_rate": 0.0, "iterations": 0,
    "dropped_iterations": 0, "connections_opened": 0, "rps": 0.0, "bytes_in": 0,
    "bytes_out": 0, "latency_ms": {"count": 0, "min": 0.0, "mean": 0.0, "stdev": 0.0,
    "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0},
    "service_ms": {"count": 0, "min": 0.0, "mean": 0.0, "stdev": 0.0, "p50": 0.0, "p90": 0.0,
    "p95": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0},
    "connect_ms": {"count": 0, "min": 0.0, "mean": 0.0, "stdev": 0.0, "p50": 0.0, "p90": 0.0,
    "p95": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0},
    "ttfb_ms": {"count": 0, "min": 0.0, "mean": 0.0, "stdev": 0.0, "p50": 0.0, "p90": 0.0,
    "p95": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0},
    "schedule_lag_ms": {"count": 0, "min": 0.0, "mean": 0.0, "stdev": 0.0, "p50": 0.0,
    "p90": 0.0, "p95": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0},
    "failures_by_class": {}, "status_codes": {}, "rate_10s_max": 0.0, "rate_10s_min": 0.0,
    "rate_10s_window_s": 0.0, "rate_10s_whole_run": true, "rate_1s_max": 0.0,
    "active_vus_max": 0
  },
  "scenarios": [],
  "steps": [],
  "interrupted": true,
  "threads": 2
}"#;

    #[test]
    fn a_file_without_a_version_is_version_1_and_the_field_is_written_from_now_on() {
        let s = Summary::from_json(Path::new("d/summary.json"), TODAY).unwrap();
        assert_eq!(s.onrush_results, 1);
        assert!(s.interrupted());
        assert_eq!(s.extra.threads, Some(2));
        let text = s.to_json_pretty();
        assert!(text.starts_with("{\n  \"onrush_results\": 1,\n  \"onrush_version\": \"0.1.0\""));
        // The caller's fields come last, in alphabetical order, as before.
        assert!(text.ends_with("  \"checks\": [],\n  \"interrupted\": true,\n  \"threads\": 2\n}"));
        assert_eq!(Summary::from_json(Path::new("x"), &text).unwrap(), s);
    }

    #[test]
    fn failure_classes_round_trip_and_older_files_load_without_them() {
        let older = Summary::from_json(Path::new("d/summary.json"), TODAY).unwrap();
        assert!(older.failure_classes.is_empty());
        assert!(!older.to_json_pretty().contains("failure_classes"));

        let mut s = older.clone();
        s.failure_classes.insert(
            "unavailable".into(),
            FailureClassInfo {
                group: "gRPC".into(),
                hint: "the service is unavailable (UNAVAILABLE)".into(),
            },
        );
        let text = s.to_json_pretty();
        assert!(
            text.contains(
                "  \"failure_classes\": {\n    \"unavailable\": {\n      \"group\": \"gRPC\",\n      \
                 \"hint\": \"the service is unavailable (UNAVAILABLE)\"\n    }\n  },\n  \
                 \"interrupted\": true"
            ),
            "{text}"
        );
        assert_eq!(Summary::from_json(Path::new("x"), &text).unwrap(), s);
        // Not one of the caller's fields.
        s.set_extra("failure_classes", serde_json::json!({}));
        assert_eq!(
            Summary::from_json(Path::new("x"), &s.to_json_pretty())
                .unwrap()
                .failure_classes
                .len(),
            1
        );

        // An entry written without a group (or a hint) loads; `or` fills what it leaves unsaid.
        let bare = TODAY.replacen(
            "\"interrupted\"",
            "\"failure_classes\": {\"x_fail\": {\"hint\": \"h\"}, \"y_fail\": {}},\n  \"interrupted\"",
            1,
        );
        let s = Summary::from_json(Path::new("x"), &bare).unwrap();
        let x = s.failure_classes["x_fail"].clone();
        assert_eq!((x.group.as_str(), x.hint.as_str()), ("", "h"));
        let known = |group: &str, hint: &str| FailureClassInfo {
            group: group.into(),
            hint: hint.into(),
        };
        assert_eq!(x.clone().or(known("Redis", "k")), known("Redis", "h"));
        assert_eq!(x.or(FailureClassInfo::default()), known("other", "h"));
        assert_eq!(
            known("other", "").or(known("gRPC", "k")),
            known("gRPC", "k"),
            "`other` says nothing"
        );
        assert_eq!(known("TLS", "t").or(known("gRPC", "k")), known("TLS", "t"));
        assert_eq!(s.failure_classes["y_fail"], FailureClassInfo::default());
    }

    #[test]
    fn another_version_is_refused_naming_the_file() {
        let newer = TODAY.replacen('{', "{\"onrush_results\": 2, \"run\": \"changed\",", 1);
        let e = Summary::from_json(Path::new("d/summary.json"), &newer).unwrap_err();
        assert_eq!(e.line(), None);
        assert!(
            e.to_string().starts_with(
                "d/summary.json: results format 2 is newer than this onrush reads (1): the file \
                 was written by a newer onrush; upgrade onrush"
            ),
            "{e}"
        );
        let e = Summary::read_from(Path::new("/nonexistent/summary.json")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let bad = TODAY.replacen("\"seconds\": 0", "\"seconds\": \"0\"", 1);
        let e = Summary::from_json(Path::new("d/summary.json"), &bad).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("d/summary.json:7: invalid summary.json: invalid type: string"),
            "{e}"
        );
    }
}
