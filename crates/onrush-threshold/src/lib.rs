//! Thresholds (SLAs): the language of `thresholds:` entries such as `home: p95 < 50ms`, and
//! their compiled form.
//!
//! `expr.rs` reads an expression (its scope text, metric, operator and value in the metric's
//! unit); onrush-plan resolves the scope against the plan's scenarios and steps and reports
//! errors at the file's line; `onrush-sla` evaluates thresholds against a run's results. The
//! format is described in `docs/thresholds.md` of the repository.

use std::fmt;
use std::time::Duration;

pub mod expr;

/// One threshold: `[SCOPE:] METRIC OP VALUE`, checked against the results at the end of the run
/// (and, with [`abort_on_fail`](Self::abort_on_fail), while it runs).
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression with plan variables substituted, e.g. `home: p95 < 50ms` (a
    /// scenario-level threshold keeps the text without its implied scope: `p90 < 20ms`).
    pub source: String,
    /// What the metric is measured over.
    pub scope: ThresholdScope,
    pub metric: ThresholdMetric,
    pub op: CompareOp,
    /// The limit, in the unit of [`ThresholdMetric::kind`]: milliseconds for times, a fraction
    /// for rates of failures and the checks' pass rate (`1%` = 0.01), per second for request rates, a plain number for
    /// counts; 1 for `generator: healthy`.
    pub value: f64,
    /// `abort_on_fail: true`: stop the test as soon as the threshold fails on the figures so
    /// far (once [`grace`](Self::grace) has passed since the start).
    pub abort_on_fail: bool,
    /// `grace:` time from the start of the run during which `abort_on_fail` does not stop it
    /// (default 0).
    pub grace: Duration,
    /// 1-based line of the threshold in the plan file.
    pub line: usize,
    /// Path of the entry in the plan, e.g. `thresholds[2]` or `scenarios[0].thresholds[0]`.
    pub field: String,
}

impl Threshold {
    /// True when the figures of `summary.json` alone cannot give this metric, so the evaluation
    /// needs the run's histograms (`intervals.jsonl`): a percentile other than p50, p90, p95, p99
    /// and p99.9, or a percentile of `service`/`connect`/`ttfb` over a whole scenario.
    pub fn needs_histograms(&self) -> bool {
        match self.metric {
            ThresholdMetric::Latency { family, stat } => {
                let LatencyStat::Percentile(p) = stat else {
                    return false;
                };
                !LatencyStat::in_summary(p)
                    || (family != LatencyFamily::Latency
                        && matches!(self.scope, ThresholdScope::Scenario(_)))
            }
            _ => false,
        }
    }
}

/// What a threshold's metric is measured over.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ThresholdScope {
    /// No scope at plan level: the whole test, all scenarios and steps.
    Total,
    /// A scenario (a scenario name as scope, or any threshold under a scenario's `thresholds:`).
    Scenario(String),
    /// A step (metric name). `scenario: None` when the name is a step of several scenarios: the
    /// step's figures in all of them together.
    Step {
        scenario: Option<String>,
        step: String,
    },
    /// `generator: healthy`: the load generator's own health verdict.
    Generator,
}

impl ThresholdScope {
    /// `total`, `scenario closed`, `step closed/home`, `step home` (all scenarios), `generator`.
    pub fn label(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ThresholdScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThresholdScope::Total => write!(f, "total"),
            ThresholdScope::Scenario(s) => write!(f, "scenario {s}"),
            ThresholdScope::Step {
                scenario: Some(s),
                step,
            } => write!(f, "step {s}/{step}"),
            ThresholdScope::Step {
                scenario: None,
                step,
            } => write!(f, "step {step}"),
            ThresholdScope::Generator => write!(f, "generator"),
        }
    }
}

/// The measured quantity of a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThresholdMetric {
    /// A latency statistic: `p99`, `mean`, `max`, `service_p99`, `connect_mean`, `ttfb_p95`, ...
    Latency {
        family: LatencyFamily,
        stat: LatencyStat,
    },
    /// `failure_rate`: failed requests / requests.
    FailureRate,
    /// `failures`: number of failed requests.
    Failures,
    /// `requests`: number of requests completed.
    Requests,
    /// `rate`: requests per second over the run (`rps` of summary.json).
    Rate,
    /// `iterations`: iterations completed (whole test or scenario).
    Iterations,
    /// `dropped_iterations`: open-model iterations not started because all VUs were busy.
    DroppedIterations,
    /// `dropped_rate`: dropped / (completed + dropped) iterations.
    DroppedRate,
    /// `rate_10s_min`: lowest request rate of any 10-second window (whole test only).
    Rate10sMin,
    /// `rate_10s_max`: highest request rate of any 10-second window (whole test only).
    Rate10sMax,
    /// `checks`: the pass rate of the checks in the scope, passes / (passes + fails).
    Checks,
    /// `checks_failed`: the number of failed checks in the scope.
    ChecksFailed,
    /// `generator: healthy`: the load generator's verdict is `healthy`.
    GeneratorHealthy,
}

/// Which latency a [`ThresholdMetric::Latency`] is about (the `*_ms` objects of summary.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LatencyFamily {
    /// `p99`, `latency_p99`: from the intended start (open model: the scheduled time).
    Latency,
    /// `service_p99`: from the moment the request was actually sent.
    Service,
    /// `connect_p99`: connection set-up, for requests that opened a connection.
    Connect,
    /// `ttfb_p99`: from send to the first response byte.
    Ttfb,
}

impl LatencyFamily {
    /// The metric name prefix: `""`, `service_`, `connect_`, `ttfb_`.
    pub fn prefix(&self) -> &'static str {
        match self {
            LatencyFamily::Latency => "",
            LatencyFamily::Service => "service_",
            LatencyFamily::Connect => "connect_",
            LatencyFamily::Ttfb => "ttfb_",
        }
    }
}

/// A statistic of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyStat {
    Min,
    Mean,
    Max,
    /// `pNN`: the percentile, in (0, 100) (`p99.9` = 99.9; `p999` is read as 99.9).
    Percentile(f64),
}

impl LatencyStat {
    /// The percentiles that summary.json holds: 50, 90, 95, 99 and 99.9.
    pub fn in_summary(p: f64) -> bool {
        [50.0, 90.0, 95.0, 99.0, 99.9].contains(&p)
    }
}

/// The unit of a metric's values (and of [`Threshold::value`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Milliseconds; written `100ms`, `1.5s`, `250us`.
    Millis,
    /// A fraction; written `1%`, `0.5%` or `0.01`.
    Fraction,
    /// Per second; written `7000/s`, `420000/m` or `7000`.
    PerSecond,
    /// A count; written as a plain number.
    Count,
    /// The generator verdict (no value).
    Verdict,
}

impl ThresholdMetric {
    /// The canonical name, as accepted in a threshold: `p99`, `p99.9`, `service_mean`,
    /// `failure_rate`, `rate_10s_min`, `healthy`, ...
    pub fn name(&self) -> String {
        match self {
            ThresholdMetric::Latency { family, stat } => {
                let stat = match stat {
                    LatencyStat::Min => "min".to_string(),
                    LatencyStat::Mean => "mean".to_string(),
                    LatencyStat::Max => "max".to_string(),
                    LatencyStat::Percentile(p) => format!("p{}", show_number(*p)),
                };
                format!("{}{stat}", family.prefix())
            }
            ThresholdMetric::FailureRate => "failure_rate".into(),
            ThresholdMetric::Failures => "failures".into(),
            ThresholdMetric::Requests => "requests".into(),
            ThresholdMetric::Rate => "rate".into(),
            ThresholdMetric::Iterations => "iterations".into(),
            ThresholdMetric::DroppedIterations => "dropped_iterations".into(),
            ThresholdMetric::DroppedRate => "dropped_rate".into(),
            ThresholdMetric::Rate10sMin => "rate_10s_min".into(),
            ThresholdMetric::Rate10sMax => "rate_10s_max".into(),
            ThresholdMetric::Checks => "checks".into(),
            ThresholdMetric::ChecksFailed => "checks_failed".into(),
            ThresholdMetric::GeneratorHealthy => "healthy".into(),
        }
    }

    /// The unit of the metric's values.
    pub fn kind(&self) -> ValueKind {
        match self {
            ThresholdMetric::Latency { .. } => ValueKind::Millis,
            ThresholdMetric::FailureRate
            | ThresholdMetric::DroppedRate
            | ThresholdMetric::Checks => ValueKind::Fraction,
            ThresholdMetric::Rate | ThresholdMetric::Rate10sMin | ThresholdMetric::Rate10sMax => {
                ValueKind::PerSecond
            }
            ThresholdMetric::Failures
            | ThresholdMetric::Requests
            | ThresholdMetric::Iterations
            | ThresholdMetric::DroppedIterations
            | ThresholdMetric::ChecksFailed => ValueKind::Count,
            ThresholdMetric::GeneratorHealthy => ValueKind::Verdict,
        }
    }
}

/// `<`, `<=`, `>`, `>=`, `==`, `!=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CompareOp {
    pub fn as_str(&self) -> &'static str {
        match self {
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
            CompareOp::Eq => "==",
            CompareOp::Ne => "!=",
        }
    }

    /// Parses an operator as written.
    pub fn parse(s: &str) -> Option<CompareOp> {
        Some(match s {
            "<" => CompareOp::Lt,
            "<=" => CompareOp::Le,
            ">" => CompareOp::Gt,
            ">=" => CompareOp::Ge,
            "==" => CompareOp::Eq,
            "!=" => CompareOp::Ne,
            _ => return None,
        })
    }

    /// `measured OP limit`. `==` and `!=` allow a relative difference of 1e-9 (figures are
    /// rounded to the microsecond and rates are quotients).
    pub fn holds(&self, measured: f64, limit: f64) -> bool {
        let equal = (measured - limit).abs() <= 1e-9 * measured.abs().max(limit.abs());
        match self {
            CompareOp::Lt => measured < limit,
            CompareOp::Le => measured <= limit || equal,
            CompareOp::Gt => measured > limit,
            CompareOp::Ge => measured >= limit || equal,
            CompareOp::Eq => equal,
            CompareOp::Ne => !equal,
        }
    }
}

impl fmt::Display for CompareOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `99`, `99.9`, `0.5`: a number without a useless fraction.
fn show_number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ops() {
        let m = ThresholdMetric::Latency {
            family: LatencyFamily::Service,
            stat: LatencyStat::Percentile(99.9),
        };
        assert_eq!(m.name(), "service_p99.9");
        assert_eq!(m.kind(), ValueKind::Millis);
        assert_eq!(ThresholdMetric::DroppedRate.kind(), ValueKind::Fraction);
        assert_eq!(ThresholdMetric::Checks.kind(), ValueKind::Fraction);
        assert_eq!(ThresholdMetric::ChecksFailed.kind(), ValueKind::Count);
        assert_eq!(ThresholdMetric::ChecksFailed.name(), "checks_failed");
        assert!(CompareOp::Lt.holds(1.0, 2.0));
        assert!(!CompareOp::Lt.holds(2.0, 2.0));
        assert!(CompareOp::Le.holds(2.0, 2.0));
        assert!(CompareOp::Eq.holds(0.1 + 0.2, 0.3));
        assert!(CompareOp::Ne.holds(1.0, 1.1));
        assert_eq!(CompareOp::parse(">="), Some(CompareOp::Ge));
        assert_eq!(CompareOp::parse("=>"), None);
        let step = ThresholdScope::Step {
            scenario: Some("closed".into()),
            step: "home".into(),
        };
        assert_eq!(step.label(), "step closed/home");
        assert_eq!(ThresholdScope::Total.label(), "total");
    }
}
