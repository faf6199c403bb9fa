//! The page: header with the verdict badge, verdict details, key figures, test parameters,
//! then (via `tables`) the detailed tables; charts are drawn by the page's script from the
//! embedded data.

use std::fmt::Write as _;

use crate::compare::Comparison;
use crate::data::payload_json;
use crate::fmt::{duration, esc, fill, ms, pct, rate, script_json, thousands, utc};
use crate::input::Run;
use crate::tables;

const TEMPLATE: &str = include_str!("../assets/page.html");
const CSS: &str = include_str!("../assets/report.css");
const JS: &str = include_str!("../assets/report.js");
/// The live page's script: polls the live server, keeps the charts current, steers.
const LIVE_JS: &str = include_str!("../assets/live.js");
const UPLOT_JS: &str = include_str!("../vendor/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../vendor/uPlot.min.css");

/// The whole report page.
pub(crate) fn render(run: &Run, base: Option<&Run>) -> String {
    let cmp = base.map(|b| Comparison::new(run, b));
    let mut body = String::with_capacity(64 * 1024);
    header(&mut body, run, cmp.as_ref());
    body.push_str("<main>\n");
    if run.live {
        body.push_str(LIVE_BAR);
    }
    verdict(&mut body, run);
    key_figures(&mut body, run);
    if let Some(c) = &cmp {
        c.render(&mut body);
    }
    body.push_str(CHARTS);
    tables::summary_figures(&mut body, run);
    tables::steps(&mut body, run);
    tables::checks(&mut body, run);
    tables::scenarios(&mut body, run);
    crate::agents::table(&mut body, &run.agents);
    tables::status_and_failures(&mut body, run);
    crate::failing::section(&mut body, run);
    crate::events::section(&mut body, run);
    parameters(&mut body, run);
    body.push_str("</main>\n");
    footer(&mut body, run);

    let title = format!("{} · onrush load test report", run.summary.run.plan);
    let data = script_json(&payload_json(run, base));
    let live_script = if run.live {
        format!("<script>{LIVE_JS}</script>\n")
    } else {
        String::new()
    };
    fill(
        TEMPLATE,
        &[
            ("TITLE", &esc(&title)),
            ("UPLOT_CSS", UPLOT_CSS),
            ("CSS", CSS),
            ("BODY", &body),
            ("DATA", &data),
            ("UPLOT_JS", UPLOT_JS),
            ("JS", JS),
            ("LIVE_SCRIPT", &live_script),
        ],
    )
}

/// The live page's bar (filled by assets/live.js): the run's state, its figures now, and
/// the controls.
const LIVE_BAR: &str = r#"<section id="live" class="block live"><h2>Live</h2><div id="live-state" class="live-state">connecting…</div><div id="live-controls" class="live-controls"></div><div id="live-now"></div></section>
"#;

/// The chart area; the script fills `#charts` from its chart list.
const CHARTS: &str = r#"<section id="over-time" class="block">
<h2>Over time</h2>
<p class="note">One point per second. Hover a chart to read the values of that second in every chart; drag to zoom, double-click to reset.</p>
<noscript><p class="warn">The charts need JavaScript (no network access is needed).</p></noscript>
<div id="charts" class="charts"></div>
</section>
"#;

/// Overall verdict: (badge class, badge text, one-line explanation).
pub(crate) fn overall(run: &Run) -> (&'static str, &'static str, String) {
    match run.extras.failed_thresholds() {
        None => ("neutral", "NO THRESHOLDS", "no thresholds defined".into()),
        Some((0, n)) => ("pass", "PASSED", format!("all {n} thresholds met")),
        Some((f, n)) => ("fail", "FAILED", format!("{f} of {n} thresholds failed")),
    }
}

fn header(out: &mut String, run: &Run, cmp: Option<&Comparison>) {
    let s = &run.summary;
    let (class, badge, why) = overall(run);
    let steps = s.request_steps().count();
    let groups = match s.groups().count() {
        0 => String::new(),
        1 => ", 1 group".to_string(),
        n => format!(", {n} groups"),
    };
    let _ = write!(
        out,
        r#"<header class="top"><div class="wrap">
<div class="brand">onrush · load test report</div>
<div class="headline"><div><h1>{plan}</h1>
<p class="sub">{start} · {dur} · {scen} scenario{sp}, {steps} step{stp}{groups} · {req} requests</p></div>
<div class="verdict-badge {class}" id="verdict" data-verdict="{badge}"><span class="big">{badge}</span><span class="why">{why}</span></div></div>
<div class="chips">"#,
        plan = esc(&s.run.plan),
        start = utc(s.run.start_unix_ms),
        dur = duration(s.run.duration_s),
        scen = s.scenarios.len(),
        sp = if s.scenarios.len() == 1 { "" } else { "s" },
        stp = if steps == 1 { "" } else { "s" },
        req = thousands(s.totals.requests),
        why = esc(&why),
    );
    if let Some(g) = &run.extras.generator {
        let (c, t) = if g.healthy() {
            ("pass", "load generator healthy")
        } else {
            ("warn", "load generator saturated")
        };
        let _ = write!(out, r#"<span class="chip {c}">{t}</span>"#);
    }
    if run.live {
        out.push_str(
            r#"<span class="chip neutral" id="live-chip">live: figures as of the page's loading, charts kept current</span>"#,
        );
    } else if run.rebuilt {
        out.push_str(
            r#"<span class="chip warn">run did not finish: summary rebuilt from intervals.jsonl</span>"#,
        );
    } else if run.extras.interrupted {
        out.push_str(r#"<span class="chip warn">run interrupted</span>"#);
    }
    if s.totals.failures > 0 {
        let _ = write!(
            out,
            r#"<span class="chip {}">{} failed</span>"#,
            if s.totals.failure_rate >= 0.01 {
                "fail"
            } else {
                "warn"
            },
            pct(s.totals.failure_rate)
        );
    }
    let checks = &s.totals.checks;
    if checks.fails > 0 {
        let _ = write!(
            out,
            r##"<a class="chip fail" href="#checks">{} failed check{}</a>"##,
            thousands(checks.fails),
            if checks.fails == 1 { "" } else { "s" }
        );
    }
    if let Some(c) = cmp {
        let n = c.regressions();
        let (cl, t) = match n {
            0 => ("pass", "no regressions vs baseline".to_string()),
            1 => ("fail", "1 regression vs baseline".to_string()),
            n => ("fail", format!("{n} regressions vs baseline")),
        };
        let _ = write!(out, r##"<a class="chip {cl}" href="#comparison">{t}</a>"##);
    }
    out.push_str("</div></div></header>\n");
}

fn verdict(out: &mut String, run: &Run) {
    let x = &run.extras;
    let (class, badge, why) = overall(run);
    out.push_str(
        r#"<section id="verdict-details" class="block"><h2>Verdict</h2><div class="cards three">"#,
    );
    let _ = write!(
        out,
        r#"<div class="card {class}"><div class="label">Thresholds</div><div class="value">{badge}</div><div class="detail">{}</div></div>"#,
        esc(&why)
    );
    match &x.generator {
        Some(g) => {
            let class = if g.healthy() { "pass" } else { "warn" };
            let mut detail = esc(&g.message);
            if let Some(t) = g.saturated_from_s {
                let _ = write!(detail, " (from second {t})");
            }
            let _ = write!(
                out,
                r#"<div class="card {class}"><div class="label">Load generator</div><div class="value">{}</div><div class="detail">{detail}</div></div>"#,
                esc(&g.verdict.to_uppercase())
            );
        }
        None => out.push_str(r#"<div class="card neutral"><div class="label">Load generator</div><div class="value">NOT ASSESSED</div><div class="detail">these results hold no generator-health verdict</div></div>"#),
    }
    if !run.summary.checks.is_empty() {
        let c = &run.summary.totals.checks;
        let (class, value, detail) = if c.total() == 0 {
            (
                "neutral",
                "NONE RAN".to_string(),
                "no check was evaluated".to_string(),
            )
        } else if c.fails == 0 {
            (
                "pass",
                "ALL PASSED".to_string(),
                format!("{} checks passed", thousands(c.passes)),
            )
        } else {
            (
                "fail",
                format!("{} FAILED", thousands(c.fails)),
                format!(
                    "{} of {} checks failed ({} passed)",
                    thousands(c.fails),
                    thousands(c.total()),
                    pct(c.pass_rate)
                ),
            )
        };
        let _ = write!(
            out,
            r##"<div class="card {class}" id="checks-card"><div class="label">Checks</div><div class="value">{value}</div><div class="detail"><a href="#checks">{detail}</a></div></div>"##
        );
    }
    let (class, value, detail) = if run.live {
        (
            "neutral",
            "RUNNING",
            "still going: figures cover the seconds closed so far",
        )
    } else if run.rebuilt {
        (
            "warn",
            "DID NOT FINISH",
            "killed before its end: figures cover the seconds it wrote",
        )
    } else if x.interrupted {
        (
            "warn",
            "INTERRUPTED",
            "stopped early: figures cover the part that ran",
        )
    } else {
        ("pass", "COMPLETED", "the run went to its planned end")
    };
    let _ = write!(
        out,
        r#"<div class="card {class}"><div class="label">Run</div><div class="value">{value}</div><div class="detail">{detail}</div></div></div>"#
    );
    if let Some(ts) = x.thresholds.as_ref().filter(|t| !t.is_empty()) {
        out.push_str(r#"<div class="scroll"><table class="grid thresholds"><thead><tr><th>threshold</th><th>scope</th><th class="num">measured</th><th>result</th></tr></thead><tbody>"#);
        for t in ts {
            let (c, r) = if t.passed {
                ("pass", "✓ passed")
            } else {
                ("fail", "✗ failed")
            };
            let msg = if t.passed || t.message.is_empty() {
                String::new()
            } else {
                format!(r#"<div class="what">{}</div>"#, esc(&t.message))
            };
            let _ = write!(
                out,
                r#"<tr class="{c}"><td>{}{msg}</td><td>{}</td><td class="num">{}</td><td><span class="tag {c}">{r}</span></td></tr>"#,
                esc(&t.threshold),
                esc(&t.scope),
                esc(&t.measured_text)
            );
        }
        out.push_str("</tbody></table></div>");
    }
    if let Some(g) = x.generator.as_ref().filter(|g| !g.causes.is_empty()) {
        out.push_str(r#"<h3>Why the load generator could not keep up</h3><ul class="causes">"#);
        for c in &g.causes {
            let from = c
                .first_s
                .map(|s| format!(" (from second {s})"))
                .unwrap_or_default();
            let _ = write!(
                out,
                r#"<li><b>{}</b>{from}: {}<br><span class="fix">Fix: {}</span></li>"#,
                esc(&c.cause),
                esc(&c.detail),
                esc(&c.fix)
            );
        }
        out.push_str("</ul>");
    }
    if let Some(g) = x.generator.as_ref().filter(|g| !g.peaks.is_empty()) {
        let peaks: Vec<String> = g
            .peaks
            .iter()
            .map(|(k, v)| format!("{} {}", esc(k), esc(v)))
            .collect();
        let _ = write!(
            out,
            r#"<p class="note">Load generator peaks: {}.</p>"#,
            peaks.join(" · ")
        );
    }
    out.push_str("</section>\n");
}

fn key_figures(out: &mut String, run: &Run) {
    let t = &run.summary.totals;
    let l = &t.latency_ms;
    let lat = |v: f64| if l.count == 0 { "-".to_string() } else { ms(v) };
    let fail_class = if t.failures == 0 {
        ""
    } else if t.failure_rate >= 0.01 {
        " fail"
    } else {
        " warn"
    };
    let cards: [(&str, String, String, &str); 8] = [
        (
            "Requests",
            thousands(t.requests),
            format!("{} iterations", thousands(t.iterations)),
            "",
        ),
        (
            "Throughput",
            format!("{} /s", rate(t.rps)),
            "mean request rate".into(),
            "",
        ),
        (
            "Failed",
            pct(t.failure_rate),
            format!("{} requests", thousands(t.failures)),
            fail_class,
        ),
        ("Median (p50)", lat(l.p50), "latency".into(), ""),
        ("p95", lat(l.p95), "latency".into(), ""),
        ("p99", lat(l.p99), "latency".into(), ""),
        ("p99.9", lat(l.p999), "latency".into(), ""),
        ("Max", lat(l.max), "slowest request".into(), ""),
    ];
    out.push_str(r#"<section id="key-figures" class="block"><h2>Key figures</h2><div class="cards figures">"#);
    for (label, value, detail, class) in cards {
        let long = if value.chars().count() > 9 {
            " long"
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<div class="card{class}"><div class="label">{label}</div><div class="value{long}">{value}</div><div class="detail">{detail}</div></div>"#,
            detail = esc(&detail)
        );
    }
    out.push_str(r#"</div><p class="note">Latency runs from the <em>intended</em> start of each request (open model: its scheduled time), so queueing in the target is not hidden.</p></section>"#);
    out.push('\n');
}

fn parameters(out: &mut String, run: &Run) {
    let s = &run.summary;
    let x = &run.extras;
    let mut rows: Vec<(&str, String)> = vec![
        ("Plan", esc(&s.run.plan)),
        ("Started", utc(s.run.start_unix_ms)),
        (
            "Duration",
            format!(
                "{} ({} one-second intervals)",
                duration(s.run.duration_s),
                s.run.seconds
            ),
        ),
    ];
    let scen: Vec<String> = s
        .scenarios
        .iter()
        .map(|sc| {
            let steps = s.steps.iter().filter(|st| st.scenario == sc.name).count();
            let model = x
                .load
                .iter()
                .find(|(n, _)| *n == sc.name)
                .map(|(_, m)| m.as_str());
            format!(
                "<b>{}</b>: {}{} step{}",
                esc(&sc.name),
                model.map(|m| format!("{} · ", esc(m))).unwrap_or_default(),
                steps,
                if steps == 1 { "" } else { "s" }
            )
        })
        .collect();
    rows.push(("Scenarios and load", scen.join("<br>")));
    let orphan: Vec<String> = x
        .load
        .iter()
        .filter(|(n, _)| !s.scenarios.iter().any(|sc| &sc.name == n))
        .map(|(n, m)| format!("<b>{}</b>: {}", esc(n), esc(m)))
        .collect();
    if !orphan.is_empty() {
        rows.push(("Other load models", orphan.join("<br>")));
    }
    if let Some(t) = x.threads {
        rows.push(("Worker threads", t.to_string()));
    }
    if !x.machine.is_empty() {
        let m: Vec<String> = x
            .machine
            .iter()
            .map(|(k, v)| format!("{}: {}", esc(k), esc(v)))
            .collect();
        rows.push(("Load generator machine", m.join(" · ")));
    }
    if !x.vars.is_empty() {
        let v: Vec<String> = x
            .vars
            .iter()
            .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
            .collect();
        rows.push(("Variables", v.join(" ")));
    }
    if let Some(m) = &s.run.merged_from {
        rows.push((
            "Merged from",
            m.iter().map(|d| esc(d)).collect::<Vec<_>>().join("<br>"),
        ));
    }
    rows.push((
        "Results directory",
        format!("<code>{}</code>", esc(&run.dir.display().to_string())),
    ));
    rows.push(("onrush version", esc(&s.onrush_version)));
    out.push_str(
        r#"<section id="parameters" class="block"><h2>Test parameters</h2><dl class="params">"#,
    );
    for (k, v) in rows {
        let _ = write!(out, "<dt>{k}</dt><dd>{v}</dd>");
    }
    out.push_str("</dl></section>\n");
}

fn footer(out: &mut String, run: &Run) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let _ = write!(
        out,
        r#"<footer><div class="wrap">Generated by onrush {} on {} · self-contained: opens without network access · charts by uPlot (MIT)</div></footer>
<div id="onrush-report-status" hidden data-done="0" data-charts="0" data-nonempty="0" data-errors=""></div>
"#,
        esc(&run.summary.onrush_version),
        utc(now)
    );
}
