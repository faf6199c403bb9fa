//! The report's content from realistic results directories: embedded data, verdict, tables,
//! baseline comparison, and the error messages.

use crate::common;

use std::fs;

use common::{embedded_data, tmp, Fixture};
use onrush_report::{render_report, write_report, ReportError, ReportOptions};
use serde_json::Value;

fn nums(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap_or(f64::NAN))
        .collect()
}

#[test]
fn report_holds_data_verdict_and_steps() {
    let dir = tmp("basic");
    let summary = Fixture::new("shop").with_verdict(false).write(&dir);
    let out = write_report(&dir, &ReportOptions::default()).unwrap();
    assert_eq!(out, dir.join("report.html"));
    let html = fs::read_to_string(&out).unwrap();

    // Self-contained: no external resource.
    for needle in ["src=\"http", "href=\"http", "@import", "<link "] {
        assert!(!html.contains(needle), "report references {needle}");
    }
    assert!(html.contains("var uPlot="), "uPlot is inlined");
    assert!(html.contains("<title>shop · onrush load test report</title>"));

    // Verdict: one threshold failed; generator saturated with its cause and fix.
    assert!(html.contains(r#"data-verdict="FAILED""#));
    assert!(html.contains("1 of 2 thresholds failed"));
    assert!(html.contains("home: failure_rate &lt; 1%") && html.contains("step browse/home"));
    assert!(html.contains(">1.03%<") && html.contains("failure_rate 1.03% is not &lt; 1%"));
    assert!(html.contains(">87.2 ms<"), "measured as text (older form)");
    assert!(
        html.contains("<b>cpu</b> (from second 12)") && html.contains("CPU 99% · memory 14.2 MB")
    );
    assert!(html.contains("load generator saturated"));
    assert!(html.contains("the load generator ran out of CPU (from second 12)"));
    assert!(html.contains("run on more cores or split the load over machines"));
    // The hostname only with show_host (see the_report_hides_where_it_was_made_unless_asked).
    assert!(
        !html.contains("loadgen-1")
            && html.contains("cpus: 2 · os: Linux 6.1")
            && html.contains("closed: 4 VUs x 25 iterations · connections: per_vu")
    );
    assert!(html.contains("<dt>Worker threads</dt><dd>2</dd>"));
    assert!(html.contains("<code>host=shop.test</code>"));

    // Step names, failures with hints, status codes.
    for name in [
        "browse", "home", "search", "product", "checkout", "cart", "pay",
    ] {
        assert!(
            html.contains(&format!("<td>{name}</td>")),
            "step/scenario {name}"
        );
    }
    assert!(html.contains("<b>http_5xx</b>") && html.contains("<b>timeout</b>"));
    assert!(html.contains("the server failed (5xx)"), "hint of http_5xx");
    assert!(html.contains(r#"<span class="code ok">200</span>"#));
    assert!(html.contains(r#"<span class="code c5">503</span>"#));

    // Embedded data: the per-second series add up to the summary.
    let d = embedded_data(&html);
    let t = &summary.totals;
    assert_eq!(d["seconds"], 30);
    assert_eq!(d["plan"], "shop");
    let requests = nums(&d["series"]["requests"]);
    assert_eq!(requests.len(), 30);
    assert_eq!(requests.iter().sum::<f64>() as u64, t.requests);
    assert_eq!(
        nums(&d["series"]["iterations"]).iter().sum::<f64>() as u64,
        t.iterations
    );
    assert_eq!(
        nums(&d["series"]["bytes_in"]).iter().sum::<f64>() as u64,
        t.bytes_in
    );
    assert_eq!(
        nums(&d["series"]["dropped_iterations"]).iter().sum::<f64>() as u64,
        t.dropped_iterations
    );
    assert_eq!(
        nums(&d["series"]["fail:http_5xx"]).iter().sum::<f64>() as u64,
        t.failures_by_class["http_5xx"]
    );
    assert_eq!(nums(&d["series"]["lat_p99"]).len(), 30);
    let vus_max = nums(&d["series"]["active_vus"])
        .into_iter()
        .fold(0.0, f64::max);
    assert_eq!(vus_max as u64, t.active_vus_max);
    let steps: Vec<&str> = d["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "browse / home",
            "browse / search",
            "browse / product",
            "checkout / cart",
            "checkout / pay"
        ]
    );
    assert_eq!(d["step_series"].as_array().unwrap().len(), 5);
    assert!(
        nums(&d["series"]["lag_p99"]).iter().any(|v| v.is_finite()),
        "open-model lag"
    );
    assert!(d["baseline"].is_null());

    // The distribution curve ends near the p99.9 of the summary and starts at its min.
    let dist = nums(&d["dist"]["total"]);
    assert_eq!(dist[0], t.latency_ms.min);
    assert!(
        dist.windows(2).all(|w| w[0] <= w[1]),
        "percentile curve is monotonic"
    );
    let x = nums(&d["dist"]["x"]);
    let at = |target: f64| dist[x.iter().position(|v| (v - target).abs() < 1e-9).unwrap()];
    assert_eq!(at(1.0), t.latency_ms.p90);
    assert_eq!(at(2.0), t.latency_ms.p99);
    assert_eq!(at(3.0), t.latency_ms.p999);
}

#[test]
fn per_second_percentiles_match_the_summary_for_a_one_second_run() {
    let dir = tmp("one-second");
    let mut f = Fixture::new("short");
    f.seconds = 1;
    let s = f.write(&dir);
    let d = embedded_data(&render_report(&dir, None).unwrap());
    assert_eq!(
        d["series"]["lat_p50"][0].as_f64(),
        Some(s.totals.latency_ms.p50)
    );
    assert_eq!(
        d["series"]["lat_p99"][0].as_f64(),
        Some(s.totals.latency_ms.p99)
    );
    assert_eq!(
        d["series"]["lat_max"][0].as_f64(),
        Some(s.totals.latency_ms.max)
    );
    let home = &s.steps[0].latency_ms;
    assert_eq!(d["step_series"][0]["p90"][0].as_f64(), Some(home.p90));
}

#[test]
fn no_thresholds_and_no_generator_data() {
    let dir = tmp("plain");
    Fixture::new("plain").write(&dir);
    let html = render_report(&dir, None).unwrap();
    assert!(html.contains(r#"data-verdict="NO THRESHOLDS""#));
    assert!(html.contains("no thresholds defined"));
    assert!(html.contains("NOT ASSESSED"));
    assert!(html.contains("COMPLETED"));
}

#[test]
fn all_thresholds_passed_and_custom_output_path() {
    let dir = tmp("passed");
    Fixture::new("ok").with_verdict(true).write(&dir);
    let out = dir.join("sub-report.html");
    let opts = ReportOptions {
        baseline: None,
        out: Some(out.clone()),
        show_host: false,
        live: false,
    };
    assert_eq!(write_report(&dir, &opts).unwrap(), out);
    let html = fs::read_to_string(out).unwrap();
    assert!(html.contains(r#"data-verdict="PASSED""#) && html.contains("all 2 thresholds met"));
    assert!(!dir.join("report.html").exists());
}

#[test]
fn baseline_comparison_flags_regressions() {
    let base = tmp("base");
    let new = tmp("new");
    Fixture::new("shop").write(&base);
    let mut f = Fixture::new("shop");
    f.slow = 1.5; // 50% slower target
    f.fail_every = 20; // more failures
    f.write(&new);
    let opts = ReportOptions {
        baseline: Some(base.clone()),
        out: None,
        show_host: false,
        live: false,
    };
    let html = fs::read_to_string(write_report(&new, &opts).unwrap()).unwrap();
    assert!(html.contains(r#"id="comparison""#));
    assert!(html.contains("regressions vs baseline"));
    let row = |label: &str| {
        let i = html
            .find(&format!("<td>{label}</td>"))
            .unwrap_or_else(|| panic!("row {label}"));
        html[i..i + html[i..].find("</tr>").unwrap()].to_string()
    };
    assert!(
        row("latency p99").contains("regression"),
        "{}",
        row("latency p99")
    );
    assert!(row("latency p50").contains("+50"), "{}", row("latency p50"));
    assert!(row("failure rate").contains("regression"));
    assert!(!row("requests").contains("regression"));
    assert!(
        html.contains("<td>browse / home</td>"),
        "per-step comparison"
    );

    let d = embedded_data(&html);
    let b = &d["baseline"];
    assert_eq!(b["seconds"], 30);
    assert_eq!(nums(&b["series"]["requests"]).len(), 30);
    assert_eq!(nums(&b["dist"]).len(), nums(&d["dist"]["x"]).len());

    // Same run against itself: no regression.
    let html = render_report(&base, Some(&base)).unwrap();
    assert!(
        html.contains("no regressions vs baseline") && html.contains(r#"data-regressions="0""#)
    );
}

#[test]
fn baseline_of_different_length_and_steps() {
    let base = tmp("base-short");
    let new = tmp("new-long");
    let mut f = Fixture::new("a");
    f.seconds = 12;
    f.scenarios = vec![("browse".into(), vec!["home".into(), "old".into()])];
    f.write(&base);
    Fixture::new("b").write(&new);
    let html = render_report(&new, Some(&base)).unwrap();
    assert!(html.contains("browse / old (only in the baseline)"));
    assert!(html.contains("new step: not in the baseline"));
    assert_eq!(embedded_data(&html)["baseline"]["seconds"], 12);
}

#[test]
fn errors_are_clear() {
    let missing = tmp("gone").join("nope");
    let e = write_report(&missing, &ReportOptions::default()).unwrap_err();
    assert!(matches!(e, ReportError::NoDir { .. }));
    assert!(
        e.to_string().ends_with("nope: no such results directory"),
        "{e}"
    );

    let empty = tmp("empty");
    let e = render_report(&empty, None).unwrap_err().to_string();
    assert!(
        e.contains("summary.json: not found: is this an onrush results directory?"),
        "{e}"
    );

    let dir = tmp("broken");
    Fixture::new("x").write(&dir);
    let good = fs::read_to_string(dir.join("intervals.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines[4] = r#"{"kind":"step","t":0,"scenario":"browse","#;
    fs::write(dir.join("intervals.jsonl"), lines.join("\n")).unwrap();
    let e = render_report(&dir, None).unwrap_err().to_string();
    assert!(
        e.contains("intervals.jsonl:5: EOF while parsing a value (column 41)"),
        "{e}"
    );

    let bad_hist = good.replacen("\"latency\":\"HISTF", "\"latency\":\"!!", 1);
    fs::write(dir.join("intervals.jsonl"), &bad_hist).unwrap();
    let e = render_report(&dir, None).unwrap_err().to_string();
    assert!(
        e.contains("intervals.jsonl:3: latency: invalid base64"),
        "{e}"
    );

    fs::write(
        dir.join("intervals.jsonl"),
        good.replacen("\"onrush_results\":1", "\"onrush_results\":9", 1),
    )
    .unwrap();
    let e = render_report(&dir, None).unwrap_err().to_string();
    assert!(
        e.contains("intervals.jsonl:1: results format 9 is newer"),
        "{e}"
    );

    fs::write(dir.join("intervals.jsonl"), &good).unwrap();
    fs::write(
        dir.join("summary.json"),
        "{\n  \"onrush_version\": \"0.1.0\",\n  \"run\": 3\n}",
    )
    .unwrap();
    let e = render_report(&dir, None).unwrap_err().to_string();
    assert!(
        e.contains("summary.json:3: invalid summary.json: invalid type: integer `3`"),
        "{e}"
    );

    // A broken baseline is named as such.
    let ok = tmp("ok-for-baseline");
    Fixture::new("y").write(&ok);
    let e = render_report(&ok, Some(&dir)).unwrap_err().to_string();
    assert!(
        e.starts_with("baseline: ") && e.contains("summary.json:3"),
        "{e}"
    );

    // An unwritable output.
    let opts = ReportOptions {
        baseline: None,
        out: Some(ok.join("no-such-dir").join("r.html")),
        show_host: false,
        live: false,
    };
    let e = write_report(&ok, &opts).unwrap_err().to_string();
    assert!(e.contains("cannot write the report"), "{e}");
}

#[test]
fn unknown_lines_keys_and_fields_are_ignored() {
    let dir = tmp("future");
    let s = Fixture::new("future").write(&dir);
    let text = fs::read_to_string(dir.join("intervals.jsonl")).unwrap();
    let mut out = String::new();
    for (i, l) in text.lines().enumerate() {
        out.push_str(l);
        out.push('\n');
        if i == 2 {
            out.push_str(r#"{"kind":"machine","t":0,"cpu":0.5}"#);
            out.push('\n');
            out.push('\n');
        }
    }
    // A newer writer's counter on scenario lines becomes a series (handshakes: drawn if present).
    let out = out.replace(
        r#""kind":"scenario","t":3,"#,
        r#""kind":"scenario","t":3,"handshakes":7,"future_text":"x","#,
    );
    fs::write(dir.join("intervals.jsonl"), out).unwrap();
    let mut summary: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    summary["something_new"] = serde_json::json!({"a": [1, 2]});
    summary["thresholds"] = serde_json::json!("not an array");
    fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
    let html = render_report(&dir, None).unwrap();
    let d = embedded_data(&html);
    assert_eq!(
        nums(&d["series"]["requests"]).iter().sum::<f64>() as u64,
        s.totals.requests
    );
    assert_eq!(
        nums(&d["series"]["handshakes"]).iter().sum::<f64>(),
        7.0 * 2.0
    ); // two scenarios
    assert!(html.contains("no thresholds defined"));
}

/// The rows of the failures table, as (kind, first cell) in order: `group` for a group's
/// heading (its name), `step` for a class (its name, in bold).
fn failure_rows(html: &str) -> Vec<(String, String)> {
    let start = html
        .find(r#"<table class="grid failures">"#)
        .expect("a failures table");
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    table
        .split("<tr class=\"")
        .skip(1)
        .map(|row| {
            let (kind, rest) = row.split_once('"').unwrap();
            let cell = rest.trim_start_matches("><td>").trim_start_matches("<b>");
            let end = cell.find('<').unwrap();
            (kind.to_string(), cell[..end].to_string())
        })
        .collect()
}

#[test]
fn failures_are_grouped_onrush_classes_by_family_a_protocol_class_by_protocol() {
    let dir = tmp("failure-groups");
    let s = Fixture::new("groups").write(&dir);
    let (http, timeouts) = (
        s.totals.failures_by_class["http_5xx"],
        s.totals.failures_by_class["timeout"],
    );
    assert_eq!(s.failure_classes["http_5xx"].group, "HTTP");
    // Written by a build with gRPC, which this one (onrush-report's tests) does not register:
    // the summary says the class's group and hint.
    let path = dir.join("summary.json");
    let mut summary: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    summary["totals"]["failures_by_class"]["unavailable"] = 5.into();
    summary["steps"][2]["failures_by_class"]["unavailable"] = 5.into();
    summary["failure_classes"]["unavailable"] = serde_json::json!({
        "group": "gRPC",
        "hint": "the service is unavailable (UNAVAILABLE): overloaded, shutting down or restarting",
    });
    fs::write(&path, summary.to_string()).unwrap();
    assert_eq!(onrush_metrics::FailureClass::named("unavailable"), None);

    let html = render_report(&dir, None).unwrap();
    let group = |name: &str| ("group".to_string(), name.to_string());
    let class = |name: &str| ("step".to_string(), name.to_string());
    let mut want = vec![
        (http, vec![group("HTTP"), class("http_5xx")]),
        (timeouts, vec![group("connection"), class("timeout")]),
    ];
    want.sort_by_key(|(n, _)| std::cmp::Reverse(*n)); // the group with most failures first
    let mut want: Vec<_> = want.into_iter().flat_map(|(_, rows)| rows).collect();
    want.extend([group("gRPC"), class("unavailable")]);
    assert_eq!(failure_rows(&html), want);
    assert!(
        html.contains(r#"<tr class="group"><td>gRPC</td><td class="num">5</td><td class="num">"#)
    );
    assert!(html.contains(&format!(
        r#"<tr class="group"><td>HTTP</td><td class="num">{}</td>"#,
        fmt_thousands(http)
    )));
    assert!(
        html.contains("the service is unavailable (UNAVAILABLE)"),
        "its hint"
    );
    assert!(html.contains("most in: browse / product (5)"));
    assert!(html.contains("the server failed (5xx)"), "hint of http_5xx");

    // A summary of an older onrush records no groups: onrush's own classes still have theirs,
    // a class this build does not know is in `other`, without a hint.
    summary.as_object_mut().unwrap().remove("failure_classes");
    fs::write(&path, summary.to_string()).unwrap();
    let html = render_report(&dir, None).unwrap();
    let rows = failure_rows(&html);
    for (kind, name) in [group("HTTP"), group("connection"), group("other")] {
        assert!(rows.contains(&(kind, name.clone())), "{name} in {rows:?}");
    }
    assert_eq!(
        rows[rows.len() - 2..],
        [group("other"), class("unavailable")]
    );
    assert!(!html.contains("UNAVAILABLE"));
    assert!(html.contains("the server failed (5xx)"), "hint of http_5xx");
}

#[test]
fn a_run_without_requests() {
    let dir = tmp("idle");
    let layout = onrush_metrics::Layout::new([("s", ["a"])]);
    let mut c = onrush_metrics::Collector::new(layout, onrush_metrics::RunInfo::new("idle", 0));
    c.set_duration(std::time::Duration::from_millis(300));
    c.write_results(&dir).unwrap();
    let html = render_report(&dir, None).unwrap();
    assert!(html.contains("No response was received."));
    let d = embedded_data(&html);
    assert_eq!(d["seconds"], 0);
    assert!(d["dist"]["total"]
        .as_array()
        .unwrap()
        .iter()
        .all(Value::is_null));
}

#[test]
fn names_are_escaped() {
    let dir = tmp("escape");
    let mut f = Fixture::new("<b>plan</b>");
    f.scenarios = vec![(
        "s&<x>".into(),
        vec!["</script><script>alert(1)</script>".into()],
    )];
    f.write(&dir);
    let html = render_report(&dir, None).unwrap();
    assert!(!html.contains("<script>alert(1)"));
    assert!(html.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("<h1>&lt;b&gt;plan&lt;/b&gt;</h1>"));
    let d = embedded_data(&html);
    assert_eq!(d["steps"][0], "s&<x> / </script><script>alert(1)</script>");
}

#[test]
fn groups_and_checks_have_their_tables() {
    let dir = tmp("groups-checks");
    let summary = Fixture::new("shop")
        .with_verdict(true)
        .with_groups_and_checks()
        .write(&dir);
    let html = render_report(&dir, None).unwrap();
    let t = &summary.totals;
    assert!(t.checks.fails > 0 && t.checks.passes > 0, "{:?}", t.checks);
    let g = summary.groups().next().expect("a group");
    assert_eq!(g.name, "journey");

    // Steps table: request steps only; the group has its own table.
    let section = |id: &str| -> &str {
        let start = html
            .find(&format!(r#"<section id="{id}""#))
            .unwrap_or_else(|| panic!("no section {id}"));
        let end = html[start..].find("</section>").unwrap() + start;
        &html[start..end]
    };
    let steps = section("steps");
    assert!(!steps.contains("journey"), "the group is not a step");
    assert!(steps.contains(&format!(
        r#"<td>total</td><td class="num">{}</td>"#,
        fmt_thousands(t.requests)
    )));
    let groups = section("groups");
    assert!(groups.contains("<td>journey</td>"), "{groups}");
    assert!(groups.contains(&format!(
        r#"<td class="num">{}</td>"#,
        fmt_thousands(g.requests)
    )));
    assert!(groups.contains("Groups are not counted as requests"));
    // the header counts steps and groups apart
    assert!(html.contains("5 steps, 1 group"), "header");

    // Checks table: every check, with its counts, and the total.
    let checks = section("checks");
    for c in &summary.checks {
        assert!(
            checks.contains(&format!(
                "<td>{} / {}</td><td>{}</td>",
                c.scenario, c.step, c.name
            )),
            "{c:?}"
        );
    }
    assert_eq!(
        checks.matches("<tr class=\"fail\">").count(),
        summary.checks.iter().filter(|c| c.fails > 0).count()
    );
    assert!(checks.contains(&format!(
        "{} of {} checks passed",
        fmt_thousands(t.checks.passes),
        fmt_thousands(t.checks.total())
    )));
    // Verdict area: a checks card and a chip with the failed count.
    let verdict = section("verdict-details");
    assert!(verdict.contains(r#"<div class="label">Checks</div>"#));
    assert!(verdict.contains(&format!("{} FAILED", fmt_thousands(t.checks.fails))));
    assert!(html.contains(&format!(
        r##"<a class="chip fail" href="#checks">{} failed checks</a>"##,
        fmt_thousands(t.checks.fails)
    )));

    // The per-second series and step selector leave the group out.
    let d = embedded_data(&html);
    assert_eq!(
        nums(&d["series"]["requests"]).iter().sum::<f64>() as u64,
        t.requests
    );
    let names: Vec<&str> = d["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 5);
    assert!(!names.iter().any(|n| n.contains("journey")));

    // Without groups or checks: neither section, no checks card.
    let plain = tmp("no-groups-checks");
    Fixture::new("shop").write(&plain);
    let html = render_report(&plain, None).unwrap();
    assert!(!html.contains(r#"<section id="groups""#) && !html.contains(r#"<section id="checks""#));
    assert!(!html.contains(r#"<div class="label">Checks</div>"#));
}

fn fmt_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[test]
fn a_killed_run_without_summary_is_reported_from_its_intervals() {
    // What a run killed mid-write leaves: intervals.jsonl with its header still marked
    // unfinished and its last line cut short, no summary.json.
    let dir = tmp("killed");
    let s = Fixture::new("killed").write(&dir);
    fs::remove_file(dir.join("summary.json")).unwrap();
    let text = fs::read_to_string(dir.join("intervals.jsonl")).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    header["unfinished"] = Value::Bool(true);
    header["duration_s"] = 0.0.into();
    let cut = &body[..body.len() - 25];
    fs::write(dir.join("intervals.jsonl"), format!("{header}\n{cut}")).unwrap();

    let html = render_report(&dir, None).unwrap();
    assert!(html.contains("DID NOT FINISH"), "no did-not-finish card");
    assert!(html.contains("summary rebuilt from intervals.jsonl"));
    let d = embedded_data(&html);
    // Every second is there, less the cut line's requests, and the summary (rebuilt) agrees
    // with the series.
    assert_eq!(d["seconds"].as_u64(), Some(s.run.seconds));
    let requests = nums(&d["series"]["requests"]).iter().sum::<f64>() as u64;
    assert!(
        requests < s.totals.requests && requests > s.totals.requests * 9 / 10,
        "{requests} of {}",
        s.totals.requests
    );
    assert!(html.contains(&fmt_thousands(requests)), "total {requests}");
}

/// A report is handed to others: by default it names the results directories and the plan by
/// their last component and leaves out the load generator's hostname; `show_host` shows them.
#[test]
fn the_report_hides_where_it_was_made_unless_asked() {
    let dir = tmp("host-hidden");
    let base = tmp("host-hidden-base");
    let plan = "/home/alice/acme-audit/plans/shop.yaml";
    Fixture::new(plan).with_verdict(true).write(&dir);
    Fixture::new(plan).write(&base);
    let full = dir.display().to_string();
    let full_base = base.display().to_string();
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();

    let html = render_report(&dir, Some(&base)).unwrap();
    for leak in [
        "loadgen-1",
        "/home/alice",
        full.as_str(),
        full_base.as_str(),
    ] {
        assert!(!html.contains(leak), "the report shows {leak:?}");
    }
    assert!(
        html.contains(&format!("<code>{name}</code>")),
        "the directory's name stays"
    );
    assert!(html.contains("shop.yaml") && html.contains("Linux 6.1"));
    assert_eq!(embedded_data(&html)["plan"], "shop.yaml");

    let opts = ReportOptions {
        baseline: Some(base.clone()),
        out: Some(dir.join("shown.html")),
        show_host: true,
        live: false,
    };
    let html = fs::read_to_string(write_report(&dir, &opts).unwrap()).unwrap();
    for shown in ["loadgen-1", plan, full.as_str(), full_base.as_str()] {
        assert!(html.contains(shown), "show_host: {shown:?} missing");
    }
}

/// Only a run with an open-model scenario can drop iterations: the page draws the "dropped
/// iterations and schedule lag" chart only then (the data says which).
#[test]
fn the_dropped_iterations_chart_is_for_open_model_runs_only() {
    let open = tmp("open-model");
    Fixture::new("mixed").write(&open);
    assert_eq!(
        embedded_data(&render_report(&open, None).unwrap())["open_model"],
        true
    );
    let closed = tmp("closed-only");
    let mut f = Fixture::new("closed");
    f.open_model = false;
    f.write(&closed);
    assert_eq!(
        embedded_data(&render_report(&closed, None).unwrap())["open_model"],
        false
    );
    // The load models say so even when no iteration was dropped.
    let quiet = tmp("open-no-drops");
    let mut f = Fixture::new("open, no drops").with_verdict(true);
    f.open_model = false;
    f.write(&quiet);
    assert_eq!(
        embedded_data(&render_report(&quiet, None).unwrap())["open_model"],
        true
    );
}
