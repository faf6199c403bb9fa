//! What `/metrics` carries beyond the request steps: the run's own labels (`run_id`, `plan`,
//! and whatever the caller adds) on every series, the checks' passes and fails, and the
//! groups (transactions) as series of their own, never as requests.

use std::io;

use onrush_metrics::{Layout, SecondData};

use super::{family, label, sample, step_entry, StepState};

/// Labels put on every series of the endpoint, as `name="value",...` (empty without any).
pub(super) fn constant_labels(labels: &[(String, String)]) -> io::Result<String> {
    let mut out = String::new();
    for (name, value) in labels {
        let mut c = name.chars();
        let valid = matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
            && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
            && !name.starts_with("__");
        if !valid {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "label name {name:?} is not a Prometheus label name: letters, digits and \
                     `_`, not starting with a digit or `__`"
                ),
            ));
        }
        if [
            "scenario", "step", "group", "check", "result", "class", "code", "le", "quantile",
        ]
        .contains(&name.as_str())
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("label name {name:?} is one onrush's series use themselves; pick another"),
            ));
        }
        if !out.is_empty() {
            out.push(',');
        }
        label(&mut out, name, value);
    }
    Ok(out)
}

/// `base` followed by more labels.
pub(super) fn with_base(base: &str) -> String {
    let mut l = base.to_string();
    if !l.is_empty() {
        l.push(',');
    }
    l
}

/// One check of a scenario, cumulative.
#[derive(Clone, Debug)]
pub(super) struct CheckState {
    scenario: String,
    step: String,
    name: String,
    passes: u64,
    fails: u64,
}

/// Checks and groups, cumulative since the start.
#[derive(Clone, Debug, Default)]
pub(super) struct Extra {
    /// `[scenario_index][check index of the layout]`.
    checks: Vec<Vec<CheckState>>,
    /// `[scenario_index][step_index]`: the groups' runs, as steps are kept.
    groups: Vec<Vec<Option<StepState>>>,
}

impl Extra {
    pub(super) fn begin(&mut self, layout: &Layout, buckets: usize) {
        self.checks = layout
            .scenarios
            .iter()
            .map(|s| {
                s.checks
                    .iter()
                    .map(|(name, step)| CheckState {
                        scenario: s.name.clone(),
                        step: s.steps.get(*step).cloned().unwrap_or_default(),
                        name: name.clone(),
                        passes: 0,
                        fails: 0,
                    })
                    .collect()
            })
            .collect();
        for (si, s) in layout.scenarios.iter().enumerate() {
            for (sti, st) in s.steps.iter().enumerate() {
                if s.is_group(sti) {
                    step_entry(&mut self.groups, buckets, si, sti, &s.name, st);
                }
            }
        }
    }

    /// Adds second `d`; `add_latency` counts a histogram into a state's buckets.
    pub(super) fn add(
        &mut self,
        d: &SecondData,
        buckets: usize,
        add_latency: &dyn Fn(&mut StepState, &onrush_metrics::Hist),
    ) {
        for s in &d.scenarios {
            let Some(checks) = self.checks.get_mut(s.scenario_index) else {
                continue;
            };
            for (c, n) in checks.iter_mut().zip(&s.checks) {
                c.passes += n.passes;
                c.fails += n.fails;
            }
        }
        for g in &d.groups {
            let st = step_entry(
                &mut self.groups,
                buckets,
                g.scenario_index,
                g.step_index,
                &g.scenario,
                &g.step,
            );
            st.requests += g.requests;
            st.failures += g.failures;
            if let Some(h) = g.latency.as_ref().filter(|h| !h.is_empty()) {
                add_latency(st, h);
            }
        }
    }

    pub(super) fn render(&self, out: &mut String, base: &str, bound_labels: &[String]) {
        let checks: Vec<&CheckState> = self.checks.iter().flatten().collect();
        if !checks.is_empty() {
            let name = "onrush_checks_total";
            family(
                out,
                name,
                "counter",
                "Check evaluations by result (pass, fail), per check of a step.",
            );
            for c in checks {
                for (result, n) in [("pass", c.passes), ("fail", c.fails)] {
                    let mut l = with_base(base);
                    label(&mut l, "scenario", &c.scenario);
                    l.push(',');
                    label(&mut l, "step", &c.step);
                    l.push(',');
                    label(&mut l, "check", &c.name);
                    l.push(',');
                    label(&mut l, "result", result);
                    sample(out, name, &l, &n.to_string());
                }
            }
        }
        let groups: Vec<&StepState> = self.groups.iter().flatten().flatten().collect();
        if groups.is_empty() {
            return;
        }
        let labels: Vec<String> = groups
            .iter()
            .map(|g| {
                let mut l = with_base(base);
                label(&mut l, "scenario", &g.scenario);
                l.push(',');
                label(&mut l, "group", &g.step);
                l
            })
            .collect();
        let name = "onrush_group_runs_total";
        family(
            out,
            name,
            "counter",
            "Runs of a group (transaction) completed; not requests.",
        );
        for (g, l) in groups.iter().zip(&labels) {
            sample(out, name, l, &g.requests.to_string());
        }
        let name = "onrush_group_failed_runs_total";
        family(
            out,
            name,
            "counter",
            "Runs of a group in which a request failed.",
        );
        for (g, l) in groups.iter().zip(&labels) {
            sample(out, name, l, &g.failures.to_string());
        }
        let name = "onrush_group_duration_seconds";
        family(
            out,
            name,
            "histogram",
            "A group's whole duration per run since the start, in fixed buckets counted exactly from the HDR histograms.",
        );
        for (g, l) in groups.iter().zip(&labels) {
            let mut cum = 0;
            for (i, n) in g.buckets.iter().enumerate() {
                cum += n;
                let mut l = l.clone();
                l.push(',');
                label(&mut l, "le", bound_labels.get(i).map_or("+Inf", |s| s));
                sample(
                    out,
                    "onrush_group_duration_seconds_bucket",
                    &l,
                    &cum.to_string(),
                );
            }
            sample(
                out,
                "onrush_group_duration_seconds_sum",
                l,
                &super::fmt_f64(g.sum_s),
            );
            sample(
                out,
                "onrush_group_duration_seconds_count",
                l,
                &g.count.to_string(),
            );
        }
    }
}
