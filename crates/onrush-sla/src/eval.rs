//! One threshold against a summary (and, where needed, the histograms).

use onrush_metrics::{MsStats, ScenarioSummary, StepSummary, Summary, Totals};
use onrush_plan::{
    LatencyFamily, LatencyStat, Threshold, ThresholdMetric, ThresholdScope, ValueKind,
};

use crate::hists::{percentile_ms, Histograms};
use crate::{fmt, ThresholdResult};

/// The verdict of `generator: healthy` that passes.
const HEALTHY: &str = "healthy";

/// What a metric came to over a scope.
enum Figure {
    Value(f64),
    /// No value: why (e.g. "no requests").
    Missing(String),
    /// A step of several scenarios whose percentile cannot be merged without histograms:
    /// the value of each scenario's step (label, figure).
    Each(Vec<(String, Result<f64, String>)>),
}

/// The figures a scope selects.
enum Rows<'a> {
    Total(&'a Totals),
    Scenario(&'a ScenarioSummary, Vec<&'a StepSummary>),
    Steps(Vec<&'a StepSummary>),
}

/// Evaluates one threshold. The second value is false when the metric has no value yet (no
/// requests, no verdict): such a failure does not abort a running test.
pub(crate) fn evaluate_one(
    t: &Threshold,
    summary: &Summary,
    verdict: Option<&str>,
    hists: Option<&Histograms>,
) -> (ThresholdResult, bool) {
    let scope = scope_label(&t.scope, summary);
    let limit = match t.metric.kind() {
        ValueKind::Verdict => HEALTHY.to_string(),
        kind => format!("{} {}", t.op, fmt::value(kind, t.value)),
    };
    let result = |measured: Option<f64>, measured_text: String, passed: bool, message: String| {
        ThresholdResult {
            threshold: t.source.clone(),
            scope: scope.clone(),
            measured,
            measured_text,
            passed,
            message,
            limit: limit.clone(),
        }
    };

    if t.scope == ThresholdScope::Generator {
        return match verdict {
            None => (
                result(
                    None,
                    "unknown".into(),
                    false,
                    "the results have no generator verdict, so the load generator's health is unknown".into(),
                ),
                false,
            ),
            Some(v) if v == HEALTHY => (
                result(None, v.into(), true, "the load generator was healthy".into()),
                true,
            ),
            Some(v) => (
                result(
                    None,
                    v.into(),
                    false,
                    format!("the load generator was {v}, expected healthy: onrush itself may have held the load back, so the figures may not be the target's"),
                ),
                true,
            ),
        };
    }

    let name = t.metric.name();
    let kind = t.metric.kind();
    let rows = match select(&t.scope, summary) {
        Ok(rows) => rows,
        Err(why) => {
            return (
                result(
                    None,
                    "not measured".into(),
                    false,
                    format!("{why}: {name} is undefined"),
                ),
                false,
            )
        }
    };
    let figure = match t.metric {
        ThresholdMetric::Checks | ThresholdMetric::ChecksFailed => check_figure(t, summary),
        _ => figure(t, &rows, hists),
    };
    match figure {
        Figure::Value(v) => {
            let passed = t.op.holds(v, t.value);
            let shown = fmt::value(kind, v);
            let mut message = if passed {
                format!("{name} {shown} {limit}")
            } else {
                format!("{name} {shown} is not {limit}")
            };
            if let (ThresholdMetric::Rate10sMin | ThresholdMetric::Rate10sMax, Rows::Total(tot)) =
                (t.metric, &rows)
            {
                if tot.rate_10s_whole_run {
                    message.push_str(
                        " (the run was shorter than 10 full seconds: the whole run's mean rate)",
                    );
                }
            }
            (result(Some(v), shown, passed, message), true)
        }
        Figure::Missing(why) => (
            result(
                None,
                why.clone(),
                false,
                format!("{why} in {scope}: {name} is undefined"),
            ),
            false,
        ),
        Figure::Each(each) => {
            let measured: Vec<(&str, f64)> = each
                .iter()
                .filter_map(|(l, r)| r.as_ref().ok().map(|v| (l.as_str(), *v)))
                .collect();
            if measured.is_empty() {
                let why = each
                    .first()
                    .and_then(|(_, r)| r.as_ref().err().cloned())
                    .unwrap_or_else(|| "no requests".into());
                return (
                    result(
                        None,
                        why.clone(),
                        false,
                        format!("{why} in {scope}: {name} is undefined"),
                    ),
                    false,
                );
            }
            let failing: Vec<&(&str, f64)> = measured
                .iter()
                .filter(|(_, v)| !t.op.holds(*v, t.value))
                .collect();
            // The value shown: the first failing scenario's, else the one nearest the limit.
            let worst = failing.first().copied().copied().unwrap_or_else(|| {
                *measured
                    .iter()
                    .min_by(|a, b| {
                        (a.1 - t.value)
                            .abs()
                            .partial_cmp(&(b.1 - t.value).abs())
                            .unwrap_or(std::cmp::Ordering::Equal)
                    })
                    .expect("not empty")
            });
            let list: Vec<String> = measured
                .iter()
                .map(|(l, v)| format!("{l} {}", fmt::value(kind, *v)))
                .collect();
            let passed = failing.is_empty();
            let message = if passed {
                format!(
                    "{name} per scenario (no histograms to merge them): {}; each {limit}",
                    list.join(", ")
                )
            } else {
                let bad: Vec<String> = failing
                    .iter()
                    .map(|(l, v)| format!("{l} {}", fmt::value(kind, *v)))
                    .collect();
                format!(
                    "{name} per scenario (no histograms to merge them): {} is not {limit} (all: {})",
                    bad.join(", "),
                    list.join(", ")
                )
            };
            (
                result(
                    Some(worst.1),
                    format!("{} ({})", fmt::value(kind, worst.1), worst.0),
                    passed,
                    message,
                ),
                true,
            )
        }
    }
}

fn select<'a>(scope: &ThresholdScope, s: &'a Summary) -> Result<Rows<'a>, String> {
    match scope {
        ThresholdScope::Total | ThresholdScope::Generator => Ok(Rows::Total(&s.totals)),
        ThresholdScope::Scenario(name) => {
            let sc = s
                .scenarios
                .iter()
                .find(|x| &x.name == name)
                .ok_or_else(|| format!("scenario {name} is not in the results"))?;
            // groups are not part of their scenario's figures
            let steps = s
                .steps
                .iter()
                .filter(|x| &x.scenario == name && !x.kind.is_group())
                .collect();
            Ok(Rows::Scenario(sc, steps))
        }
        ThresholdScope::Step { scenario, step } => {
            let rows: Vec<&StepSummary> = s
                .steps
                .iter()
                .filter(|x| &x.name == step && scenario.as_ref().is_none_or(|sc| &x.scenario == sc))
                .collect();
            if rows.is_empty() {
                return Err(format!("{} is not in the results", scope.label()));
            }
            Ok(Rows::Steps(rows))
        }
    }
}

/// The scope as the verdicts, JUnit and the report name it: a step scope naming a group
/// (transaction) says `group`, not `step`.
fn scope_label(scope: &ThresholdScope, s: &Summary) -> String {
    match scope {
        ThresholdScope::Step { scenario, step }
            if s.steps.iter().any(|x| {
                &x.name == step
                    && x.kind.is_group()
                    && scenario.as_ref().is_none_or(|sc| &x.scenario == sc)
            }) =>
        {
            match scenario {
                Some(sc) => format!("group {sc}/{step}"),
                None => format!("group {step}"),
            }
        }
        _ => scope.label(),
    }
}

/// Passes and fails of the checks in the threshold's scope: the run's, a scenario's, or those
/// of the step(s) named (a check belongs to the step it is written on).
fn check_counts(scope: &ThresholdScope, s: &Summary) -> (u64, u64) {
    match scope {
        ThresholdScope::Total | ThresholdScope::Generator => {
            (s.totals.checks.passes, s.totals.checks.fails)
        }
        ThresholdScope::Scenario(name) => s
            .scenarios
            .iter()
            .find(|x| &x.name == name)
            .map_or((0, 0), |x| (x.checks.passes, x.checks.fails)),
        ThresholdScope::Step { scenario, step } => s
            .checks
            .iter()
            .filter(|c| &c.step == step && scenario.as_ref().is_none_or(|sc| &c.scenario == sc))
            .fold((0, 0), |(p, f), c| (p + c.passes, f + c.fails)),
    }
}

/// `checks` (pass rate) and `checks_failed` (count). A scope where no check ran has no value:
/// "no checks" (a check that never ran has not shown anything).
fn check_figure(t: &Threshold, s: &Summary) -> Figure {
    let (passes, fails) = check_counts(&t.scope, s);
    if passes + fails == 0 {
        return Figure::Missing("no checks".into());
    }
    match t.metric {
        ThresholdMetric::ChecksFailed => Figure::Value(fails as f64),
        _ => Figure::Value(passes as f64 / (passes + fails) as f64),
    }
}

fn stats(f: LatencyFamily, s: &StepSummary) -> &MsStats {
    match f {
        LatencyFamily::Latency => &s.latency_ms,
        LatencyFamily::Service => &s.service_ms,
        LatencyFamily::Connect => &s.connect_ms,
        LatencyFamily::Ttfb => &s.ttfb_ms,
    }
}

fn total_stats(f: LatencyFamily, t: &Totals) -> &MsStats {
    match f {
        LatencyFamily::Latency => &t.latency_ms,
        LatencyFamily::Service => &t.service_ms,
        LatencyFamily::Connect => &t.connect_ms,
        LatencyFamily::Ttfb => &t.ttfb_ms,
    }
}

/// Why a latency has no value.
fn none_recorded(f: LatencyFamily, requests: u64) -> String {
    if f == LatencyFamily::Connect && requests > 0 {
        "no requests opened a connection".into()
    } else {
        "no requests".into()
    }
}

/// A statistic from one summary row; `None` for a percentile the summary does not hold.
fn from_stats(m: &MsStats, stat: LatencyStat) -> Option<f64> {
    match stat {
        LatencyStat::Min => Some(m.min),
        LatencyStat::Mean => Some(m.mean),
        LatencyStat::Max => Some(m.max),
        LatencyStat::Percentile(p) => [
            (50.0, m.p50),
            (90.0, m.p90),
            (95.0, m.p95),
            (99.0, m.p99),
            (99.9, m.p999),
        ]
        .iter()
        .find(|(q, _)| *q == p)
        .map(|(_, v)| *v),
    }
}

/// Min, max and mean of several rows together (the mean weighted by counts); `None` for
/// percentiles and when no row has a value.
fn merge_stats(rows: &[&MsStats], stat: LatencyStat) -> Option<f64> {
    let rows: Vec<&&MsStats> = rows.iter().filter(|m| m.count > 0).collect();
    if rows.is_empty() {
        return None;
    }
    match stat {
        LatencyStat::Min => rows.iter().map(|m| m.min).reduce(f64::min),
        LatencyStat::Max => rows.iter().map(|m| m.max).reduce(f64::max),
        LatencyStat::Mean => {
            let n: u64 = rows.iter().map(|m| m.count).sum();
            let sum: f64 = rows.iter().map(|m| m.mean * m.count as f64).sum();
            Some(((sum / n as f64) * 1000.0).round() / 1000.0)
        }
        LatencyStat::Percentile(_) => None,
    }
}

fn needs_histograms_msg(name: &str) -> Figure {
    Figure::Missing(format!(
        "{name} needs the run's histograms (intervals.jsonl), which were not given"
    ))
}

fn figure(t: &Threshold, rows: &Rows, hists: Option<&Histograms>) -> Figure {
    let ratio = |num: u64, den: u64, none: &str| {
        if den == 0 {
            Figure::Missing(none.to_string())
        } else {
            Figure::Value(num as f64 / den as f64)
        }
    };
    let name = t.metric.name();
    match (t.metric, rows) {
        (ThresholdMetric::Latency { family, stat }, rows) => {
            latency(family, stat, rows, hists, &name)
        }
        (ThresholdMetric::Requests, Rows::Total(x)) => Figure::Value(x.requests as f64),
        (ThresholdMetric::Failures, Rows::Total(x)) => Figure::Value(x.failures as f64),
        (ThresholdMetric::FailureRate, Rows::Total(x)) => {
            ratio(x.failures, x.requests, "no requests")
        }
        (ThresholdMetric::Rate, Rows::Total(x)) => Figure::Value(x.rps),
        (ThresholdMetric::Iterations, Rows::Total(x)) => Figure::Value(x.iterations as f64),
        (ThresholdMetric::DroppedIterations, Rows::Total(x)) => {
            Figure::Value(x.dropped_iterations as f64)
        }
        (ThresholdMetric::DroppedRate, Rows::Total(x)) => ratio(
            x.dropped_iterations,
            x.iterations + x.dropped_iterations,
            "no iterations were due",
        ),
        (ThresholdMetric::Rate10sMin, Rows::Total(x)) => Figure::Value(x.rate_10s_min),
        (ThresholdMetric::Rate10sMax, Rows::Total(x)) => Figure::Value(x.rate_10s_max),

        (ThresholdMetric::Requests, Rows::Scenario(x, _)) => Figure::Value(x.requests as f64),
        (ThresholdMetric::Failures, Rows::Scenario(x, _)) => Figure::Value(x.failures as f64),
        (ThresholdMetric::FailureRate, Rows::Scenario(x, _)) => {
            ratio(x.failures, x.requests, "no requests")
        }
        (ThresholdMetric::Rate, Rows::Scenario(x, _)) => Figure::Value(x.rps),
        (ThresholdMetric::Iterations, Rows::Scenario(x, _)) => Figure::Value(x.iterations as f64),
        (ThresholdMetric::DroppedIterations, Rows::Scenario(x, _)) => {
            Figure::Value(x.dropped_iterations as f64)
        }
        (ThresholdMetric::DroppedRate, Rows::Scenario(x, _)) => ratio(
            x.dropped_iterations,
            x.iterations + x.dropped_iterations,
            "no iterations were due",
        ),

        (ThresholdMetric::Requests, Rows::Steps(r)) => {
            Figure::Value(r.iter().map(|s| s.requests).sum::<u64>() as f64)
        }
        (ThresholdMetric::Failures, Rows::Steps(r)) => {
            Figure::Value(r.iter().map(|s| s.failures).sum::<u64>() as f64)
        }
        (ThresholdMetric::FailureRate, Rows::Steps(r)) => ratio(
            r.iter().map(|s| s.failures).sum(),
            r.iter().map(|s| s.requests).sum(),
            "no requests",
        ),
        (ThresholdMetric::Rate, Rows::Steps(r)) => Figure::Value(r.iter().map(|s| s.rps).sum()),

        // The plan loader refuses these combinations; a hand-made Threshold may still hold one.
        (ThresholdMetric::GeneratorHealthy, _) => {
            Figure::Missing("`healthy` is only about the `generator` scope".into())
        }
        (_, _) => Figure::Missing(format!("{name} is not measured for this scope")),
    }
}

fn latency(
    family: LatencyFamily,
    stat: LatencyStat,
    rows: &Rows,
    hists: Option<&Histograms>,
    name: &str,
) -> Figure {
    // Groups count only when a scope names them (a step scope); never in a whole test's or a
    // scenario's figures.
    let groups = matches!(rows, Rows::Steps(_));
    let from_hists = |keep: &dyn Fn(&str, &str) -> bool| -> Figure {
        let LatencyStat::Percentile(p) = stat else {
            unreachable!("only percentiles come from histograms")
        };
        match hists {
            None => needs_histograms_msg(name),
            Some(h) => match h.merged(family, groups, keep) {
                Some(h) => Figure::Value(percentile_ms(&h, p)),
                None => Figure::Missing("no requests in the histograms".into()),
            },
        }
    };
    match rows {
        Rows::Total(t) => {
            let m = total_stats(family, t);
            if m.count == 0 {
                return Figure::Missing(none_recorded(family, t.requests));
            }
            match from_stats(m, stat) {
                Some(v) => Figure::Value(v),
                None => from_hists(&|_, _| true),
            }
        }
        Rows::Scenario(sc, steps) => {
            if family == LatencyFamily::Latency {
                let m = &sc.latency_ms;
                if m.count == 0 {
                    return Figure::Missing("no requests".into());
                }
                return match from_stats(m, stat) {
                    Some(v) => Figure::Value(v),
                    None => from_hists(&|s, _| s == sc.name),
                };
            }
            let all: Vec<&MsStats> = steps.iter().map(|s| stats(family, s)).collect();
            if all.iter().all(|m| m.count == 0) {
                return Figure::Missing(none_recorded(family, sc.requests));
            }
            match merge_stats(&all, stat) {
                Some(v) => Figure::Value(v),
                None => from_hists(&|s, _| s == sc.name),
            }
        }
        Rows::Steps(steps) => {
            let requests: u64 = steps.iter().map(|s| s.requests).sum();
            let all: Vec<&MsStats> = steps.iter().map(|s| stats(family, s)).collect();
            if all.iter().all(|m| m.count == 0) {
                return Figure::Missing(none_recorded(family, requests));
            }
            if let [one] = all.as_slice() {
                return match from_stats(one, stat) {
                    Some(v) => Figure::Value(v),
                    None => from_hists(&|s, n| s == steps[0].scenario && n == steps[0].name),
                };
            }
            if let Some(v) = merge_stats(&all, stat) {
                return Figure::Value(v);
            }
            // A percentile over a step of several scenarios: exact with histograms, else
            // each scenario's step on its own.
            if hists.is_some() {
                return from_hists(&|s, n| steps.iter().any(|r| r.scenario == s && r.name == n));
            }
            let each: Vec<(String, Result<f64, String>)> = steps
                .iter()
                .map(|s| {
                    let m = stats(family, s);
                    let label = format!("{}/{}", s.scenario, s.name);
                    let v = if m.count == 0 {
                        Err(none_recorded(family, s.requests))
                    } else {
                        from_stats(m, stat).ok_or_else(|| {
                            format!("{name} needs the run's histograms (intervals.jsonl), which were not given")
                        })
                    };
                    (label, v)
                })
                .collect();
            if each.iter().all(|(_, v)| v.is_err()) {
                if let Some((_, Err(why))) = each
                    .iter()
                    .find(|(_, v)| matches!(v, Err(w) if w.contains("histograms")))
                {
                    return Figure::Missing(why.clone());
                }
            }
            Figure::Each(each)
        }
    }
}
