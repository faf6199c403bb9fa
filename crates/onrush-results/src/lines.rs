//! The typed lines of `intervals.jsonl`: the header, then per second a `scenario` line per
//! scenario, a `step` line per step with requests and a `group` line per group that ran.
//!
//! Writing is serde's (the field order below is the file's). Reading is one hand-written pass
//! over each line (`de.rs`): unknown fields are ignored, except whole numbers, which are kept
//! in `other_counters` so that a counter added by a newer writer still reaches the report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::version::{absent_version, RESULTS_FORMAT_VERSION};

/// `histograms.encoding` in the header line.
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// One line of `intervals.jsonl`, tagged by `"kind"`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    /// Line 1, and only there.
    Header(Header),
    /// A request step's second.
    Step(StepLine),
    /// A group's second: the fields of a step line, about the runs of the group.
    Group(StepLine),
    /// A scenario's second.
    Scenario(ScenarioLine),
    /// A kind this version does not know (written by a newer one). Readers skip it; it is
    /// never written.
    #[serde(skip)]
    Other(String),
}

/// First line: makes the file self-describing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version ([`RESULTS_FORMAT_VERSION`]); absent in no file written so far, read as 1.
    #[serde(default = "absent_version")]
    pub onrush_results: u32,
    #[serde(default)]
    pub onrush_version: String,
    #[serde(default)]
    pub plan: String,
    #[serde(default)]
    pub start_unix_ms: u64,
    #[serde(default)]
    pub duration_s: f64,
    #[serde(default = "one")]
    pub interval_s: u32,
    #[serde(default)]
    pub histograms: HistFormat,
    #[serde(default)]
    pub layout: Vec<LayoutScenario>,
    /// Set on a merged file: the directories merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<String>>,
    /// The run was still going when this header was written: `onrush run` writes the file as
    /// the run goes and replaces the header (with the measured `duration_s`, without this
    /// field) at the end. Still set afterwards: the run was killed, or is still running, and
    /// `duration_s` is 0 (readers use the seconds in the file instead). Absent when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unfinished: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn one() -> u32 {
    1
}

impl Header {
    /// The header this onrush writes.
    pub fn new(
        plan: &str,
        start_unix_ms: u64,
        duration_s: f64,
        layout: Vec<LayoutScenario>,
        merged_from: Option<Vec<String>>,
    ) -> Header {
        Header {
            onrush_results: RESULTS_FORMAT_VERSION,
            onrush_version: crate::ONRUSH_VERSION.to_string(),
            plan: plan.to_string(),
            start_unix_ms,
            duration_s,
            interval_s: 1,
            histograms: HistFormat::default(),
            layout,
            merged_from,
            unfinished: false,
        }
    }
}

/// `histograms` of the header: how the histogram fields are encoded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistFormat {
    pub encoding: String,
    pub unit: String,
    pub significant_digits: u8,
}

impl Default for HistFormat {
    /// onrush's: HdrHistogram V2 deflate in base64, microseconds, 3 significant digits.
    fn default() -> Self {
        HistFormat {
            encoding: HISTOGRAM_ENCODING.to_string(),
            unit: "us".to_string(),
            significant_digits: crate::hist::SIGNIFICANT_DIGITS,
        }
    }
}

/// A scenario in the header's layout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutScenario {
    pub scenario: String,
    /// Every step (metric) name, request steps and groups, in plan order.
    #[serde(default)]
    pub steps: Vec<String>,
    /// The names in `steps` that are groups; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The scenario's checks in plan order; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<LayoutCheck>,
}

impl LayoutScenario {
    /// The request steps (groups left out), in plan order.
    pub fn request_steps(&self) -> impl Iterator<Item = &str> {
        self.steps
            .iter()
            .filter(|s| !self.groups.contains(s))
            .map(String::as_str)
    }
}

/// A check in the header's layout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutCheck {
    pub step: String,
    pub name: String,
}

/// One step's (or group's) second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepLine {
    pub t: u64,
    pub scenario: String,
    pub step: String,
    pub requests: u64,
    pub failures: u64,
    /// Failure class → count, non-zero classes only.
    pub failures_by_class: BTreeMap<String, u64>,
    /// Keys are status codes as strings (as JSON object keys are).
    pub status_codes: BTreeMap<String, u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttfb: Option<String>,
    /// TLS handshakes, full + resumed: written for the report's "TLS handshakes per second"
    /// chart (it sums the integer field `handshakes`); merge recomputes it from the two below.
    #[serde(skip_serializing_if = "is_zero")]
    pub handshakes: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub handshakes_full: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub handshakes_resumed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshake: Option<String>,
    /// Whole-number fields this version does not know, as read (never written).
    #[serde(skip)]
    pub other_counters: Vec<(String, u64)>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl StepLine {
    /// The line's counters as written: `requests`, `failures`, `bytes_in`, `bytes_out`, the
    /// handshake counts when not 0 (they are left out when 0), then unknown whole-number
    /// fields. For readers that sum every counter per second (the report).
    pub fn counters(&self) -> impl Iterator<Item = (&str, u64)> {
        let always = [
            ("requests", self.requests),
            ("failures", self.failures),
            ("bytes_in", self.bytes_in),
            ("bytes_out", self.bytes_out),
        ];
        let when_set = [
            ("handshakes", self.handshakes),
            ("handshakes_full", self.handshakes_full),
            ("handshakes_resumed", self.handshakes_resumed),
        ];
        always
            .into_iter()
            .chain(when_set.into_iter().filter(|(_, n)| *n != 0))
            .chain(self.other_counters.iter().map(|(k, n)| (k.as_str(), *n)))
    }

    /// The histogram fields by name: `latency`, `service`, `connect`, `ttfb`, `handshake`.
    pub fn histograms(&self) -> [(&'static str, Option<&str>); 5] {
        [
            ("latency", self.latency.as_deref()),
            ("service", self.service.as_deref()),
            ("connect", self.connect.as_deref()),
            ("ttfb", self.ttfb.as_deref()),
            ("handshake", self.handshake.as_deref()),
        ]
    }
}

/// One scenario's second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ScenarioLine {
    pub t: u64,
    pub scenario: String,
    pub iterations: u64,
    pub dropped_iterations: u64,
    pub connections_opened: u64,
    pub active_vus: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_lag: Option<String>,
    /// Checks evaluated in that second (only those with a pass or a fail); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckLine>,
    /// Whole-number fields this version does not know, as read (never written).
    #[serde(skip)]
    pub other_counters: Vec<(String, u64)>,
}

impl ScenarioLine {
    /// The line's counters as written (`iterations`, `dropped_iterations`,
    /// `connections_opened`, `active_vus`), then unknown whole-number fields.
    pub fn counters(&self) -> impl Iterator<Item = (&str, u64)> {
        [
            ("iterations", self.iterations),
            ("dropped_iterations", self.dropped_iterations),
            ("connections_opened", self.connections_opened),
            ("active_vus", self.active_vus),
        ]
        .into_iter()
        .chain(self.other_counters.iter().map(|(k, n)| (k.as_str(), *n)))
    }
}

/// One check's second, in a scenario line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckLine {
    pub step: String,
    pub name: String,
    pub passes: u64,
    pub fails: u64,
}

impl Line {
    /// The line as written to `intervals.jsonl` (without the line break).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("interval lines always serialise")
    }

    /// The second of a step, group or scenario line.
    pub fn t(&self) -> Option<u64> {
        match self {
            Line::Step(l) | Line::Group(l) => Some(l.t),
            Line::Scenario(l) => Some(l.t),
            Line::Header(_) | Line::Other(_) => None,
        }
    }
}
