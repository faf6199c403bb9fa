//! The detailed tables: summary figures, steps (grouped by scenario), scenarios, status codes,
//! failures by class (grouped: `connection`, `TLS`, `gRPC`, ...) with their hints.

use std::fmt::Write as _;

use onrush_metrics::{failure_class_info, MsStats, Summary};

use crate::fmt::{bytes, esc, ms, ms_num, pct, rate, thousands};
use crate::input::Run;
use crate::intervals::StepId;

const LAT_HEAD: &str = r#"<th class="num">min</th><th class="num">mean</th><th class="num">p50</th><th class="num">p90</th><th class="num">p95</th><th class="num">p99</th><th class="num">p99.9</th><th class="num">max</th>"#;

/// The eight latency cells of a stats object ("-" when it has no value).
fn lat_cells(out: &mut String, l: &MsStats) {
    for v in [l.min, l.mean, l.p50, l.p90, l.p95, l.p99, l.p999, l.max] {
        let cell = if l.count == 0 {
            "-".to_string()
        } else {
            ms_num(v)
        };
        let _ = write!(out, r#"<td class="num">{cell}</td>"#);
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

pub(crate) fn summary_figures(out: &mut String, run: &Run) {
    let t = &run.summary.totals;
    out.push_str(r#"<section id="summary" class="block"><h2>Summary figures</h2><div class="scroll"><table class="grid"><thead><tr><th>time (ms)</th><th class="num">samples</th>"#);
    out.push_str(LAT_HEAD);
    out.push_str("</tr></thead><tbody>");
    let rows = [
        (
            "latency",
            "from the intended start to the end of the response",
            &t.latency_ms,
        ),
        (
            "service time",
            "from the moment the request was sent",
            &t.service_ms,
        ),
        (
            "time to first byte",
            "from send to the first response byte",
            &t.ttfb_ms,
        ),
        (
            "connect",
            "requests that opened a connection",
            &t.connect_ms,
        ),
        (
            "schedule lag",
            "how late iterations started (open model)",
            &t.schedule_lag_ms,
        ),
    ];
    for (name, what, st) in rows {
        if st.count == 0 && name != "latency" {
            continue;
        }
        let _ = write!(
            out,
            r#"<tr><td><b>{name}</b><div class="what">{what}</div></td><td class="num">{}</td>"#,
            thousands(st.count)
        );
        lat_cells(out, st);
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    // A run shorter than 10 s has no 10-second window: its "highest" and "lowest" would be the
    // same whole-run mean, which reads like a perfectly flat rate.
    let ten_s = |v: f64| {
        if t.rate_10s_whole_run {
            format!(
                "— <span class=\"what\">needs a run of at least 10 s (this one: {:.1} s)</span>",
                t.rate_10s_window_s
            )
        } else {
            format!("{} req/s", rate(v))
        }
    };
    let rows: Vec<(&str, String)> = vec![
        ("mean request rate", format!("{} req/s", rate(t.rps))),
        ("highest 10-second mean rate", ten_s(t.rate_10s_max)),
        ("lowest 10-second mean rate", ten_s(t.rate_10s_min)),
        (
            "highest 1-second rate",
            format!("{} req/s", rate(t.rate_1s_max)),
        ),
        (
            "iterations",
            format!(
                "{} <span class=\"what\">dropped: {}</span>",
                thousands(t.iterations),
                thousands(t.dropped_iterations)
            ),
        ),
        ("connections opened", thousands(t.connections_opened)),
        ("peak active VUs", thousands(t.active_vus_max)),
        (
            "data",
            format!(
                "{} received · {} sent",
                bytes(t.bytes_in),
                bytes(t.bytes_out)
            ),
        ),
    ];
    out.push_str(r#"<dl class="params rates">"#);
    for (k, v) in rows {
        let _ = write!(out, "<dt>{k}</dt><dd>{v}</dd>");
    }
    out.push_str("</dl></section>\n");
}

/// The failures of one group of classes (`connection`, `TLS`, `gRPC`, ...).
struct FailureGroup<'a> {
    name: String,
    failures: u64,
    /// Name, count and hint of each class, most failures first.
    classes: Vec<(&'a String, u64, String)>,
}

/// The run's failure classes by group (as the summary records it, else as this build knows
/// it), the group with the most failures first.
fn failure_groups(s: &Summary) -> Vec<FailureGroup<'_>> {
    let mut groups: Vec<FailureGroup> = Vec::new();
    for (name, &n) in &s.totals.failures_by_class {
        let info = failure_class_info(s, name);
        let at = match groups.iter().position(|g| g.name == info.group) {
            Some(at) => at,
            None => {
                groups.push(FailureGroup {
                    name: info.group,
                    failures: 0,
                    classes: Vec::new(),
                });
                groups.len() - 1
            }
        };
        groups[at].failures += n;
        groups[at].classes.push((name, n, info.hint));
    }
    for g in &mut groups {
        g.classes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    }
    groups.sort_by(|a, b| b.failures.cmp(&a.failures).then(a.name.cmp(&b.name)));
    groups
}

/// The (up to three) request steps where `class` failed most, as HTML:
/// `scenario / step (count)`, most first.
fn most_in(s: &Summary, class: &str) -> String {
    let mut worst: Vec<(&str, &str, u64)> = s
        .request_steps()
        .filter_map(|st| {
            st.failures_by_class
                .get(class)
                .map(|&k| (st.scenario.as_str(), st.name.as_str(), k))
        })
        .collect();
    worst.sort_by_key(|w| std::cmp::Reverse(w.2));
    let worst: Vec<String> = worst
        .iter()
        .take(3)
        .map(|(sc, st, k)| format!("{} / {} ({})", esc(sc), esc(st), thousands(*k)))
        .collect();
    worst.join(", ")
}

pub(crate) fn steps(out: &mut String, run: &Run) {
    let s = &run.summary;
    out.push_str(r#"<section id="steps" class="block"><h2>Steps</h2><p class="note">Latency in milliseconds per step, grouped by scenario (a scenario row covers all its steps). <b>req/s run</b>: the requests over the whole run; <b>req/s active</b>: over the step's (or scenario's) own active time, from the first to the last second in which it had requests (whole seconds), which is higher when it ran for only part of the run.</p><div class="scroll"><table class="grid steps"><thead><tr><th>scenario / step</th><th class="num">requests</th><th class="num">req/s run</th><th class="num">req/s active</th><th class="num">failed</th>"#);
    out.push_str(LAT_HEAD);
    out.push_str("</tr></thead><tbody>");
    let mut order: Vec<&str> = s.scenarios.iter().map(|sc| sc.name.as_str()).collect();
    for st in &s.steps {
        if !order.contains(&st.scenario.as_str()) {
            order.push(&st.scenario);
        }
    }
    for name in order {
        if let Some(sc) = s.scenarios.iter().find(|sc| sc.name == name) {
            let _ = write!(
                out,
                r#"<tr class="group"><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td>"#,
                esc(name),
                thousands(sc.requests),
                rate(sc.rps),
                summary_rate(sc.rps_active.zip(sc.active_s)).unwrap_or_else(|| active_rate(
                    run,
                    sc.requests,
                    |id| id.scenario == name
                )),
                pct(sc.failure_rate)
            );
            lat_cells(out, &sc.latency_ms);
            out.push_str("</tr>");
        }
        for st in s.request_steps().filter(|st| st.scenario == name) {
            let fail = if st.failures > 0 {
                " class=\"bad num\""
            } else {
                " class=\"num\""
            };
            let _ = write!(
                out,
                r#"<tr class="step"><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td{fail}>{}</td>"#,
                esc(&st.name),
                thousands(st.requests),
                rate(st.rps),
                summary_rate(st.rps_active.zip(st.active_s)).unwrap_or_else(|| active_rate(
                    run,
                    st.requests,
                    |id| id.scenario == name && id.name == st.name
                )),
                pct(st.failure_rate)
            );
            lat_cells(out, &st.latency_ms);
            out.push_str("</tr>");
        }
    }
    let t = &s.totals;
    let _ = write!(
        out,
        r#"</tbody><tfoot><tr><td>total</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td>"#,
        thousands(t.requests),
        rate(t.rps),
        active_rate(run, t.requests, |_| true),
        pct(t.failure_rate)
    );
    lat_cells(out, &t.latency_ms);
    out.push_str("</tr></tfoot></table></div></section>\n");
    groups(out, run);
}

/// `requests` over the active time of the steps `of` picks: from the first to the last second
/// in which any of them had requests, in whole seconds; `-` when none had any.
/// The active rate summary.json gives (`rps_active` over `active_s`), so that the report, the
/// printed summary and the file say the same figure; results of older versions have none.
fn summary_rate(rate_and_time: Option<(f64, f64)>) -> Option<String> {
    let (r, seconds) = rate_and_time?;
    Some(format!(
        r#"<span title="{seconds} s active">{}</span>"#,
        rate(r)
    ))
}

/// `requests` over the active time of the steps `of` picks, from the time series (results of
/// versions whose summary has no `rps_active`).
fn active_rate(run: &Run, requests: u64, of: impl Fn(&StepId) -> bool) -> String {
    let series = &run.series;
    let mut span: Option<(usize, usize)> = None;
    for (id, counts) in series.steps.iter().zip(&series.step_requests) {
        if !of(id) {
            continue;
        }
        let first = counts.iter().position(|&n| n > 0);
        let last = counts.iter().rposition(|&n| n > 0);
        if let (Some(a), Some(b)) = (first, last) {
            span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
    }
    match span {
        Some((a, b)) => {
            let seconds = (b - a + 1) as f64;
            format!(
                r#"<span title="{} s active">{}</span>"#,
                b - a + 1,
                rate(requests as f64 / seconds)
            )
        }
        None => "-".into(),
    }
}

/// Groups (transactions): one row per group, grouped by scenario; nothing without groups.
fn groups(out: &mut String, run: &Run) {
    let s = &run.summary;
    if s.groups().next().is_none() {
        return;
    }
    out.push_str(r#"<section id="groups" class="block"><h2>Groups</h2><p class="note">Each group is measured as a whole: one sample per run of the group, its whole duration in milliseconds (from the start of its first request to the end of its last). A run failed when a request in it failed. Groups are not counted as requests.</p><div class="scroll"><table class="grid steps groups"><thead><tr><th>scenario / group</th><th class="num">runs</th><th class="num">runs/s</th><th class="num">failed</th>"#);
    out.push_str(LAT_HEAD);
    out.push_str("</tr></thead><tbody>");
    let mut last: Option<&str> = None;
    for g in s.groups() {
        if last != Some(g.scenario.as_str()) {
            let _ = write!(
                out,
                r#"<tr class="group"><td colspan="12">{}</td></tr>"#,
                esc(&g.scenario)
            );
            last = Some(&g.scenario);
        }
        let fail = if g.failures > 0 {
            " class=\"bad num\""
        } else {
            " class=\"num\""
        };
        let _ = write!(
            out,
            r#"<tr class="step"><td>{}</td><td class="num">{}</td><td class="num">{}</td><td{fail}>{}</td>"#,
            esc(&g.name),
            thousands(g.requests),
            rate(g.rps),
            pct(g.failure_rate)
        );
        lat_cells(out, &g.latency_ms);
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div></section>\n");
}

/// Checks: one row per check with its passes, fails and pass rate; nothing without checks.
pub(crate) fn checks(out: &mut String, run: &Run) {
    let s = &run.summary;
    if s.checks.is_empty() {
        return;
    }
    let t = &s.totals.checks;
    let _ = write!(
        out,
        r#"<section id="checks" class="block"><h2>Checks</h2><p class="note">{} of {} checks passed ({}), {} failed.</p><div class="scroll"><table class="grid checks"><thead><tr><th></th><th>scenario / step</th><th>check</th><th class="num">passed</th><th class="num">failed</th><th class="num">pass rate</th></tr></thead><tbody>"#,
        thousands(t.passes),
        thousands(t.total()),
        pct(t.pass_rate),
        thousands(t.fails)
    );
    for c in &s.checks {
        let (class, mark) = if c.fails > 0 {
            ("fail", "✗")
        } else if c.passes > 0 {
            ("pass", "✓")
        } else {
            ("", "-")
        };
        let rate = if c.total() == 0 {
            "-".to_string()
        } else {
            pct(c.pass_rate)
        };
        let failed = if c.fails > 0 {
            " class=\"bad num\""
        } else {
            " class=\"num\""
        };
        let _ = write!(
            out,
            r#"<tr class="{class}"><td><span class="tag {class}">{mark}</span></td><td>{} / {}</td><td>{}</td><td class="num">{}</td><td{failed}>{}</td><td class="num">{rate}</td></tr>"#,
            esc(&c.scenario),
            esc(&c.step),
            esc(&c.name),
            thousands(c.passes),
            thousands(c.fails)
        );
    }
    let _ = write!(
        out,
        r#"</tbody><tfoot><tr><td></td><td>total</td><td></td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr></tfoot></table></div></section>"#,
        thousands(t.passes),
        thousands(t.fails),
        if t.total() == 0 {
            "-".to_string()
        } else {
            pct(t.pass_rate)
        }
    );
    out.push('\n');
}

pub(crate) fn scenarios(out: &mut String, run: &Run) {
    let s = &run.summary;
    out.push_str(r#"<section id="scenarios" class="block"><h2>Scenarios</h2><p class="note">Peak active VUs: the most VUs in an iteration at once (each worker's peak of the second, summed over workers), not the VUs the plan asked for (the load model says those); it is lower when VUs finish their iterations before the last ones start (a ramp-up with few, short iterations).</p><div class="scroll"><table class="grid"><thead><tr><th>scenario</th><th>load model</th><th class="num">iterations</th><th class="num">dropped</th><th class="num">peak active VUs</th><th class="num">connections</th><th class="num">schedule lag p99</th></tr></thead><tbody>"#);
    for sc in &s.scenarios {
        let model = run
            .extras
            .load
            .iter()
            .find(|(n, _)| *n == sc.name)
            .map_or("-", |(_, m)| m.as_str());
        let lag = if sc.schedule_lag_ms.count == 0 {
            "-".into()
        } else {
            ms(sc.schedule_lag_ms.p99)
        };
        let dropped = if sc.dropped_iterations > 0 {
            " class=\"bad num\""
        } else {
            " class=\"num\""
        };
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td>{}</td><td class="num">{}</td><td{dropped}>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            esc(&sc.name),
            esc(model),
            thousands(sc.iterations),
            thousands(sc.dropped_iterations),
            thousands(sc.active_vus_max),
            thousands(sc.connections_opened),
            lag
        );
    }
    out.push_str("</tbody></table></div></section>\n");
}

fn status_class(code: u16) -> &'static str {
    match code {
        200..=399 => "ok",
        400..=499 => "c4",
        _ => "c5",
    }
}

pub(crate) fn status_and_failures(out: &mut String, run: &Run) {
    let s = &run.summary;
    let t = &s.totals;
    out.push_str(
        r#"<section id="responses" class="block"><h2>Responses and failures</h2><div class="two">"#,
    );
    out.push_str(r#"<div><h3>Status codes</h3>"#);
    let responses: u64 = t.status_codes.values().sum();
    if responses == 0 {
        out.push_str(r#"<p class="note">No response was received.</p>"#);
    } else {
        out.push_str(r#"<table class="grid codes"><thead><tr><th>status</th><th class="num">responses</th><th class="num">share</th><th class="barcol"></th></tr></thead><tbody>"#);
        for (code, n) in &t.status_codes {
            let share = ratio(*n, responses);
            let _ = write!(
                out,
                r#"<tr><td><span class="code {}">{code}</span></td><td class="num">{}</td><td class="num">{}</td><td class="barcol"><span class="bar {}" style="width:{:.1}%"></span></td></tr>"#,
                status_class(*code),
                thousands(*n),
                pct(share),
                status_class(*code),
                (share * 100.0).max(0.5)
            );
        }
        out.push_str("</tbody></table>");
    }
    let no_response = t.requests.saturating_sub(responses);
    if no_response > 0 {
        let _ = write!(
            out,
            r#"<p class="note">{} requests got no response (see failures).</p>"#,
            thousands(no_response)
        );
    }
    out.push_str("</div><div><h3>Failures by class</h3>");
    if t.failures_by_class.is_empty() {
        out.push_str(r#"<p class="ok-note">✓ No request failed.</p>"#);
    } else {
        out.push_str(r#"<table class="grid failures"><thead><tr><th>group / class</th><th class="num">failures</th><th class="num">of requests</th></tr></thead><tbody>"#);
        for group in failure_groups(s) {
            let _ = write!(
                out,
                r#"<tr class="group"><td>{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
                esc(&group.name),
                thousands(group.failures),
                pct(ratio(group.failures, t.requests))
            );
            for (name, n, hint) in group.classes {
                let _ = write!(
                    out,
                    r#"<tr class="step"><td><b>{}</b><div class="hint">{}</div><div class="what">most in: {}</div></td><td class="num">{}</td><td class="num">{}</td></tr>"#,
                    esc(name),
                    esc(&hint),
                    most_in(s, name),
                    thousands(n),
                    pct(ratio(n, t.requests))
                );
            }
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</div></div></section>\n");
}
