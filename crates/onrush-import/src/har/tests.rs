//! A HAR shaped like Chrome's (HTTP/2, pseudo-headers, `_resourceType`, pages) imported whole.

use super::*;

const CHROME: &str = include_str!("testdata/chrome-h2-login.har");

fn import(options: &HarOptions) -> HarImport {
    let out = import_har(CHROME, options).unwrap();
    // Every plan the importer writes loads.
    onrush_plan::load_str_with_grammars(
        "imported.yaml",
        &out.yaml,
        std::path::Path::new("."),
        &[],
        &[],
        onrush_protocols::grammars(),
    )
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
    onrush_plan::load_str_with_grammars(
        "p.yaml",
        &out.yaml,
        std::path::Path::new("."),
        &[],
        &[],
        onrush_protocols::grammars(),
    )
    .unwrap();
}

#[test]
fn a_har_without_requests_is_an_error_naming_the_field() {
    let e = import_har(r#"{"log": {"entries": []}}"#, &HarOptions::default()).unwrap_err();
    assert_eq!(e.field, "log.entries");
    let e = import_har("[1, 2", &HarOptions::default()).unwrap_err();
    assert!(e.at.is_some(), "{e}");
}

/// Recorded by a real Chromium 156 (Debian's, driven by Playwright 1.61's `recordHar`) going
/// through crates/onrush/tests/servers/shop_server.py: sign in with the form, then the page's
/// script creates, reads and pays an order with fetch(). HTTP/1.1 with every header the
/// browser sent (Cookie, Connection, sec-ch-ua, Sec-Fetch-*…), one HAR page for the whole tab,
/// the form's POST answered 303, a binary image as base64, a script from another host.
const CHROMIUM: &str = include_str!("testdata/chromium-shop.har");

#[test]
fn a_real_chromium_recording_replays_its_tokens_and_ids() {
    let out = import_har(CHROMIUM, &HarOptions::default()).unwrap();
    let y = &out.yaml;
    onrush_plan::load_str_with_grammars(
        "chromium.yaml",
        y,
        std::path::Path::new("."),
        &[],
        &[],
        onrush_protocols::grammars(),
    )
    .unwrap_or_else(|e| panic!("{e}\n{y}"));
    assert_eq!(out.report.kept, 6, "{y}");
    let skipped: Vec<(usize, &str)> = out
        .report
        .skipped
        .iter()
        .map(|s| (s.entry, s.reason.split(' ').next().unwrap_or("")))
        .collect();
    assert_eq!(
        skipped,
        [(1, "static"), (2, "static"), (3, "third-party")],
        "{:#?}",
        out.report.skipped
    );
    // One HAR page ("Home", the tab's last title) holds two shown pages: two groups, each
    // named after its own <title>; the form's POST (303) stays with the sign-in page.
    let lines: Vec<&str> = y.lines().map(str::trim).collect();
    let groups: Vec<&str> = lines
        .windows(2)
        .filter(|w| w[0] == "- group:")
        .map(|w| w[1])
        .collect();
    assert_eq!(groups, ["name: \"Sign in\"", "name: \"Home\""], "{y}");
    let sign_in = &y[y.find("name: \"Sign in\"").unwrap()..y.find("name: \"Home\"").unwrap()];
    assert!(sign_in.contains("post: \"/login\""), "{y}");

    // The hidden input into the form body, the <meta> into fetch()'s header, the order's id
    // into the next two paths and the payment's JSON.
    let notes: Vec<(&str, &str, usize)> = out
        .report
        .correlations
        .iter()
        .map(|c| (c.var.as_str(), c.extractor.as_str(), c.used_in.len()))
        .collect();
    assert_eq!(
        notes,
        [
            ("csrf_token", "css meta[name='csrf-token'] @content", 1),
            ("csrf_token_2", "css input[name='csrf_token'] @value", 1),
            ("id", "jsonpath $.order.id", 3),
        ],
        "{:#?}",
        out.report.correlations
    );
    assert!(
        y.contains("body: \"csrf_token=${csrf_token_2}&user=alice&password=s3cret\""),
        "{y}"
    );
    assert!(y.contains("X-CSRF-Token: \"${csrf_token}\""), "{y}");
    assert!(y.contains("post: \"/api/orders/${id}/pay\""), "{y}");
    assert!(y.contains("\"order_id\\\":\\\"${id}\\\""), "{y}");

    // What the browser and its connection manage is left to onrush; the rest is sent as
    // recorded, with Origin and Referer following `base_url`.
    for gone in [
        "Cookie:",
        "Connection:",
        "Host:",
        "Content-Length:",
        "Accept-Encoding:",
    ] {
        assert!(!y.contains(gone), "{gone} in {y}");
    }
    assert!(y.contains("decompress: true"), "{y}");
    assert!(y.contains("sec-ch-ua: "), "{y}");
    assert!(y.contains("Origin: \"${base_url}\""), "{y}");
    assert!(y.contains("Referer: \"${base_url}/home\""), "{y}");
    assert!(!y.contains("Referer: \"http://127.0.0.1"), "{y}");
    assert_eq!(
        out.report.think_steps, 2,
        "the user typed, then looked: {y}"
    );
}

#[test]
fn origin_and_referer_of_the_recorded_site_follow_base_url() {
    let site = "https://shop.example:8443";
    assert_eq!(on_site("Origin", site, site), "${base_url}");
    assert_eq!(
        on_site("referer", "https://shop.example:8443/cart?x=1", site),
        "${base_url}/cart?x=1"
    );
    // Another site, a longer host or port, another header: as recorded.
    for (name, value) in [
        ("Referer", "https://search.example/?q=shop"),
        ("Referer", "https://shop.example:84430/"),
        ("Origin", "https://shop.example:8443.evil"),
        ("X-Return-To", "https://shop.example:8443/home"),
    ] {
        assert_eq!(on_site(name, value, site), value);
    }
    assert_eq!(
        on_site("Referer", "https://x/${a}", site),
        "https://x/$${a}"
    );
}

#[test]
fn what_chrome_answered_from_its_cache_is_not_replayed() {
    let mut har: serde_json::Value = serde_json::from_str(CHROMIUM).unwrap();
    har["log"]["entries"][5]["_fromCache"] = "disk".into();
    let out = import_har(&har.to_string(), &HarOptions::default()).unwrap();
    assert_eq!(out.report.kept, 5);
    let cached = out.report.skipped.iter().find(|s| s.entry == 5).unwrap();
    assert!(cached.request.ends_with("/home"), "{cached:?}");
    assert!(cached.reason.contains("disk cache"), "{cached:?}");
    assert!(!out.yaml.contains("get: \"/home\""), "{}", out.yaml);
}
