//! A HAR shaped like Chrome's (HTTP/2, pseudo-headers, `_resourceType`, pages) imported whole.

use super::*;

const CHROME: &str = include_str!("testdata/chrome-h2-login.har");

fn import(options: &HarOptions) -> HarImport {
    let out = import_har(CHROME, options).unwrap();
    // Every plan the importer writes loads.
    onrush_plan::load_str("imported.yaml", &out.yaml, std::path::Path::new("."), &[])
        .unwrap_or_else(|e| panic!("{e}\n{}", out.yaml));
    out
}

#[test]
fn a_chrome_recording_becomes_grouped_steps_with_correlation() {
    let out = import(&HarOptions::default());
    let y = &out.yaml;
    assert!(y.contains("base_url: \"https://shop.example\""), "{y}");
    assert!(y.contains("decompress: true"), "{y}");
    assert!(
        y.contains("name: \"https://shop.example/login\""),
        "page group: {y}"
    );
    // Static and third-party left out; the 404 favicon too (an image), the 404 API call kept.
    assert!(
        !y.contains("app.css") && !y.contains("lib.js") && !y.contains("favicon"),
        "{y}"
    );
    assert!(y.contains("expect_status: 404"), "{y}");
    // Correlation: the hidden input into the form, the meta into the header, the id into the path.
    assert!(y.contains("css: \"input[name='_csrf']\""), "{y}");
    assert!(
        y.contains("body: \"_csrf=${csrf}&user=alice&password=s3cr%24t%7B\""),
        "{y}"
    );
    assert!(y.contains("x-csrf-token: \"${csrf_token}\""), "{y}");
    assert!(y.contains("jsonpath: \"$.order.id\""), "{y}");
    assert!(y.contains("get: \"/api/orders/${id}?fields=all\""), "{y}");
    assert!(y.contains("name: \"GET /api/orders/{id}\""), "{y}");
    // Browser-managed headers are gone.
    for gone in [":authority", "content-length", "cookie:", "accept-encoding"] {
        assert!(!y.contains(gone), "{gone} in {y}");
    }
    assert!(y.contains("user-agent:"), "{y}");
    let vars: Vec<&str> = out
        .report
        .correlations
        .iter()
        .map(|c| c.var.as_str())
        .collect();
    assert_eq!(vars, ["csrf_token", "csrf", "id"]);
    assert_eq!(out.report.kept, 6);
    let skipped: Vec<usize> = out.report.skipped.iter().map(|s| s.entry).collect();
    assert_eq!(skipped, [1, 2, 7]);
    assert!(out
        .report
        .dropped_headers
        .iter()
        .any(|d| d.name == "cookie"));
    // Gaps: login page → login POST (2.8 s), orders page → API call (2.4 s), the capped 34 s.
    assert!(y.contains("think: \"2795ms\""), "{y}");
    assert!(
        y.contains("think: \"10000ms\""),
        "capped at --think-max: {y}"
    );
}

#[test]
fn think_options_scale_cap_or_remove_the_gaps() {
    let scaled = import(&HarOptions {
        think_scale: 0.5,
        think_max_ms: 1000,
        ..HarOptions::default()
    });
    assert!(scaled.yaml.contains("think: \"1000ms\""), "{}", scaled.yaml);
    assert!(!scaled.yaml.contains("2795ms"));
    let none = import(&HarOptions {
        no_think: true,
        ..HarOptions::default()
    });
    assert!(!none.yaml.contains("think:"), "{}", none.yaml);
}

#[test]
fn static_and_third_party_can_be_kept() {
    let all = import(&HarOptions {
        keep_static: true,
        keep_third_party: true,
        ..HarOptions::default()
    });
    assert!(
        all.yaml.contains("get: \"/static/app.css\""),
        "{}",
        all.yaml
    );
    assert!(
        all.yaml
            .contains("get: \"https://cdn.thirdparty.example/lib.js\""),
        "{}",
        all.yaml
    );
    let host = import(&HarOptions {
        hosts: vec!["cdn.thirdparty.example".into()],
        keep_static: true,
        ..HarOptions::default()
    });
    assert!(host.yaml.contains("lib.js"), "{}", host.yaml);
}

#[test]
fn templates_in_recorded_text_stay_literal() {
    let har = CHROME.replace(
        "\"text\": \"{\\\"item\\\":\\\"book\\\"",
        "\"text\": \"{\\\"item\\\":\\\"${book}\\\"",
    );
    assert_ne!(har, CHROME);
    let out = import_har(&har, &HarOptions::default()).unwrap();
    assert!(out.yaml.contains("$${book}"), "{}", out.yaml);
    onrush_plan::load_str("p.yaml", &out.yaml, std::path::Path::new("."), &[]).unwrap();
}

#[test]
fn a_har_without_requests_is_an_error_naming_the_field() {
    let e = import_har(r#"{"log": {"entries": []}}"#, &HarOptions::default()).unwrap_err();
    assert_eq!(e.field, "log.entries");
    let e = import_har("[1, 2", &HarOptions::default()).unwrap_err();
    assert!(e.at.is_some(), "{e}");
}
