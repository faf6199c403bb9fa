//! Between the collector's intervals and the lines of `intervals.jsonl` (whose types are
//! onrush-results').

use std::collections::BTreeMap;

use onrush_results::{
    CheckLine, Header, HistDecoder, LayoutCheck, LayoutScenario, ScenarioLine, StepLine,
};

use crate::failure::FailureClass;
use crate::hist::{Encoder, Hist};
use crate::record::{Layout, ScenarioLayout, StepKind};
use crate::snapshot::{ScenarioInterval, StepCounters, StepInterval};

/// A scenario of the header's layout.
pub(crate) fn layout_scenario(s: &ScenarioLayout) -> LayoutScenario {
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
pub(crate) fn scenario_layout(l: &LayoutScenario) -> ScenarioLayout {
    let mut s = ScenarioLayout::new(&l.scenario, &l.steps);
    s.kinds = l
        .steps
        .iter()
        .map(|st| {
            if l.groups.contains(st) {
                StepKind::Group
            } else {
                StepKind::Request
            }
        })
        .collect();
    for c in &l.checks {
        if let Some(i) = l.steps.iter().position(|st| *st == c.step) {
            s.add_check(&c.name, i);
        }
    }
    s
}

/// The header line of a run of `layout`.
pub(crate) fn header(
    plan: &str,
    start_unix_ms: u64,
    duration_s: f64,
    layout: &Layout,
    merged_from: Option<Vec<String>>,
) -> Header {
    let scenarios = layout.scenarios.iter().map(layout_scenario).collect();
    Header::new(plan, start_unix_ms, duration_s, scenarios, merged_from)
}

/// One step's second as a line.
pub(crate) fn step_line(
    t: u64,
    scenario: &str,
    step: &str,
    d: &StepInterval,
    enc: &mut Encoder,
) -> StepLine {
    let c = &d.counters;
    // Latency, service time and TTFB first, one after the other: they are often the same
    // histogram, and the encoder gives back its last text for the same one (no compression).
    let mut encode = |h: &Option<Hist>| h.as_ref().map(|h| enc.encode(h));
    let latency = encode(&d.latency);
    let service = encode(&d.service);
    let ttfb = encode(&d.ttfb);
    let connect = encode(&d.connect);
    let handshake = encode(&d.handshake);
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
        latency,
        service,
        connect,
        ttfb,
        handshakes: c.handshakes_full + c.handshakes_resumed,
        handshakes_full: c.handshakes_full,
        handshakes_resumed: c.handshakes_resumed,
        handshake,
        other_counters: Vec::new(),
    }
}

/// A step line back to an interval, histograms decoded; the error names the field.
pub(crate) fn step_interval(l: &StepLine, dec: &mut HistDecoder) -> Result<StepInterval, String> {
    let mut by_class = [0u64; FailureClass::CAPACITY];
    for (name, &n) in &l.failures_by_class {
        // A class this build does not know (a file of a build with more protocols) is
        // registered by its name, so merge and report keep its counts.
        let c = FailureClass::named_or_register(name).ok_or_else(|| {
            format!("failures_by_class: {name:?} is not a failure class name, or too many are")
        })?;
        by_class[c.index()] += n;
    }
    let mut status_codes = BTreeMap::new();
    for (code, &n) in &l.status_codes {
        let code: u16 = code
            .parse()
            .map_err(|_| format!("status_codes: {code:?} is not a status code"))?;
        *status_codes.entry(code).or_insert(0) += n;
    }
    let mut h = |field: &str, v: &Option<String>| {
        v.as_deref()
            .map(|text| dec.decode_hist(text))
            .transpose()
            .map_err(|e| format!("{field}: {e}"))
    };
    Ok(StepInterval {
        counters: StepCounters {
            requests: l.requests,
            failures: l.failures,
            failures_by_class: by_class,
            status_codes,
            bytes_in: l.bytes_in,
            bytes_out: l.bytes_out,
            handshakes_full: l.handshakes_full,
            handshakes_resumed: l.handshakes_resumed,
        },
        latency: h("latency", &l.latency)?,
        service: h("service", &l.service)?,
        connect: h("connect", &l.connect)?,
        ttfb: h("ttfb", &l.ttfb)?,
        handshake: h("handshake", &l.handshake)?,
    })
}

/// One scenario's second as a line. `checks`: (step name, check name) of each entry of
/// `d.checks`.
pub(crate) fn scenario_line(
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
        other_counters: Vec::new(),
    }
}

/// A scenario line back to an interval without its checks (the caller places `checks` by
/// name).
pub(crate) fn scenario_interval(
    l: &ScenarioLine,
    dec: &mut HistDecoder,
) -> Result<ScenarioInterval, String> {
    Ok(ScenarioInterval {
        checks: Vec::new(),
        iterations: l.iterations,
        dropped_iterations: l.dropped_iterations,
        connections_opened: l.connections_opened,
        active_vus: l.active_vus,
        schedule_lag: l
            .schedule_lag
            .as_deref()
            .map(|text| dec.decode_hist(text))
            .transpose()
            .map_err(|e| format!("schedule_lag: {e}"))?,
    })
}
