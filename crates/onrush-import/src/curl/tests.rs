//! One test per option family, and Chrome's "Copy as cURL (bash)" output whole.

use super::*;

fn step(cmd: &str) -> (String, CurlImport) {
    let out = import_curl(&[cmd.to_string()]).unwrap();
    let plan = out.plan_yaml("test");
    onrush_plan::load_str_with_grammars(
        "curl.yaml",
        &plan,
        std::path::Path::new("."),
        &[],
        &[],
        onrush_protocols::grammars(),
    )
    .unwrap_or_else(|e| panic!("{e}\n{plan}"));
    (plan, out)
}

#[test]
fn method_headers_and_url() {
    let (y, out) = step(
        "curl -X PUT 'http://127.0.0.1:8080/things/7?q=1#top' -H 'X-Trace: abc 1' -H 'Accept:'",
    );
    assert_eq!(out.origin, "http://127.0.0.1:8080");
    assert!(y.contains("put: \"/things/7?q=1\""), "{y}");
    assert!(y.contains("X-Trace: \"abc 1\""), "{y}");
    let (y, _) = step("curl -XPATCH http://h/x");
    assert!(y.contains("patch: \"/x\""), "{y}");
    let (y, _) = step("curl -X PURGE http://h/cache");
    assert!(
        y.contains("method: \"PURGE\"") && y.contains("path: \"/cache\""),
        "{y}"
    );
    let (y, _) = step("curl -I http://h/");
    assert!(y.contains("head: \"/\""), "{y}");
}

#[test]
fn data_options_make_a_post_body() {
    let (y, _) = step("curl http://h/f -d a=1 -d 'b=2\n3'");
    assert!(
        y.contains("post: \"/f\"") && y.contains("body: \"a=1&b=23\""),
        "{y}"
    );
    assert!(
        y.contains("Content-Type: \"application/x-www-form-urlencoded\""),
        "{y}"
    );
    let (y, _) =
        step("curl http://h/j -H 'content-type: application/json' --data-raw '{\"k\":\"${x}\"}'");
    assert!(
        y.contains(r#"body: "{\"k\":\"$${x}\"}""#),
        "literal ${{}}: {y}"
    );
    assert!(!y.contains("x-www-form-urlencoded"), "{y}");
    let (y, _) = step("curl http://h/e --data-urlencode 'q=a b&c'");
    assert!(y.contains("body: \"q=a%20b%26c\""), "{y}");
    let (y, _) = step("curl -G http://h/s?x=1 -d q=shoes");
    assert!(
        y.contains("get: \"/s?x=1&q=shoes\"") && !y.contains("body"),
        "{y}"
    );
    let (y, _) = step("curl --json '{\"a\":1}' http://h/api");
    assert!(y.contains("Content-Type: \"application/json\""), "{y}");
}

#[test]
fn forms_auth_and_cookies() {
    let out = import_curl(&[
        "curl".into(),
        "http://h/up".into(),
        "-F".into(),
        "title=q3".into(),
        "-F".into(),
        "file=@report.pdf;type=application/pdf".into(),
        "-u".into(),
        "bob:s3:cret".into(),
        "-b".into(),
        "a=1; b=2".into(),
    ])
    .unwrap();
    let y = yaml::write(&out.step);
    assert!(y.contains("post: \"/up\""), "{y}");
    assert!(
        y.contains("title: \"q3\"")
            && y.contains("file: \"report.pdf\"")
            && y.contains("content_type: \"application/pdf\""),
        "{y}"
    );
    assert!(
        y.contains("user: \"bob\"") && y.contains("password: \"s3:cret\""),
        "{y}"
    );
    assert!(y.contains("Cookie: \"a=1; b=2\""), "{y}");
}

#[test]
fn tls_redirects_compression_and_http2_go_to_http_settings() {
    let (y, _) = step("curl -sSLk --compressed --http2 https://127.0.0.1:8443/ -m 5");
    assert!(
        y.contains("redirects: 20")
            && y.contains("decompress: true")
            && y.contains("insecure: true"),
        "{y}"
    );
    assert!(
        y.contains("version: \"auto\"") && y.contains("timeout: \"5s\""),
        "{y}"
    );
    let out = import_curl(&["curl --cacert ca.pem --cert me.pem --key me.key https://h/".into()])
        .unwrap();
    let http = yaml::write(&out.http);
    assert!(
        http.contains("ca_file: \"ca.pem\"")
            && http.contains("client_cert: \"me.pem\"")
            && http.contains("client_key: \"me.key\""),
        "{http}"
    );
}

#[test]
fn unknown_options_are_warnings_not_errors() {
    let (_, out) =
        step("curl --frobnicate -o /dev/null -w '%{http_code}' http://h/ --proxy-negotiate");
    assert_eq!(
        out.warnings,
        [
            "--frobnicate: not understood, left out",
            "--proxy-negotiate: not understood, left out"
        ]
    );
    assert!(import_curl(&["curl -H".into()])
        .unwrap_err()
        .contains("-H needs a value"));
    assert!(import_curl(&["curl -s".into()])
        .unwrap_err()
        .contains("no URL"));
}

#[test]
fn chrome_copy_as_curl_bash() {
    let pasted = "curl 'https://shop.example/api/cart?id=7' \\\n  -H 'accept: application/json' \\\n  -H $'x-note: it\\'s' \\\n  -H 'user-agent: Mozilla/5.0' \\\n  --data-raw $'{\"name\":\"caf\\u00e9\"}'";
    let (y, out) = step(pasted);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert!(y.contains("post: \"/api/cart?id=7\""), "{y}");
    assert!(y.contains("x-note: \"it's\""), "{y}");
    assert!(y.contains("body: \"{\\\"name\\\":\\\"café\\\"}\""), "{y}");
}
