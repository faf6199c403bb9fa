//! `thresholds:` → [`Threshold`]s: `[SCOPE:] METRIC OP VALUE` expressions, scopes checked against
//! the plan's scenarios and steps, values read in the metric's unit.

use std::ops::Range;
use std::time::Duration;

use super::Ctx;
use crate::error::{did_you_mean, one_of, PlanError};
use crate::units;
use crate::yaml::{Kind, Node};
use crate::{
    CompareOp, LatencyFamily, LatencyStat, Threshold, ThresholdMetric, ThresholdScope, ValueKind,
};

const THRESHOLD_KEYS: [&str; 3] = ["threshold", "abort_on_fail", "grace"];
const OPERATORS: &str = "`<`, `<=`, `>`, `>=`, `==` or `!=`";
const EXAMPLE: &str =
    "e.g. `p99 < 100ms`, `failure_rate < 1%`, `rate > 500/s` or `home: p95 < 50ms`";

/// Metric names offered in "did you mean" hints and listed in messages.
const METRIC_NAMES: [&str; 28] = [
    "min",
    "mean",
    "max",
    "p50",
    "p90",
    "p95",
    "p99",
    "p99.9",
    "p999",
    "failure_rate",
    "failures",
    "requests",
    "rate",
    "iterations",
    "dropped_iterations",
    "dropped_rate",
    "rate_10s_min",
    "rate_10s_max",
    "latency_p99",
    "service_p99",
    "service_mean",
    "connect_p99",
    "connect_mean",
    "ttfb_p99",
    "ttfb_mean",
    "checks",
    "checks_failed",
    "healthy",
];

/// The metrics, for "expected ..." in messages.
const METRICS_EXPECTED: &str = "a latency statistic (`p50`, `p90`, `p95`, `p99`, `p99.9`, any `pNN.N`, `min`, `mean`, `max`; `service_`, `connect_` or `ttfb_` in front for those times), `failure_rate`, `failures`, `requests`, `rate`, `iterations`, `dropped_iterations`, `dropped_rate`, `rate_10s_min`, `rate_10s_max`, `checks` (pass rate of the checks) or `checks_failed`";

/// The scenarios and steps a threshold's scope may name.
pub(crate) struct ScopeNames<'a> {
    /// (scenario, its step metric names): every scenario of the plan for plan-level thresholds,
    /// only the owning scenario for a scenario's own.
    pub scenarios: Vec<(&'a str, Vec<&'a str>)>,
    /// The scenario whose `thresholds:` these are; `None` at plan level.
    pub own: Option<&'a str>,
}

/// What is wrong with part of an expression; `at` is the text to point at.
#[derive(Debug)]
struct ExprError {
    message: String,
    hint: String,
    at: Option<String>,
    /// Look for `at` from the right (metric, operator, value) rather than from the left (scope).
    from_right: bool,
}

fn expr_err(message: impl Into<String>, hint: impl Into<String>, at: Option<&str>) -> ExprError {
    ExprError {
        message: message.into(),
        hint: hint.into(),
        at: at.map(str::to_string),
        from_right: true,
    }
}

/// An error about the scope, found from the left of the expression.
fn scope_err(message: impl Into<String>, hint: impl Into<String>, at: &str) -> ExprError {
    ExprError {
        from_right: false,
        ..expr_err(message, hint, Some(at))
    }
}

/// `[scope:] metric [op value]`, split but not interpreted.
#[derive(Debug)]
struct Parts<'t> {
    scope: Option<&'t str>,
    metric: &'t str,
    op: Option<(CompareOp, &'t str)>,
    value: &'t str,
}

fn is_op_char(c: char) -> bool {
    matches!(c, '<' | '>' | '=' | '!')
}

/// Splits from the right: the value never contains an operator or `:`, while scope names
/// (step names such as `GET /search?q=x`) may contain anything.
fn split_expr(text: &str) -> Result<Parts<'_>, ExprError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(expr_err(
            format!("empty threshold; expected `METRIC OP VALUE`, {EXAMPLE}"),
            "",
            None,
        ));
    }
    let (left, op, value) = match t.rfind(is_op_char) {
        Some(i) => {
            let start = if i > 0 && t[..i].ends_with(is_op_char) {
                i - 1
            } else {
                i
            };
            let op_text = &t[start..=i];
            let op = CompareOp::parse(op_text).ok_or_else(|| {
                let hint = match op_text {
                    "=" => "write `==` to compare for equality".to_string(),
                    "=<" => "write `<=`".to_string(),
                    "=>" => "write `>=`".to_string(),
                    _ => format!("the operators are {OPERATORS}"),
                };
                expr_err(
                    format!("unknown operator `{op_text}`; expected {OPERATORS}"),
                    hint,
                    Some(op_text),
                )
            })?;
            (
                t[..start].trim_end(),
                Some((op, op_text)),
                t[i + 1..].trim(),
            )
        }
        None => (t, None, ""),
    };
    let m_start = left
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '(' | ')')))
        .map_or(0, |(j, c)| j + c.len_utf8());
    let metric = &left[m_start..];
    let before = left[..m_start].trim_end();
    let scope = if before.is_empty() {
        None
    } else if let Some(s) = before.strip_suffix(':') {
        let s = s.trim();
        if s.is_empty() {
            return Err(scope_err(
                "nothing before `:`; expected a scenario or step name as the scope",
                "write e.g. `home: p95 < 50ms`, or leave out the `:` for the whole test",
                ":",
            ));
        }
        Some(s)
    } else {
        let hint = if before.contains(':') {
            "a metric is one word such as `p99` or `failure_rate`".to_string()
        } else {
            format!("put a `:` after a scope: `{before}: {metric} ...`; without a scope the threshold is about the whole test")
        };
        return Err(scope_err(
            format!("`{left}` is not a metric; expected `[SCOPE:] METRIC OP VALUE`, {EXAMPLE}"),
            hint,
            left,
        ));
    };
    if let Some((_, op_text)) = op {
        if metric.is_empty() {
            return Err(expr_err(
                format!("no metric before `{op_text}`; expected `METRIC OP VALUE`, {EXAMPLE}"),
                format!("the metric is {METRICS_EXPECTED}"),
                Some(op_text),
            ));
        }
        if value.is_empty() {
            return Err(expr_err(
                format!("no value after `{op_text}`; expected `METRIC OP VALUE`, {EXAMPLE}"),
                "add the limit, e.g. `p99 < 100ms`",
                Some(op_text),
            ));
        }
    } else if metric.is_empty() {
        return Err(expr_err(
            format!("no metric; expected `METRIC OP VALUE`, {EXAMPLE}"),
            "",
            None,
        ));
    }
    Ok(Parts {
        scope,
        metric,
        op,
        value,
    })
}

/// A metric name → the metric (`healthy` included).
fn parse_metric(text: &str) -> Result<ThresholdMetric, ExprError> {
    let lower = text.to_ascii_lowercase();
    let plain = match lower.as_str() {
        "failure_rate" => Some(ThresholdMetric::FailureRate),
        "failures" => Some(ThresholdMetric::Failures),
        "requests" => Some(ThresholdMetric::Requests),
        "rate" => Some(ThresholdMetric::Rate),
        "iterations" => Some(ThresholdMetric::Iterations),
        "dropped_iterations" => Some(ThresholdMetric::DroppedIterations),
        "dropped_rate" => Some(ThresholdMetric::DroppedRate),
        "rate_10s_min" => Some(ThresholdMetric::Rate10sMin),
        "rate_10s_max" => Some(ThresholdMetric::Rate10sMax),
        "healthy" => Some(ThresholdMetric::GeneratorHealthy),
        "checks" => Some(ThresholdMetric::Checks),
        "checks_failed" => Some(ThresholdMetric::ChecksFailed),
        _ => None,
    };
    if let Some(m) = plain {
        return Ok(m);
    }
    let (family, stat) = [
        ("latency_", LatencyFamily::Latency),
        ("service_", LatencyFamily::Service),
        ("connect_", LatencyFamily::Connect),
        ("ttfb_", LatencyFamily::Ttfb),
    ]
    .iter()
    .find_map(|(p, f)| lower.strip_prefix(p).map(|rest| (*f, rest)))
    .unwrap_or((LatencyFamily::Latency, lower.as_str()));
    let stat = match stat {
        "min" => Some(LatencyStat::Min),
        "mean" | "avg" => Some(LatencyStat::Mean),
        "max" => Some(LatencyStat::Max),
        s if s.starts_with('p') && s[1..].starts_with(|c: char| c.is_ascii_digit() || c == '(') => {
            Some(percentile(text, &s[1..])?)
        }
        _ => None,
    };
    if let Some(stat) = stat {
        return Ok(ThresholdMetric::Latency { family, stat });
    }
    let hint = match lower.as_str() {
        "error_rate" | "errors_rate" | "http_req_failed" => "did you mean `failure_rate`?".to_string(),
        "errors" => "did you mean `failures`?".to_string(),
        "check" | "checks_rate" | "checks_passed" | "checks_pass_rate" => {
            "did you mean `checks` (the pass rate of the checks, e.g. `checks > 99.9%`)?".to_string()
        }
        "checks_fails" | "checks_failures" | "failed_checks" => "did you mean `checks_failed`?".to_string(),
        "rps" | "throughput" | "req_rate" | "http_reqs" => "did you mean `rate` (requests per second)?".to_string(),
        "median" | "med" => "did you mean `p50`?".to_string(),
        "latency" | "duration" | "http_req_duration" | "response_time" | "service" | "ttfb" | "connect" => {
            "name a statistic of it: `p95`, `p99`, `mean`, `max` (with `service_`, `connect_` or `ttfb_` in front for those times)".to_string()
        }
        "generator" => "write `generator: healthy` for the load generator's health verdict".to_string(),
        _ => match did_you_mean(&lower, METRIC_NAMES) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!(
                "any percentile `pNN` or `pNN.N` works too, and `service_`, `connect_` or `ttfb_` in front of a latency statistic; {EXAMPLE}"
            ),
        },
    };
    Err(expr_err(
        format!("unknown metric `{text}`; expected {METRICS_EXPECTED}"),
        hint,
        Some(text),
    ))
}

/// `99`, `99.9`, `(99.9)`, `999` (= 99.9), `9999` (= 99.99) → the percentile.
fn percentile(text: &str, digits: &str) -> Result<LatencyStat, ExprError> {
    let inner = digits
        .strip_prefix('(')
        .and_then(|d| d.strip_suffix(')'))
        .unwrap_or(digits);
    let bad = |why: &str, hint: &str| {
        expr_err(
            format!("`{text}` is not a percentile: {why}; expected `p50`, `p99`, `p99.9` or any `pNN.N` between 0 and 100"),
            hint,
            Some(text),
        )
    };
    let p: f64 = match inner {
        "999" => 99.9,
        "9999" => 99.99,
        _ => {
            if !inner.chars().all(|c| c.is_ascii_digit() || c == '.') || inner.is_empty() {
                return Err(bad("not a number", "write e.g. `p99.9`"));
            }
            inner
                .parse()
                .map_err(|_| bad("not a number", "write e.g. `p99.9`"))?
        }
    };
    if p == 100.0 {
        return Ok(LatencyStat::Max);
    }
    if p <= 0.0 {
        return Err(bad("0 or less", "use `min` for the smallest value"));
    }
    if p > 100.0 {
        return Err(bad(
            "above 100",
            "use `max` for the largest value, `p999` or `p99.9` for the 99.9th percentile",
        ));
    }
    Ok(LatencyStat::Percentile(p))
}

/// The limit of a threshold in the metric's unit (see [`ValueKind`]).
fn parse_value(metric: &ThresholdMetric, text: &str) -> Result<f64, ExprError> {
    let t = text.trim();
    let name = metric.name();
    let at = Some(t);
    match metric.kind() {
        ValueKind::Millis => {
            if t.ends_with('%') || t.contains('/') {
                return Err(expr_err(
                    format!("`{t}` is not a time; `{name}` is a latency, expected a duration such as `100ms`, `1.5s` or `500us`"),
                    format!("e.g. `{name} < 100ms`"),
                    at,
                ));
            }
            if t.parse::<f64>() == Ok(0.0) {
                return Ok(0.0); // 0 is 0 in every unit
            }
            let d = units::parse_duration(t).map_err(|e| expr_err(e.message, e.hint, at))?;
            Ok(d.as_nanos() as f64 / 1e6)
        }
        ValueKind::Fraction => {
            let expected = format!("`{name}` is a fraction, expected a percentage such as `1%` or `0.5%`, or a fraction below 1 such as `0.01`");
            if let Some(num) = t.strip_suffix('%') {
                let v: f64 = num
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite())
                    .ok_or_else(|| {
                        expr_err(
                            format!("`{t}` is not a percentage; {expected}"),
                            "write e.g. `1%`",
                            at,
                        )
                    })?;
                if !(0.0..=100.0).contains(&v) {
                    return Err(expr_err(
                        format!("`{t}` is not between 0% and 100%; {expected}"),
                        "write e.g. `1%`",
                        at,
                    ));
                }
                // `99.9%` → 0.999 exactly as written (not 99.9 / 100 = 0.9990000000000001)
                return Ok(format!("{}e-2", num.trim())
                    .parse::<f64>()
                    .unwrap_or(v / 100.0));
            }
            match t.parse::<f64>() {
                Ok(v) if v.is_finite() && (0.0..1.0).contains(&v) => Ok(v),
                Ok(v) if v.is_finite() && v >= 1.0 => Err(expr_err(
                    format!("`{t}` is ambiguous; {expected}"),
                    format!(
                        "write `{t}%` for {t} percent, or the fraction `{}`",
                        v / 100.0
                    ),
                    at,
                )),
                _ => Err(expr_err(
                    format!("`{t}` is not a percentage; {expected}"),
                    "write e.g. `1%`",
                    at,
                )),
            }
        }
        ValueKind::PerSecond => {
            let bad = || {
                expr_err(
                    format!("`{t}` is not a rate; `{name}` is requests per second, expected e.g. `7000/s`, `420000/m` or `7000`"),
                    format!("e.g. `{name} > 500/s`"),
                    at,
                )
            };
            if t.ends_with('%') || t.ends_with("ms") {
                return Err(bad());
            }
            units::parse_rate(t).map_err(|e| {
                let mut err = bad();
                if e.hint.contains("/s") {
                    err.hint = e.hint;
                }
                err
            })
        }
        ValueKind::Count => {
            let plain = t.replace('_', "");
            match plain.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => {
                    let hint = if *metric == ThresholdMetric::Requests && t.contains('/') {
                        format!("`requests` is a count; for requests per second write `rate > {t}`")
                    } else if *metric == ThresholdMetric::Failures && t.ends_with('%') {
                        format!("`failures` is a count; for a share of the requests write `failure_rate < {t}`")
                    } else if *metric == ThresholdMetric::ChecksFailed && t.ends_with('%') {
                        format!(
                            "`checks_failed` is a count; for the pass rate write `checks > {t}`"
                        )
                    } else if *metric == ThresholdMetric::DroppedIterations && t.ends_with('%') {
                        format!("`dropped_iterations` is a count; for a share of the iterations write `dropped_rate < {t}`")
                    } else {
                        format!("e.g. `{name} > 1000`")
                    };
                    Err(expr_err(
                        format!("`{t}` is not a count; `{name}` is a number, expected a plain number such as `1000`"),
                        hint,
                        at,
                    ))
                }
            }
        }
        ValueKind::Verdict => Ok(1.0),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split() {
        let p = split_expr("GET /search?q=a: p99 < 10ms").unwrap();
        assert_eq!(p.scope, Some("GET /search?q=a"));
        assert_eq!(p.metric, "p99");
        assert_eq!(p.op.unwrap().0, CompareOp::Lt);
        assert_eq!(p.value, "10ms");
        let p = split_expr("p99.9<=1s").unwrap();
        assert_eq!((p.scope, p.metric, p.value), (None, "p99.9", "1s"));
        assert_eq!(p.op.unwrap().0, CompareOp::Le);
        let p = split_expr("generator: healthy").unwrap();
        assert_eq!(
            (p.scope, p.metric, p.op.is_none()),
            (Some("generator"), "healthy", true)
        );
        assert!(split_expr("p99 = 1s").unwrap_err().hint.contains("=="));
        assert!(split_expr("p99 <")
            .unwrap_err()
            .message
            .contains("no value"));
        assert!(split_expr("< 5ms")
            .unwrap_err()
            .message
            .contains("no metric"));
        assert!(split_expr("home p99 < 5ms")
            .unwrap_err()
            .hint
            .contains("`home: p99 ...`"));
    }

    #[test]
    fn metrics() {
        let lat = |s: &str| match parse_metric(s).unwrap() {
            ThresholdMetric::Latency { family, stat } => (family, stat),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            lat("p99"),
            (LatencyFamily::Latency, LatencyStat::Percentile(99.0))
        );
        assert_eq!(
            lat("p999"),
            (LatencyFamily::Latency, LatencyStat::Percentile(99.9))
        );
        assert_eq!(
            lat("p(99.9)"),
            (LatencyFamily::Latency, LatencyStat::Percentile(99.9))
        );
        assert_eq!(
            lat("P75"),
            (LatencyFamily::Latency, LatencyStat::Percentile(75.0))
        );
        assert_eq!(lat("p100"), (LatencyFamily::Latency, LatencyStat::Max));
        assert_eq!(
            lat("service_p99"),
            (LatencyFamily::Service, LatencyStat::Percentile(99.0))
        );
        assert_eq!(lat("ttfb_mean"), (LatencyFamily::Ttfb, LatencyStat::Mean));
        assert_eq!(
            lat("latency_avg"),
            (LatencyFamily::Latency, LatencyStat::Mean)
        );
        assert_eq!(
            lat("connect_max"),
            (LatencyFamily::Connect, LatencyStat::Max)
        );
        assert!(parse_metric("p0").is_err());
        assert!(parse_metric("p101").unwrap_err().hint.contains("max"));
        assert!(parse_metric("p9x").is_err());
        assert!(parse_metric("falure_rate")
            .unwrap_err()
            .hint
            .contains("`failure_rate`"));
        assert!(parse_metric("rps").unwrap_err().hint.contains("`rate`"));
        assert_eq!(parse_metric("checks").unwrap(), ThresholdMetric::Checks);
        assert_eq!(parse_metric("CHECKS").unwrap(), ThresholdMetric::Checks);
        assert_eq!(
            parse_metric("checks_failed").unwrap(),
            ThresholdMetric::ChecksFailed
        );
        assert!(parse_metric("check").unwrap_err().hint.contains("`checks`"));
        assert!(parse_metric("checks_fails")
            .unwrap_err()
            .hint
            .contains("`checks_failed`"));
    }

    #[test]
    fn values() {
        let v = |m: ThresholdMetric, t: &str| parse_value(&m, t);
        let p99 = ThresholdMetric::Latency {
            family: LatencyFamily::Latency,
            stat: LatencyStat::Percentile(99.0),
        };
        assert_eq!(v(p99, "100ms").ok(), Some(100.0));
        assert_eq!(v(p99, "1.5s").ok(), Some(1500.0));
        assert_eq!(v(p99, "250us").ok(), Some(0.25));
        assert!(v(p99, "100").unwrap_err().hint.contains("100ms"));
        assert!(v(p99, "5%").is_err());
        assert_eq!(v(ThresholdMetric::FailureRate, "1%").ok(), Some(0.01));
        assert_eq!(v(ThresholdMetric::FailureRate, "0.02").ok(), Some(0.02));
        assert!(v(ThresholdMetric::FailureRate, "1")
            .unwrap_err()
            .hint
            .contains("`1%`"));
        assert!(v(ThresholdMetric::FailureRate, "101%").is_err());
        assert_eq!(v(ThresholdMetric::Rate, "7000/s").ok(), Some(7000.0));
        assert_eq!(v(ThresholdMetric::Rate, "60/m").ok(), Some(1.0));
        assert_eq!(v(ThresholdMetric::Rate, "7000").ok(), Some(7000.0));
        assert!(v(ThresholdMetric::Rate, "7000/ms").is_err());
        assert_eq!(v(ThresholdMetric::Requests, "1_000").ok(), Some(1000.0));
        assert!(v(ThresholdMetric::Requests, "100/s")
            .unwrap_err()
            .hint
            .contains("rate > 100/s"));
        assert!(v(ThresholdMetric::Failures, "-1").is_err());
        assert_eq!(v(ThresholdMetric::Checks, "99.9%").ok(), Some(0.999));
        assert_eq!(v(ThresholdMetric::Checks, "100%").ok(), Some(1.0));
        assert!(v(ThresholdMetric::Checks, "99").is_err());
        assert_eq!(v(ThresholdMetric::ChecksFailed, "10").ok(), Some(10.0));
        assert!(v(ThresholdMetric::ChecksFailed, "1%")
            .unwrap_err()
            .hint
            .contains("checks > 1%"));
    }
}
