//! Reading one line of `intervals.jsonl` in one pass: the keys may come in any order (`kind`
//! need not be first), so every known field is collected, then the line is built by its kind.
//! Cheaper than serde's internally tagged enums, which buffer the whole line first.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::lines::{CheckLine, Header, HistFormat, LayoutScenario, Line, ScenarioLine, StepLine};

/// Every field a line may have, whatever its kind.
#[derive(Default)]
struct Fields {
    kind: Option<String>,
    t: Option<u64>,
    scenario: Option<String>,
    step: Option<String>,
    // step and group lines
    requests: Option<u64>,
    failures: Option<u64>,
    failures_by_class: BTreeMap<String, u64>,
    status_codes: BTreeMap<String, u64>,
    bytes_in: Option<u64>,
    bytes_out: Option<u64>,
    latency: Option<String>,
    service: Option<String>,
    connect: Option<String>,
    ttfb: Option<String>,
    handshakes: Option<u64>,
    handshakes_full: Option<u64>,
    handshakes_resumed: Option<u64>,
    handshake: Option<String>,
    // scenario lines
    iterations: Option<u64>,
    dropped_iterations: Option<u64>,
    connections_opened: Option<u64>,
    active_vus: Option<u64>,
    schedule_lag: Option<String>,
    checks: Vec<CheckLine>,
    // the header
    onrush_results: Option<u32>,
    onrush_version: Option<String>,
    plan: Option<String>,
    start_unix_ms: Option<u64>,
    duration_s: Option<f64>,
    interval_s: Option<u32>,
    histograms: Option<HistFormat>,
    layout: Vec<LayoutScenario>,
    merged_from: Option<Vec<String>>,
    unfinished: Option<bool>,
    other_counters: Vec<(String, u64)>,
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(LineVisitor)
    }
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Line;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Line, A::Error> {
        let mut f = Fields::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "kind" => f.kind = Some(map.next_value()?),
                "t" => f.t = Some(map.next_value()?),
                "scenario" => f.scenario = Some(map.next_value()?),
                "step" => f.step = Some(map.next_value()?),
                "requests" => f.requests = Some(map.next_value()?),
                "failures" => f.failures = Some(map.next_value()?),
                "failures_by_class" => f.failures_by_class = map.next_value()?,
                "status_codes" => f.status_codes = map.next_value()?,
                "bytes_in" => f.bytes_in = Some(map.next_value()?),
                "bytes_out" => f.bytes_out = Some(map.next_value()?),
                "latency" => f.latency = map.next_value()?,
                "service" => f.service = map.next_value()?,
                "connect" => f.connect = map.next_value()?,
                "ttfb" => f.ttfb = map.next_value()?,
                "handshakes" => f.handshakes = Some(map.next_value()?),
                "handshakes_full" => f.handshakes_full = Some(map.next_value()?),
                "handshakes_resumed" => f.handshakes_resumed = Some(map.next_value()?),
                "handshake" => f.handshake = map.next_value()?,
                "iterations" => f.iterations = Some(map.next_value()?),
                "dropped_iterations" => f.dropped_iterations = Some(map.next_value()?),
                "connections_opened" => f.connections_opened = Some(map.next_value()?),
                "active_vus" => f.active_vus = Some(map.next_value()?),
                "schedule_lag" => f.schedule_lag = map.next_value()?,
                "checks" => f.checks = map.next_value()?,
                "onrush_results" => f.onrush_results = Some(map.next_value()?),
                "onrush_version" => f.onrush_version = Some(map.next_value()?),
                "plan" => f.plan = Some(map.next_value()?),
                "start_unix_ms" => f.start_unix_ms = Some(map.next_value()?),
                "duration_s" => f.duration_s = Some(map.next_value()?),
                "interval_s" => f.interval_s = Some(map.next_value()?),
                "histograms" => f.histograms = Some(map.next_value()?),
                "layout" => f.layout = map.next_value()?,
                "merged_from" => f.merged_from = map.next_value()?,
                "unfinished" => f.unfinished = map.next_value()?,
                _ => {
                    // Unknown: kept when a whole number (a newer writer's counter).
                    if let Value::Number(n) = map.next_value::<Value>()? {
                        if let Some(n) = n.as_u64() {
                            f.other_counters.push((key.into_owned(), n));
                        }
                    }
                }
            }
        }
        f.into_line()
    }
}

impl Fields {
    /// Counters of the other body kind found on a line, kept like unknown ones (a newer
    /// writer may add, say, `handshakes` to scenario lines).
    fn foreign_counters(&mut self, kind: &str) {
        let fields = [
            ("requests", self.requests),
            ("failures", self.failures),
            ("bytes_in", self.bytes_in),
            ("bytes_out", self.bytes_out),
            ("handshakes", self.handshakes),
            ("handshakes_full", self.handshakes_full),
            ("handshakes_resumed", self.handshakes_resumed),
            ("iterations", self.iterations),
            ("dropped_iterations", self.dropped_iterations),
            ("connections_opened", self.connections_opened),
            ("active_vus", self.active_vus),
        ];
        let (step_fields, scenario_fields) = fields.split_at(7);
        let foreign = if kind == "scenario" {
            step_fields
        } else {
            scenario_fields
        };
        for (name, n) in foreign {
            if let Some(n) = n {
                self.other_counters.push((name.to_string(), *n));
            }
        }
    }

    fn into_line<E: de::Error>(mut self) -> Result<Line, E> {
        let kind = self.kind.take().unwrap_or_default();
        if matches!(kind.as_str(), "step" | "group" | "scenario") {
            self.foreign_counters(&kind);
        }
        let t = |kind: &str| {
            self.t
                .ok_or_else(|| E::custom(format!("{kind} line without \"t\"")))
        };
        match kind.as_str() {
            "step" | "group" => {
                let line = StepLine {
                    t: t(&kind)?,
                    scenario: self
                        .scenario
                        .ok_or_else(|| E::custom(format!("{kind} line without \"scenario\"")))?,
                    step: self
                        .step
                        .ok_or_else(|| E::custom(format!("{kind} line without \"step\"")))?,
                    requests: self.requests.unwrap_or(0),
                    failures: self.failures.unwrap_or(0),
                    failures_by_class: self.failures_by_class,
                    status_codes: self.status_codes,
                    bytes_in: self.bytes_in.unwrap_or(0),
                    bytes_out: self.bytes_out.unwrap_or(0),
                    latency: self.latency,
                    service: self.service,
                    connect: self.connect,
                    ttfb: self.ttfb,
                    handshakes: self.handshakes.unwrap_or(0),
                    handshakes_full: self.handshakes_full.unwrap_or(0),
                    handshakes_resumed: self.handshakes_resumed.unwrap_or(0),
                    handshake: self.handshake,
                    other_counters: self.other_counters,
                };
                Ok(if kind == "step" {
                    Line::Step(line)
                } else {
                    Line::Group(line)
                })
            }
            "scenario" => Ok(Line::Scenario(ScenarioLine {
                t: t(&kind)?,
                scenario: self.scenario.unwrap_or_default(),
                iterations: self.iterations.unwrap_or(0),
                dropped_iterations: self.dropped_iterations.unwrap_or(0),
                connections_opened: self.connections_opened.unwrap_or(0),
                active_vus: self.active_vus.unwrap_or(0),
                schedule_lag: self.schedule_lag,
                checks: self.checks,
                other_counters: self.other_counters,
            })),
            "header" => {
                let d = Header::new("", 0, 0.0, Vec::new(), None);
                Ok(Line::Header(Header {
                    onrush_results: self.onrush_results.unwrap_or(1),
                    onrush_version: self.onrush_version.unwrap_or_default(),
                    plan: self.plan.unwrap_or_default(),
                    start_unix_ms: self.start_unix_ms.unwrap_or_default(),
                    duration_s: self.duration_s.unwrap_or_default(),
                    interval_s: self.interval_s.unwrap_or(d.interval_s),
                    histograms: self.histograms.unwrap_or(d.histograms),
                    layout: self.layout,
                    merged_from: self.merged_from,
                    unfinished: self.unfinished.unwrap_or(false),
                }))
            }
            _ => Ok(Line::Other(kind)),
        }
    }
}
