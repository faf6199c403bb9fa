//! The end-of-run summary: the content of `summary.json`.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::hist::MsStats;
use crate::record::StepKind;

/// Everything `summary.json` holds. Serialises to exactly that file; extra top-level fields
/// set by the caller (plan vars, `interrupted`, ...) live in `extra` and are flattened into the
/// top level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub onrush_version: String,
    pub run: RunSummary,
    pub totals: Totals,
    pub scenarios: Vec<ScenarioSummary>,
    pub steps: Vec<StepSummary>,
    /// One per check of the plan (scenario, step, check name), in plan order; empty without
    /// checks (and in files of older versions).
    #[serde(default)]
    pub checks: Vec<CheckSummary>,
    /// Caller-provided top-level fields; keys must not clash with the ones above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
pub(crate) const RESERVED_KEYS: [&str; 6] = [
    "onrush_version",
    "run",
    "totals",
    "scenarios",
    "steps",
    "checks",
];

impl Summary {
    /// Sets a caller-defined top-level field. Reserved keys (`run`, `totals`, ...) are ignored.
    pub fn set_extra(&mut self, key: impl Into<String>, value: Value) {
        set_extra(&mut self.extra, key.into(), value);
    }

    /// Top-level `"interrupted": bool`: the run was stopped early (Ctrl-C).
    pub fn set_interrupted(&mut self, interrupted: bool) {
        self.set_extra("interrupted", Value::Bool(interrupted));
    }

    /// Top-level `"vars": {name: value}`: the plan variables in force.
    pub fn set_vars(&mut self, vars: &BTreeMap<String, String>) {
        self.set_extra("vars", vars_value(vars));
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
        self.extra
            .get("interrupted")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Pretty JSON, as written to `summary.json`.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a summary always serialises")
    }

    /// Writes `summary.json`-style JSON to `path`.
    pub fn write_to(&self, path: &Path) -> io::Result<()> {
        let mut text = self.to_json_pretty();
        text.push('\n');
        fs::write(path, text)
    }

    /// Reads a `summary.json`.
    pub fn read_from(path: &Path) -> io::Result<Summary> {
        let text = fs::read_to_string(path)?;
        serde_json::from_str(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })
    }
}

pub(crate) fn set_extra(map: &mut Map<String, Value>, key: String, value: Value) {
    if !RESERVED_KEYS.contains(&key.as_str()) {
        map.insert(key, value);
    }
}

pub(crate) fn vars_value(vars: &BTreeMap<String, String>) -> Value {
    Value::Object(
        vars.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}
