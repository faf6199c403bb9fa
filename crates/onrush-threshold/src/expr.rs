//! The threshold expression language: `[SCOPE:] METRIC OP VALUE` split, its metric named and its
//! value read in the metric's unit. What the scope names (the plan's scenarios and steps) is the
//! plan's to resolve; errors here say what is wrong and where in the text, and the plan turns
//! them into errors at the file's line.

use onrush_units::did_you_mean;

use crate::{CompareOp, LatencyFamily, LatencyStat, ThresholdMetric, ValueKind};

pub const OPERATORS: &str = "`<`, `<=`, `>`, `>=`, `==` or `!=`";
pub const EXAMPLE: &str =
    "e.g. `p99 < 100ms`, `failure_rate < 1%`, `rate > 500/s` or `home: p95 < 50ms`";

/// Metric names offered in "did you mean" hints and listed in messages.
pub const METRIC_NAMES: [&str; 28] = [
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
pub const METRICS_EXPECTED: &str = "a latency statistic (`p50`, `p90`, `p95`, `p99`, `p99.9`, any `pNN.N`, `min`, `mean`, `max`; `service_`, `connect_` or `ttfb_` in front for those times), `failure_rate`, `failures`, `requests`, `rate`, `iterations`, `dropped_iterations`, `dropped_rate`, `rate_10s_min`, `rate_10s_max`, `checks` (pass rate of the checks) or `checks_failed`";

/// What is wrong with part of an expression; `at` is the text to point at.
#[derive(Debug)]
pub struct ExprError {
    pub message: String,
    pub hint: String,
    pub at: Option<String>,
    /// Look for `at` from the right (metric, operator, value) rather than from the left (scope).
    pub from_right: bool,
}

pub fn expr_err(
    message: impl Into<String>,
    hint: impl Into<String>,
    at: Option<&str>,
) -> ExprError {
    ExprError {
        message: message.into(),
        hint: hint.into(),
        at: at.map(str::to_string),
        from_right: true,
    }
}

/// An error about the scope, found from the left of the expression.
pub fn scope_err(message: impl Into<String>, hint: impl Into<String>, at: &str) -> ExprError {
    ExprError {
        from_right: false,
        ..expr_err(message, hint, Some(at))
    }
}

/// `[scope:] metric [op value]`, split but not interpreted.
#[derive(Debug)]
pub struct Parts<'t> {
    pub scope: Option<&'t str>,
    pub metric: &'t str,
    pub op: Option<(CompareOp, &'t str)>,
    pub value: &'t str,
}

pub fn is_op_char(c: char) -> bool {
    matches!(c, '<' | '>' | '=' | '!')
}

/// Splits from the right: the value never contains an operator or `:`, while scope names
/// (step names such as `GET /search?q=x`) may contain anything.
pub fn split_expr(text: &str) -> Result<Parts<'_>, ExprError> {
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
pub fn parse_metric(text: &str) -> Result<ThresholdMetric, ExprError> {
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
pub fn parse_value(metric: &ThresholdMetric, text: &str) -> Result<f64, ExprError> {
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
            let d = onrush_units::parse_duration(t).map_err(|e| expr_err(e.message, e.hint, at))?;
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
            onrush_units::parse_rate(t).map_err(|e| {
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
