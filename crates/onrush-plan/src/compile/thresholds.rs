//! `thresholds:` → [`Threshold`]s: each `[SCOPE:] METRIC OP VALUE` read by onrush-threshold's
//! expression language, its scope checked against the plan's scenarios and steps, its errors
//! placed at the plan's line.

use std::ops::Range;
use std::time::Duration;

use onrush_threshold::expr::{
    expr_err, parse_metric, parse_value, scope_err, split_expr, ExprError, EXAMPLE, OPERATORS,
};

use super::Ctx;
use crate::error::{did_you_mean, one_of, PlanError};
use crate::yaml::{Kind, Node};
use crate::{CompareOp, Threshold, ThresholdMetric, ThresholdScope};

const THRESHOLD_KEYS: [&str; 3] = ["threshold", "abort_on_fail", "grace"];
/// The scenarios and steps a threshold's scope may name.
pub(crate) struct ScopeNames<'a> {
    /// (scenario, its step metric names): every scenario of the plan for plan-level thresholds,
    /// only the owning scenario for a scenario's own.
    pub scenarios: Vec<(&'a str, Vec<&'a str>)>,
    /// The scenario whose `thresholds:` these are; `None` at plan level.
    pub own: Option<&'a str>,
}

/// Every way `text` can name a scope, deduplicated.
fn scope_candidates(text: &str, names: &ScopeNames) -> Vec<ThresholdScope> {
    let mut found: Vec<ThresholdScope> = Vec::new();
    let mut push = |s: ThresholdScope| {
        if !found.contains(&s) {
            found.push(s);
        }
    };
    let as_scenario = |s: &str, push: &mut dyn FnMut(ThresholdScope)| {
        if names.scenarios.iter().any(|(n, _)| *n == s) {
            push(ThresholdScope::Scenario(s.to_string()));
        }
    };
    let as_step = |s: &str, push: &mut dyn FnMut(ThresholdScope)| {
        let owners: Vec<&str> = names
            .scenarios
            .iter()
            .filter(|(_, steps)| steps.contains(&s))
            .map(|(n, _)| *n)
            .collect();
        match owners.as_slice() {
            [] => {}
            [one] => push(ThresholdScope::Step {
                scenario: Some(one.to_string()),
                step: s.to_string(),
            }),
            _ => push(ThresholdScope::Step {
                scenario: None,
                step: s.to_string(),
            }),
        }
        for (scen, steps) in &names.scenarios {
            if let Some(step) = s.strip_prefix(scen).and_then(|r| r.strip_prefix('/')) {
                if steps.contains(&step) {
                    push(ThresholdScope::Step {
                        scenario: Some(scen.to_string()),
                        step: step.to_string(),
                    });
                }
            }
        }
    };
    as_scenario(text, &mut push);
    as_step(text, &mut push);
    if let Some(rest) = text.strip_prefix("scenario ") {
        as_scenario(rest.trim(), &mut push);
    }
    if let Some(rest) = text.strip_prefix("step ") {
        as_step(rest.trim(), &mut push);
    }
    found
}

/// How to write `scope` so that it names only that scope.
fn written(scope: &ThresholdScope) -> String {
    match scope {
        ThresholdScope::Scenario(s) => format!("scenario {s}"),
        ThresholdScope::Step {
            scenario: Some(s),
            step,
        } => format!("{s}/{step}"),
        ThresholdScope::Step {
            scenario: None,
            step,
        } => format!("step {step}"),
        ThresholdScope::Total => String::new(),
        ThresholdScope::Generator => "generator".into(),
    }
}

impl Ctx<'_> {
    /// A `thresholds:` list.
    pub(crate) fn thresholds(
        &self,
        node: &Node,
        path: &str,
        names: &ScopeNames,
    ) -> Result<Vec<Threshold>, PlanError> {
        let items: &[Node] = match &node.kind {
            Kind::Seq(items) => items,
            _ if node.is_null() => &[],
            _ => {
                return Err(self
                    .err(
                        node,
                        path,
                        format!("expected a list of thresholds, found {}", node.describe()),
                    )
                    .with_hint("write each threshold as a list item: `- \"p99 < 100ms\"`"))
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| self.threshold(item, &format!("{path}[{i}]"), names))
            .collect()
    }

    fn threshold(
        &self,
        item: &Node,
        field: &str,
        names: &ScopeNames,
    ) -> Result<Threshold, PlanError> {
        let line = self.text[..item.span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        let entries = match &item.kind {
            Kind::Scalar(_) if !item.is_null() => {
                let text = self.string(item, field)?;
                return self.expression(&text, None, &[item], field, names, false, Duration::ZERO, line);
            }
            Kind::Map(entries) => entries,
            _ => {
                return Err(self
                    .err(
                        item,
                        field,
                        format!("expected a threshold, found {}", item.describe()),
                    )
                    .with_hint(format!("{EXAMPLE}; or `{{ threshold: \"p99 < 300ms\", abort_on_fail: true, grace: 10s }}`")))
            }
        };
        // `- home: p95 < 50ms` unquoted is YAML for a mapping { home: "p95 < 50ms" }: read it
        // as the scope form, unless the key looks like a misspelt option.
        if let [(k, v)] = entries.as_slice() {
            let key = &k.as_scalar().expect("keys are scalars").text;
            let known_scope = key == "generator" || !scope_candidates(key, names).is_empty();
            if !THRESHOLD_KEYS.contains(&key.as_str())
                && (known_scope || did_you_mean(key, THRESHOLD_KEYS).is_none())
            {
                let scope = self.string(k, field)?;
                if v.as_scalar().is_none() || v.is_null() {
                    return Err(self
                        .err(
                            v,
                            &format!("{field}.{key}"),
                            format!("expected the threshold of `{key}` as text, found {}", v.describe()),
                        )
                        .with_hint(format!("write `- \"{key}: p95 < 50ms\"`; options go in `{{ threshold: \"{key}: ...\", abort_on_fail: true }}`")));
                }
                let text = self.string(v, &format!("{field}.{key}"))?;
                return self.expression(
                    &text,
                    Some(&scope),
                    &[k, v],
                    field,
                    names,
                    false,
                    Duration::ZERO,
                    line,
                );
            }
        }
        let f = self.map(item, field, &THRESHOLD_KEYS)?;
        let t = self.required(
            &f,
            "threshold",
            "the threshold, e.g. `threshold: \"p99 < 300ms\"`",
        )?;
        let text = self.string(t, &f.child("threshold"))?;
        let abort = match f.get("abort_on_fail") {
            Some(a) => self.boolean(a, &f.child("abort_on_fail"), "abort_on_fail")?,
            None => false,
        };
        let grace = match f.get("grace") {
            Some(g) => {
                if !abort {
                    return Err(self
                        .err(
                            f.key("grace").expect("present"),
                            &f.child("grace"),
                            "`grace` without `abort_on_fail: true`; expected `grace` only with `abort_on_fail`",
                        )
                        .with_hint("`grace` is how long after the start a failing threshold does not yet stop the test: add `abort_on_fail: true`, or remove `grace`"));
                }
                self.duration(g, &f.child("grace"))?
            }
            None => Duration::ZERO,
        };
        self.expression(
            &text,
            None,
            &[t],
            &f.child("threshold"),
            names,
            abort,
            grace,
            line,
        )
    }

    /// Where `needle` is in the source of `nodes` (the first node as a fallback): its first
    /// occurrence, or its last with `from_right`.
    fn span_of(&self, nodes: &[&Node], needle: Option<&str>, from_right: bool) -> Range<usize> {
        if let Some(needle) = needle.filter(|n| !n.is_empty()) {
            let ordered: Vec<&&Node> = if from_right {
                nodes.iter().rev().collect()
            } else {
                nodes.iter().collect()
            };
            for n in ordered {
                let raw = self.text.get(n.span.clone());
                let found = if from_right {
                    raw.and_then(|r| r.rfind(needle))
                } else {
                    raw.and_then(|r| r.find(needle))
                };
                if let Some(i) = found {
                    let start = n.span.start + i;
                    return start..start + needle.len();
                }
            }
        }
        nodes[0].span.clone()
    }

    #[allow(clippy::too_many_arguments)]
    fn expression(
        &self,
        text: &str,
        key_scope: Option<&str>,
        nodes: &[&Node],
        field: &str,
        names: &ScopeNames,
        abort_on_fail: bool,
        grace: Duration,
        line: usize,
    ) -> Result<Threshold, PlanError> {
        let fail = |e: ExprError| {
            self.err_at(
                self.span_of(nodes, e.at.as_deref(), e.from_right),
                field,
                e.message,
            )
            .with_hint(e.hint)
        };
        let parts = split_expr(text).map_err(fail)?;
        let scope_text = match (key_scope, parts.scope) {
            (Some(k), Some(s)) => {
                return Err(fail(scope_err(
                    format!("two scopes, `{k}` and `{s}`; expected at most one"),
                    format!("write `- \"{k}: {}\"`", parts_without_scope(text)),
                    s,
                )))
            }
            (k, s) => k.or(s).map(str::trim),
        };
        let metric = parse_metric(parts.metric).map_err(fail)?;

        let scope = if metric == ThresholdMetric::GeneratorHealthy {
            if let Some((_, op_text)) = parts.op {
                return Err(fail(expr_err(
                    format!("`healthy` is a verdict, not a number: `{op_text}` compares numbers; expected `generator: healthy`"),
                    "write `generator: healthy`",
                    Some(op_text),
                )));
            }
            match scope_text {
                Some("generator") => ThresholdScope::Generator,
                Some(other) => {
                    return Err(fail(scope_err(
                        format!("`healthy` is the load generator's verdict, not a figure of `{other}`; expected `generator: healthy`"),
                        "write `generator: healthy`",
                        other,
                    )))
                }
                None => {
                    return Err(fail(expr_err(
                        "`healthy` needs the scope `generator`; expected `generator: healthy`",
                        "write `generator: healthy`",
                        Some(parts.metric),
                    )))
                }
            }
        } else {
            if parts.op.is_none() {
                return Err(fail(expr_err(
                    format!("no comparison after `{}`; expected `METRIC OP VALUE` with OP one of {OPERATORS}", parts.metric),
                    EXAMPLE,
                    Some(parts.metric),
                )));
            }
            match scope_text {
                None => match names.own {
                    Some(own) => ThresholdScope::Scenario(own.to_string()),
                    None => ThresholdScope::Total,
                },
                Some(s) => self.scope(s, names, &fail)?,
            }
        };

        // Metric and scope must fit together.
        let name = metric.name();
        let scoped = |why: &str, hint: &str| {
            fail(expr_err(
                format!("`{name}` {why}"),
                hint,
                Some(parts.metric),
            ))
        };
        match (&scope, metric) {
            (
                ThresholdScope::Step { .. },
                ThresholdMetric::Iterations
                | ThresholdMetric::DroppedIterations
                | ThresholdMetric::DroppedRate,
            ) => {
                return Err(scoped(
                    &format!("is counted per scenario, not per step; expected no scope or a scenario as the scope of `{name}`"),
                    "a step has `requests`, `failures`, `failure_rate`, `rate`, the latencies, `checks` and `checks_failed`",
                ))
            }
            (
                ThresholdScope::Scenario(_) | ThresholdScope::Step { .. },
                ThresholdMetric::Rate10sMin | ThresholdMetric::Rate10sMax,
            ) => {
                let hint = if names.own.is_some() {
                    "move it to the plan-level `thresholds:` (the whole test)"
                } else {
                    "remove the scope: the 10-second window rates are kept for the whole test"
                };
                return Err(scoped(
                    "is measured over the whole test only; expected it without a scope",
                    hint,
                ));
            }
            _ => {}
        }

        let value = parse_value(&metric, parts.value).map_err(fail)?;
        let source = match key_scope {
            Some(k) => format!("{}: {}", k.trim(), text.trim()),
            None => text.trim().to_string(),
        };
        let threshold = Threshold {
            source,
            scope,
            metric,
            op: parts.op.map_or(CompareOp::Eq, |(op, _)| op),
            value,
            abort_on_fail,
            grace,
            line,
            field: field
                .strip_suffix(".threshold")
                .unwrap_or(field)
                .to_string(),
        };
        if abort_on_fail && threshold.needs_histograms() {
            return Err(fail(expr_err(
                format!("`abort_on_fail` needs a figure onrush keeps while the test runs; `{name}` here is computed from the histograms at the end"),
                "use p50, p90, p95, p99 or p99.9 (per scenario: of `latency`), or remove `abort_on_fail`",
                Some(parts.metric),
            )));
        }
        Ok(threshold)
    }

    /// A scope name → the scope; unknown and ambiguous names are errors.
    fn scope(
        &self,
        text: &str,
        names: &ScopeNames,
        fail: &dyn Fn(ExprError) -> PlanError,
    ) -> Result<ThresholdScope, PlanError> {
        let found = scope_candidates(text, names);
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] if text == "generator" => Err(fail(scope_err(
                "the `generator` scope has one check, `healthy`; expected `generator: healthy`",
                "write `generator: healthy`; figures such as `p99` are about scenarios and steps",
                text,
            ))),
            [] => {
                let mut all: Vec<String> = Vec::new();
                for (scen, steps) in &names.scenarios {
                    if names.own.is_none() {
                        all.push(scen.to_string());
                    }
                    for st in steps {
                        all.push(st.to_string());
                        if names.own.is_none() {
                            all.push(format!("{scen}/{st}"));
                        }
                    }
                }
                let refs: Vec<&str> = all.iter().map(String::as_str).collect();
                let (message, listed) = match names.own {
                    Some(own) => (
                        format!("unknown scope `{text}`: scenario {own:?} has no step of that name; expected one of its steps"),
                        format!("its steps are {}; thresholds about other scenarios go in the plan-level `thresholds:`", one_of(&first(&names.scenarios[0].1))),
                    ),
                    None => {
                        let scens: Vec<&str> = names.scenarios.iter().map(|(n, _)| *n).collect();
                        let mut steps: Vec<&str> = Vec::new();
                        for st in names.scenarios.iter().flat_map(|(_, s)| s.iter().copied()) {
                            if !steps.contains(&st) {
                                steps.push(st);
                            }
                        }
                        (
                            format!("unknown scope `{text}`: no scenario or step of that name; expected a scenario, a step or `scenario/step`"),
                            format!("scenarios: {}; steps: {}", one_of(&first(&scens)), one_of(&first(&steps))),
                        )
                    }
                };
                let hint = match did_you_mean(text, refs.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => listed,
                };
                Err(fail(scope_err(message, hint, text)))
            }
            many => {
                let ways: Vec<String> = many.iter().map(written).collect();
                let ways: Vec<&str> = ways.iter().map(String::as_str).collect();
                Err(fail(scope_err(
                    format!(
                        "the scope `{text}` is ambiguous: it names {}; expected one",
                        many.iter()
                            .map(|s| s.label())
                            .collect::<Vec<_>>()
                            .join(" and ")
                    ),
                    format!("write {} in front of the `:`", one_of(&ways)),
                    text,
                )))
            }
        }
    }
}

/// `closed: p99 < 1s` → `p99 < 1s`.
fn parts_without_scope(text: &str) -> String {
    match split_expr(text) {
        Ok(p) => match p.op {
            Some((_, op)) => format!("{} {op} {}", p.metric, p.value),
            None => p.metric.to_string(),
        },
        Err(_) => text.trim().to_string(),
    }
}

/// At most 12 names, for messages (with `…` when there are more).
fn first<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = names.iter().take(12).copied().collect();
    if names.len() > 12 {
        v.push("…");
    }
    v
}
