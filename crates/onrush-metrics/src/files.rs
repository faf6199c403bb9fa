//! The line format of `intervals.jsonl` and writing the result files.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::failure::FailureClass;
use crate::hist::{decode_hist, Encoder, SIGNIFICANT_DIGITS};
use crate::record::{Layout, ScenarioLayout, StepKind};
use crate::snapshot::{ScenarioInterval, StepCounters, StepInterval};
use crate::summary::Summary;

/// Version of the result-file format (`onrush_results` in the header line).
pub const RESULTS_FORMAT_VERSION: u32 = 1;
/// File name of the per-second data.
pub const INTERVALS_FILE: &str = "intervals.jsonl";
/// File name of the summary.
pub const SUMMARY_FILE: &str = "summary.json";
/// `histograms.encoding` in the header line.
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// One line of `intervals.jsonl`, tagged by `"kind"`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Line {
    Header(Header),
    Step(StepLine),
    /// A group's second: the fields of a step line, about the runs of the group.
    Group(StepLine),
    Scenario(ScenarioLine),
    /// A kind this version does not know (written by a newer one): skipped.
    #[serde(other)]
    Other,
}

/// First line: makes the file self-describing.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Header {
    pub onrush_results: u32,
    pub onrush_version: String,
    pub plan: String,
    pub start_unix_ms: u64,
    pub duration_s: f64,
    pub interval_s: u32,
    pub histograms: HistFormat,
    pub layout: Vec<LayoutScenario>,
    /// Set on a merged file: the directories merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<String>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct HistFormat {
    pub encoding: String,
    pub unit: String,
    pub significant_digits: u8,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct LayoutScenario {
    pub scenario: String,
    /// Every step (metric) name, request steps and groups, in plan order.
    pub steps: Vec<String>,
    /// The names in `steps` that are groups; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The scenario's checks in plan order; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<LayoutCheck>,
}

/// A check in the header's layout.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct LayoutCheck {
    pub step: String,
    pub name: String,
}

impl LayoutScenario {
    pub fn from_layout(s: &ScenarioLayout) -> LayoutScenario {
        LayoutScenario {
            scenario: s.name.clone(),
            steps: s.steps.clone(),
            groups: (0..s.steps.len())
                .filter(|&i| s.is_group(i))
                .map(|i| s.steps[i].clone())
                .collect(),
            checks: s
                .checks
                .iter()
                .map(|(name, step)| LayoutCheck {
                    step: s.steps.get(*step).cloned().unwrap_or_default(),
                    name: name.clone(),
                })
                .collect(),
        }
    }

    /// Back to a [`ScenarioLayout`] (a check on a step not in `steps` is left out).
    pub fn to_layout(&self) -> ScenarioLayout {
        let mut s = ScenarioLayout::new(&self.scenario, &self.steps);
        s.kinds = self
            .steps
            .iter()
            .map(|st| {
                if self.groups.contains(st) {
                    StepKind::Group
                } else {
                    StepKind::Request
                }
            })
            .collect();
        for c in &self.checks {
            if let Some(i) = self.steps.iter().position(|st| *st == c.step) {
                s.add_check(&c.name, i);
            }
        }
        s
    }
}

impl Header {
    pub fn new(
        plan: &str,
        start_unix_ms: u64,
        duration_s: f64,
        layout: &Layout,
        merged_from: Option<Vec<String>>,
    ) -> Header {
        Header {
            onrush_results: RESULTS_FORMAT_VERSION,
            onrush_version: crate::ONRUSH_VERSION.to_string(),
            plan: plan.to_string(),
            start_unix_ms,
            duration_s,
            interval_s: 1,
            histograms: HistFormat {
                encoding: HISTOGRAM_ENCODING.to_string(),
                unit: "us".to_string(),
                significant_digits: SIGNIFICANT_DIGITS,
            },
            layout: layout
                .scenarios
                .iter()
                .map(LayoutScenario::from_layout)
                .collect(),
            merged_from,
        }
    }
}

/// One step's second.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StepLine {
    pub t: u64,
    pub scenario: String,
    pub step: String,
    pub requests: u64,
    pub failures: u64,
    #[serde(default)]
    pub failures_by_class: BTreeMap<String, u64>,
    /// Keys are status codes as strings (a tagged enum cannot read integer keys back).
    #[serde(default)]
    pub status_codes: BTreeMap<String, u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb: Option<String>,
    /// TLS handshakes, full + resumed: written for the report's "TLS handshakes per second"
    /// chart (it sums the integer field `handshakes`); merge recomputes it from the two below.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub handshakes: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub handshakes_full: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub handshakes_resumed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One scenario's second.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ScenarioLine {
    pub t: u64,
    pub scenario: String,
    pub iterations: u64,
    pub dropped_iterations: u64,
    pub connections_opened: u64,
    pub active_vus: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag: Option<String>,
    /// Checks evaluated in that second (only those with a pass or a fail); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckLine>,
}

/// One check's second, in a scenario line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CheckLine {
    pub step: String,
    pub name: String,
    pub passes: u64,
    pub fails: u64,
}

impl StepLine {
    pub fn from_interval(
        t: u64,
        scenario: &str,
        step: &str,
        d: &StepInterval,
        enc: &mut Encoder,
    ) -> StepLine {
        let c = &d.counters;
        StepLine {
            t,
            scenario: scenario.to_string(),
            step: step.to_string(),
            requests: c.requests,
            failures: c.failures,
            failures_by_class: c.failures_by_class_map(),
            status_codes: c
                .status_codes
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
            latency: d.latency.as_ref().map(|h| enc.encode(h)),
            service: d.service.as_ref().map(|h| enc.encode(h)),
            connect: d.connect.as_ref().map(|h| enc.encode(h)),
            ttfb: d.ttfb.as_ref().map(|h| enc.encode(h)),
            handshakes: c.handshakes_full + c.handshakes_resumed,
            handshakes_full: c.handshakes_full,
            handshakes_resumed: c.handshakes_resumed,
            handshake: d.handshake.as_ref().map(|h| enc.encode(h)),
        }
    }

    /// Decodes the histograms; the error names the field.
    pub fn to_interval(&self) -> Result<StepInterval, String> {
        let mut by_class = [0u64; FailureClass::COUNT];
        for (name, &n) in &self.failures_by_class {
            let c: FailureClass = name
                .parse()
                .map_err(|e| format!("failures_by_class: {e}"))?;
            by_class[c.index()] += n;
        }
        let mut status_codes = BTreeMap::new();
        for (code, &n) in &self.status_codes {
            let code: u16 = code
                .parse()
                .map_err(|_| format!("status_codes: {code:?} is not a status code"))?;
            *status_codes.entry(code).or_insert(0) += n;
        }
        let h = |field: &str, v: &Option<String>| {
            v.as_deref()
                .map(decode_hist)
                .transpose()
                .map_err(|e| format!("{field}: {e}"))
        };
        Ok(StepInterval {
            counters: StepCounters {
                requests: self.requests,
                failures: self.failures,
                failures_by_class: by_class,
                status_codes,
                bytes_in: self.bytes_in,
                bytes_out: self.bytes_out,
                handshakes_full: self.handshakes_full,
                handshakes_resumed: self.handshakes_resumed,
            },
            latency: h("latency", &self.latency)?,
            service: h("service", &self.service)?,
            connect: h("connect", &self.connect)?,
            ttfb: h("ttfb", &self.ttfb)?,
            handshake: h("handshake", &self.handshake)?,
        })
    }
}

impl ScenarioLine {
    /// `checks`: (step name, check name) of each entry of `d.checks`.
    pub fn from_interval(
        t: u64,
        scenario: &str,
        d: &ScenarioInterval,
        checks: &[(&str, &str)],
        enc: &mut Encoder,
    ) -> ScenarioLine {
        ScenarioLine {
            t,
            scenario: scenario.to_string(),
            iterations: d.iterations,
            dropped_iterations: d.dropped_iterations,
            connections_opened: d.connections_opened,
            active_vus: d.active_vus,
            schedule_lag: d.schedule_lag.as_ref().map(|h| enc.encode(h)),
            checks: d
                .checks
                .iter()
                .zip(checks)
                .filter(|(c, _)| !c.is_zero())
                .map(|(c, (step, name))| CheckLine {
                    step: step.to_string(),
                    name: name.to_string(),
                    passes: c.passes,
                    fails: c.fails,
                })
                .collect(),
        }
    }

    /// The interval without its checks (the caller places `checks` by name).
    pub fn to_interval(&self) -> Result<ScenarioInterval, String> {
        Ok(ScenarioInterval {
            checks: Vec::new(),
            iterations: self.iterations,
            dropped_iterations: self.dropped_iterations,
            connections_opened: self.connections_opened,
            active_vus: self.active_vus,
            schedule_lag: self
                .schedule_lag
                .as_deref()
                .map(decode_hist)
                .transpose()
                .map_err(|e| format!("schedule_lag: {e}"))?,
        })
    }
}

pub(crate) fn to_json_line(line: &Line) -> String {
    serde_json::to_string(line).expect("interval lines always serialise")
}

/// Writes `summary.json` and `intervals.jsonl` (header, then `lines` as given) into `dir`,
/// creating it when missing.
pub(crate) fn write_dir<'a>(
    dir: &Path,
    header: &Header,
    lines: impl Iterator<Item = &'a str>,
    summary: &Summary,
) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let path = dir.join(INTERVALS_FILE);
    let mut w = BufWriter::new(File::create(&path)?);
    writeln!(w, "{}", to_json_line(&Line::Header(header.clone())))?;
    for l in lines {
        w.write_all(l.as_bytes())?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    summary.write_to(&dir.join(SUMMARY_FILE))
}
