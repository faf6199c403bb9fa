//! Comparison with a baseline run: the summary figures side by side with their change, and
//! regressions flagged.
//!
//! Rules (also in docs/report.md): latency percentiles and mean 10% or more and at least
//! 0.2 ms higher, request rates 10% or more lower, failure rate or share of dropped iterations
//! higher (from zero, or by 10% or more of the baseline's and at least 0.1 percentage point)
//! are regressions; the mirror changes are improvements; counts and `max` are shown without a
//! flag.

use std::fmt::Write as _;

use onrush_metrics::{MsStats, Summary};

use crate::fmt::{duration, esc, ms, pct, rate, thousands, utc};
use crate::input::Run;
use crate::page::overall;

/// Which direction is better.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Better {
    Lower,
    Higher,
    /// Informational: never flagged.
    Neither,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Unit {
    Count,
    Rate,
    Ms,
    Fraction,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flag {
    Regression,
    Improvement,
    Same,
}

/// The change threshold of the rules.
const TEN_PERCENT: f64 = 0.10;

/// The smallest change of a latency that is flagged, whatever its relative size: two runs of
/// the same sub-millisecond service differ by tens of microseconds (scheduling, timers), and
/// 0.405 -> 0.456 ms (+12.6%) is that noise, not a regression. 0.2 ms still flags a
/// sub-millisecond service that doubles (0.4 -> 0.8 ms).
pub(crate) const LATENCY_NOISE_MS: f64 = 0.2;

/// The smallest change of a failure rate or dropped share that is flagged (0.1 percentage
/// point), except from zero: a first failure is always flagged.
pub(crate) const FRACTION_NOISE: f64 = 0.001;

/// Flags a change from `base` to `new` of a figure in `unit`: it must pass 10% of the
/// baseline and, for latencies and fractions, the absolute noise floor above.
pub(crate) fn flag(base: f64, new: f64, better: Better, unit: Unit) -> Flag {
    let floor = match unit {
        Unit::Ms => LATENCY_NOISE_MS,
        Unit::Fraction if base > 0.0 => FRACTION_NOISE,
        _ => 0.0,
    };
    let big = (new - base).abs() >= floor - 1e-12;
    let up = big
        && if base == 0.0 {
            new > 0.0
        } else {
            new >= base * (1.0 + TEN_PERCENT) - 1e-12
        };
    let down = big && base > 0.0 && new <= base * (1.0 - TEN_PERCENT) + 1e-12;
    match better {
        Better::Lower if up => Flag::Regression,
        Better::Lower if down => Flag::Improvement,
        Better::Higher if down => Flag::Regression,
        Better::Higher if up => Flag::Improvement,
        _ => Flag::Same,
    }
}

/// "+12.3%" (or "new" from zero, "±0%" for none, "±0.0%" for a change under 0.05%: never
/// "-0.0%", which a reader takes for a decrease).
pub(crate) fn delta(base: f64, new: f64) -> String {
    if base == new {
        "±0%".into()
    } else if base == 0.0 {
        "new".into()
    } else {
        let tenths = ((new - base) / base * 1000.0).round();
        if tenths == 0.0 {
            "±0.0%".into()
        } else {
            format!("{:+.1}%", tenths / 10.0)
        }
    }
}

fn show(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Count => thousands(v as u64),
        Unit::Rate => format!("{} /s", rate(v)),
        Unit::Ms => ms(v),
        Unit::Fraction => pct(v),
    }
}

pub(crate) struct Row {
    pub label: String,
    pub base: f64,
    pub new: f64,
    pub unit: Unit,
    pub better: Better,
}

impl Row {
    fn flag(&self) -> Flag {
        flag(self.base, self.new, self.better, self.unit)
    }
}

/// A run compared with its baseline.
pub(crate) struct Comparison<'a> {
    run: &'a Run,
    base: &'a Run,
    pub rows: Vec<Row>,
    /// Per step matched by (scenario, name): (label, rows for rate, p99, failure rate).
    pub steps: Vec<(String, Option<[Row; 3]>)>,
}

fn lat_rows(rows: &mut Vec<Row>, prefix: &str, b: &MsStats, n: &MsStats) {
    let items = [
        ("mean", b.mean, n.mean, Better::Lower),
        ("p50", b.p50, n.p50, Better::Lower),
        ("p90", b.p90, n.p90, Better::Lower),
        ("p95", b.p95, n.p95, Better::Lower),
        ("p99", b.p99, n.p99, Better::Lower),
        ("p99.9", b.p999, n.p999, Better::Lower),
        ("max", b.max, n.max, Better::Neither),
    ];
    for (label, base, new, better) in items {
        let better = if b.count == 0 || n.count == 0 {
            Better::Neither
        } else {
            better
        };
        rows.push(Row {
            label: format!("{prefix} {label}"),
            base,
            new,
            unit: Unit::Ms,
            better,
        });
    }
}

fn row(label: &str, base: f64, new: f64, unit: Unit, better: Better) -> Row {
    Row {
        label: label.into(),
        base,
        new,
        unit,
        better,
    }
}

/// dropped / (completed + dropped): comparable between runs of different lengths.
fn dropped_share(t: &onrush_metrics::Totals) -> f64 {
    let due = t.iterations + t.dropped_iterations;
    if due == 0 {
        0.0
    } else {
        t.dropped_iterations as f64 / due as f64
    }
}

fn total_rows(b: &Summary, n: &Summary) -> Vec<Row> {
    let (bt, nt) = (&b.totals, &n.totals);
    let mut rows = vec![
        row(
            "requests",
            bt.requests as f64,
            nt.requests as f64,
            Unit::Count,
            Better::Neither,
        ),
        row(
            "mean request rate",
            bt.rps,
            nt.rps,
            Unit::Rate,
            Better::Higher,
        ),
        row(
            "highest 10-s mean rate",
            bt.rate_10s_max,
            nt.rate_10s_max,
            Unit::Rate,
            Better::Higher,
        ),
        row(
            "lowest 10-s mean rate",
            bt.rate_10s_min,
            nt.rate_10s_min,
            Unit::Rate,
            Better::Higher,
        ),
        row(
            "highest 1-s rate",
            bt.rate_1s_max,
            nt.rate_1s_max,
            Unit::Rate,
            Better::Higher,
        ),
        row(
            "failure rate",
            bt.failure_rate,
            nt.failure_rate,
            Unit::Fraction,
            Better::Lower,
        ),
        row(
            "iterations",
            bt.iterations as f64,
            nt.iterations as f64,
            Unit::Count,
            Better::Neither,
        ),
        row(
            "dropped iterations",
            bt.dropped_iterations as f64,
            nt.dropped_iterations as f64,
            Unit::Count,
            Better::Neither,
        ),
        row(
            "dropped share of iterations due",
            dropped_share(bt),
            dropped_share(nt),
            Unit::Fraction,
            Better::Lower,
        ),
    ];
    // A run shorter than 10 s has no 10-second window (its figures are the whole-run mean):
    // comparing them would compare unlike things.
    if bt.rate_10s_whole_run || nt.rate_10s_whole_run {
        rows.retain(|r| !r.label.contains("10-s"));
    }
    lat_rows(&mut rows, "latency", &bt.latency_ms, &nt.latency_ms);
    rows.push(row(
        "connections opened",
        bt.connections_opened as f64,
        nt.connections_opened as f64,
        Unit::Count,
        Better::Neither,
    ));
    rows.push(row(
        "peak active VUs",
        bt.active_vus_max as f64,
        nt.active_vus_max as f64,
        Unit::Count,
        Better::Neither,
    ));
    rows
}

impl<'a> Comparison<'a> {
    pub fn new(run: &'a Run, base: &'a Run) -> Comparison<'a> {
        let (b, n) = (&base.summary, &run.summary);
        let mut steps = Vec::new();
        for st in &n.steps {
            let label = format!("{} / {}", st.scenario, st.name);
            let old = b
                .steps
                .iter()
                .find(|o| o.scenario == st.scenario && o.name == st.name);
            steps.push((
                label,
                old.map(|o| {
                    let lat = if o.latency_ms.count == 0 || st.latency_ms.count == 0 {
                        Better::Neither
                    } else {
                        Better::Lower
                    };
                    [
                        row("req/s", o.rps, st.rps, Unit::Rate, Better::Higher),
                        row("p99", o.latency_ms.p99, st.latency_ms.p99, Unit::Ms, lat),
                        row(
                            "failed",
                            o.failure_rate,
                            st.failure_rate,
                            Unit::Fraction,
                            Better::Lower,
                        ),
                    ]
                }),
            ));
        }
        for o in &b.steps {
            if !n
                .steps
                .iter()
                .any(|st| st.scenario == o.scenario && st.name == o.name)
            {
                steps.push((
                    format!("{} / {} (only in the baseline)", o.scenario, o.name),
                    None,
                ));
            }
        }
        Comparison {
            run,
            base,
            rows: total_rows(b, n),
            steps,
        }
    }

    /// Regressions among the total figures and the steps.
    pub fn regressions(&self) -> usize {
        let steps = self.steps.iter().filter_map(|(_, r)| r.as_ref()).flatten();
        self.rows
            .iter()
            .chain(steps)
            .filter(|r| r.flag() == Flag::Regression)
            .count()
    }

    pub fn render(&self, out: &mut String) {
        let (b, n) = (&self.base.summary, &self.run.summary);
        let regress = self.regressions();
        let _ = write!(
            out,
            r#"<section id="comparison" class="block" data-regressions="{regress}"><h2>Comparison with the baseline</h2>
<div class="cards two-up"><div class="card"><div class="label">This run</div><div class="value small">{}</div><div class="detail">{} · {} · {}</div></div>
<div class="card"><div class="label">Baseline</div><div class="value small">{}</div><div class="detail">{} · {} · {} · <code>{}</code></div></div></div>
<p class="note">Flagged as regressions: latency (mean, p50-p99.9) 10% or more and at least 0.2 ms higher, request rates 10% or more lower, failure rate or share of dropped iterations up by 10% or more and at least 0.1 percentage point (or from zero). Smaller changes are measurement noise. Totals: {}.</p>"#,
            esc(&n.run.plan),
            utc(n.run.start_unix_ms),
            duration(n.run.duration_s),
            overall(self.run).1,
            esc(&b.run.plan),
            utc(b.run.start_unix_ms),
            duration(b.run.duration_s),
            overall(self.base).1,
            esc(&self.base.dir.display().to_string()),
            match regress {
                0 => "no regression".to_string(),
                1 => "1 regression".to_string(),
                r => format!("{r} regressions"),
            }
        );
        out.push_str(r#"<div class="scroll"><table class="grid compare"><thead><tr><th>figure</th><th class="num">baseline</th><th class="num">this run</th><th class="num">change</th><th></th></tr></thead><tbody>"#);
        for r in &self.rows {
            cells(out, &r.label, r);
        }
        out.push_str("</tbody></table></div>");
        out.push_str(r#"<h3>Per step</h3><div class="scroll"><table class="grid compare"><thead><tr><th>scenario / step</th><th class="num">req/s baseline</th><th class="num">this run</th><th class="num">change</th><th class="num">p99 baseline</th><th class="num">this run</th><th class="num">change</th><th class="num">failed baseline</th><th class="num">this run</th><th></th></tr></thead><tbody>"#);
        for (label, rows) in &self.steps {
            let _ = write!(out, "<tr><td>{}</td>", esc(label));
            match rows {
                None if label.ends_with("(only in the baseline)") => {
                    out.push_str(r#"<td colspan="9" class="what">-</td>"#)
                }
                None => out
                    .push_str(r#"<td colspan="9" class="what">new step: not in the baseline</td>"#),
                Some([rps, p99, failed]) => {
                    for r in [rps, p99] {
                        let _ = write!(
                            out,
                            r#"<td class="num">{}</td><td class="num">{}</td><td class="num {}">{}</td>"#,
                            show(r.base, r.unit),
                            show(r.new, r.unit),
                            flag_class(r.flag()),
                            delta(r.base, r.new)
                        );
                    }
                    let worst = [rps, p99, failed].iter().map(|r| r.flag()).fold(
                        Flag::Same,
                        |a, f| match (a, f) {
                            (Flag::Regression, _) | (_, Flag::Regression) => Flag::Regression,
                            (Flag::Improvement, _) | (_, Flag::Improvement) => Flag::Improvement,
                            _ => Flag::Same,
                        },
                    );
                    let _ = write!(
                        out,
                        r#"<td class="num">{}</td><td class="num {}">{}</td><td>{}</td>"#,
                        show(failed.base, failed.unit),
                        flag_class(failed.flag()),
                        show(failed.new, failed.unit),
                        flag_tag(worst)
                    );
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div></section>\n");
    }
}

fn flag_class(f: Flag) -> &'static str {
    match f {
        Flag::Regression => "bad",
        Flag::Improvement => "good",
        Flag::Same => "",
    }
}

fn flag_tag(f: Flag) -> &'static str {
    match f {
        Flag::Regression => r#"<span class="tag fail">regression</span>"#,
        Flag::Improvement => r#"<span class="tag pass">improved</span>"#,
        Flag::Same => "",
    }
}

fn cells(out: &mut String, label: &str, r: &Row) {
    let f = r.flag();
    let _ = write!(
        out,
        r#"<tr class="{}"><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num {}">{}</td><td>{}</td></tr>"#,
        flag_class(f),
        esc(label),
        show(r.base, r.unit),
        show(r.new, r.unit),
        flag_class(f),
        delta(r.base, r.new),
        flag_tag(f)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let c = Unit::Count;
        assert_eq!(flag(100.0, 110.0, Better::Lower, c), Flag::Regression);
        assert_eq!(flag(100.0, 109.0, Better::Lower, c), Flag::Same);
        assert_eq!(flag(100.0, 90.0, Better::Lower, c), Flag::Improvement);
        assert_eq!(flag(100.0, 90.0, Better::Higher, c), Flag::Regression);
        assert_eq!(flag(100.0, 95.0, Better::Higher, c), Flag::Same);
        assert_eq!(flag(0.0, 0.001, Better::Lower, c), Flag::Regression);
        assert_eq!(flag(0.0, 0.0, Better::Lower, c), Flag::Same);
        assert_eq!(flag(1.0, 50.0, Better::Neither, c), Flag::Same);
    }

    /// Microsecond noise is not a regression (0.405 -> 0.456 ms used to be flagged); a real
    /// change of a sub-millisecond latency still is.
    #[test]
    fn latency_changes_under_the_noise_floor_are_not_flagged() {
        let ms = Unit::Ms;
        assert_eq!(flag(0.405, 0.456, Better::Lower, ms), Flag::Same);
        assert_eq!(flag(0.456, 0.405, Better::Lower, ms), Flag::Same);
        assert_eq!(flag(0.4, 0.8, Better::Lower, ms), Flag::Regression);
        assert_eq!(flag(0.8, 0.4, Better::Lower, ms), Flag::Improvement);
        assert_eq!(flag(20.0, 22.0, Better::Lower, ms), Flag::Regression);
        assert_eq!(flag(20.0, 21.9, Better::Lower, ms), Flag::Same);
        // Failure rates: 0.01% -> 0.012% is noise; a first failure never is.
        let f = Unit::Fraction;
        assert_eq!(flag(0.0001, 0.00012, Better::Lower, f), Flag::Same);
        assert_eq!(flag(0.01, 0.02, Better::Lower, f), Flag::Regression);
        assert_eq!(flag(0.0, 0.00001, Better::Lower, f), Flag::Regression);
    }

    /// A change that rounds to nothing is "±0.0%", never "-0.0%".
    #[test]
    fn no_negative_zero() {
        assert_eq!(delta(100.0, 99.97), "±0.0%");
        assert_eq!(delta(100.0, 100.03), "±0.0%");
        assert_eq!(delta(100.0, 99.94), "-0.1%");
        assert_eq!(delta(100.0, 112.34), "+12.3%");
        assert_eq!(delta(100.0, 80.0), "-20.0%");
        assert_eq!(delta(0.0, 3.0), "new");
        assert_eq!(delta(5.0, 5.0), "±0%");
    }
}
