//! End to end: scenario features (runtime variables, template functions, extractors, checks,
//! feeders, cookies, forms, multipart, decompression, redirects, auth, throttling, flow steps)
//! run by the real binary against the built-in server, or against a tiny recording server
//! defined here when the test must see every request target.

use crate::common;
use common::*;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

// ---------------------------------------------------------------------------------------------
// Helpers

/// A directory with the plan (`{port}` replaced) and the given data files.
fn prepare(name: &str, plan: &str, port: u16, files: &[(&str, &[u8])]) -> (PathBuf, PathBuf) {
    let dir = temp_dir(&format!("scen-{name}"));
    for (file, bytes) in files {
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    let path = write_plan(&dir, &plan.replace("{port}", &port.to_string()));
    (dir, path)
}

/// Runs `onrush run PLAN --quiet --out DIR/out`; returns the output and the out directory.
fn run_raw(name: &str, plan: &str, port: u16, files: &[(&str, &[u8])]) -> (Output, PathBuf) {
    let (dir, path) = prepare(name, plan, port, files);
    let out = dir.join("out");
    let output = onrush()
        .arg("run")
        .arg(&path)
        .arg("--quiet")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    (output, out)
}

/// Runs a plan, asserts the exit code, returns summary.json.
fn run_code(name: &str, plan: &str, port: u16, files: &[(&str, &[u8])], code: i32) -> Value {
    let (output, out) = run_raw(name, plan, port, files);
    assert_eq!(output.status.code(), Some(code), "{}", text(&output));
    summary(&out)
}

/// Runs a plan that must be refused (exit 2); returns stderr.
fn run_bad(name: &str, plan: &str, files: &[(&str, &[u8])]) -> String {
    let (output, out) = run_raw(name, plan, 9, files);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        !out.join("summary.json").exists(),
        "a refused plan writes no results"
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Requests of a step, 0 when the step is not in the summary at all.
fn requests(s: &Value, scenario: &str, name: &str) -> u64 {
    s["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["scenario"] == scenario && x["name"] == name)
        .map_or(0, |x| x["requests"].as_u64().unwrap())
}

/// (passes, fails) of the check `name` of step `step`.
fn check(s: &Value, step: &str, name: &str) -> (u64, u64) {
    let c = s["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["step"] == step && c["name"] == name)
        .unwrap_or_else(|| panic!("no check {step}/{name} in {:#}", s["checks"]));
    (c["passes"].as_u64().unwrap(), c["fails"].as_u64().unwrap())
}

fn assert_all_checks_passed(s: &Value) {
    for c in s["checks"].as_array().unwrap() {
        assert_eq!(c["fails"], 0, "check failed: {c:#}");
    }
    assert_eq!(u64_at(s, "/totals/checks/fails"), 0, "{:#}", s["checks"]);
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of the first `n` bytes of the `/bytes/N` pattern (byte i is `i % 256`).
fn pattern_sha256(n: u64) -> String {
    let block: Vec<u8> = (0..65536u32).map(|i| (i % 256) as u8).collect();
    let mut h = Sha256::new();
    let mut left = n;
    while left > 0 {
        let take = left.min(block.len() as u64) as usize;
        h.update(&block[..take]);
        left -= take as u64;
    }
    hex(&h.finalize())
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A minimal HTTP/1.1 server that answers every request `200 ok` (keep-alive) and records each
/// request target, for tests that must see exactly which requests were sent.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start() -> Self {
        Self::start_with(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    }

    /// Answers every request with `response` (a whole HTTP/1.1 response with a length).
    fn start_with(response: &'static [u8]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let log = log.clone();
                std::thread::spawn(move || {
                    let _ = conn.set_nodelay(true);
                    let mut writer = conn.try_clone().unwrap();
                    let mut reader = BufReader::new(conn);
                    loop {
                        let mut line = String::new();
                        match reader.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        let line = line.trim_end().to_string();
                        if line.is_empty() {
                            continue;
                        }
                        let mut length = 0usize;
                        loop {
                            let mut h = String::new();
                            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                                return;
                            }
                            let h = h.trim_end();
                            if h.is_empty() {
                                break;
                            }
                            if let Some((k, v)) = h.split_once(':') {
                                if k.eq_ignore_ascii_case("content-length") {
                                    length = v.trim().parse().unwrap_or(0);
                                }
                            }
                        }
                        if length > 0 {
                            let mut body = vec![0u8; length];
                            if reader.read_exact(&mut body).is_err() {
                                return;
                            }
                        }
                        let target = line.split(' ').nth(1).unwrap_or("").to_string();
                        log.lock().unwrap().push(target);
                        if writer.write_all(response).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Recorder { port, seen }
    }

    fn targets(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// The decoded query parameters of a request target (no percent-decoding needed here).
fn query_of(target: &str) -> HashMap<String, String> {
    let q = target.split_once('?').map_or("", |(_, q)| q);
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Login flow: tokens extracted five ways, sent back four ways.

#[test]
fn login_tokens_extracted_five_ways_are_accepted_by_the_server() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: login
    load: { vus: 2, iterations: 3 }
    steps:
      - get: /login
        name: page
        extract:
          t_boundary: { boundary: ['name="csrf_token" value="', '"'] }
          t_regex: { regex: 'data-token="([^"]+)"' }
          t_css: { css: "input[name=csrf_token]", attribute: value }
          t_xpath: { xpath: "//meta[@name='csrf-token']/@content" }
      - get: /login?format=json
        name: api
        extract:
          t_json: { jsonpath: "$.token" }
      - get: /query?a=${t_boundary}&b=${t_regex}&c=${t_css}&d=${t_xpath}&e=${t_json}
        name: same
        check:
          - { jsonpath: "$.a", matches: "^tok-[0-9]+-[0-9a-f]{16}$", name: a is a token }
          - { jsonpath: "$.b", equals: "${t_boundary}", name: regex = boundary }
          - { jsonpath: "$.c", equals: "${t_boundary}", name: css = boundary }
          - { jsonpath: "$.d", equals: "${t_boundary}", name: xpath = boundary }
          - { jsonpath: "$.e", matches: "^tok-", name: json is a token }
      - post: /login
        name: form
        form: { csrf_token: "${t_boundary}", username: "user${vu}" }
        check: [{ status: 200, name: ok }, { jsonpath: "$.via", equals: form, name: via }]
      - get: /account
        name: account
        check: [{ status: 200, name: ok }]
      - get: /verify?token=${t_regex}
        name: query
        check: [{ status: 200, name: ok }, { jsonpath: "$.via", equals: query, name: via }]
      - get: /verify
        name: header
        headers: { X-CSRF-Token: "${t_css}" }
        check: [{ status: 200, name: ok }, { jsonpath: "$.via", equals: header, name: via }]
      - get: /verify
        name: bearer xpath
        auth: { bearer: "${t_xpath}" }
        check: [{ status: 200, name: ok }, { jsonpath: "$.via", equals: bearer, name: via }]
      - get: /verify
        name: bearer json
        auth: { bearer: "${t_json}" }
        check: [{ status: 200, name: ok }]
"#;
    let s = run_code("login", plan, server.port(), &[], 0);
    assert_all_checks_passed(&s);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    // Five extractions per iteration, each one a check of its own.
    assert_eq!(check(&s, "page", "extract t_xpath"), (6, 0));
    assert_eq!(check(&s, "api", "extract t_json"), (6, 0));
    assert_eq!(check(&s, "bearer json", "ok"), (6, 0));
    let login = server.0.as_ref().unwrap().login_stats();
    assert_eq!(
        login.tokens_issued, 12,
        "two /login per iteration: {login:?}"
    );
    assert_eq!(
        login.tokens_ok, 30,
        "five token checks per iteration: {login:?}"
    );
    assert_eq!(login.tokens_bad, 0, "{login:?}");
    assert_eq!(
        login.sessions_ok, 6,
        "the session cookie was sent: {login:?}"
    );
    assert_eq!(login.sessions_bad, 0, "{login:?}");
}

#[test]
fn xml_token_and_session_cookie_extracted_by_hand_without_a_jar() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
http: { cookies: off }
scenarios:
  - name: xml
    load: { vus: 2, iterations: 2 }
    steps:
      - get: /login?format=xml
        name: xml
        extract:
          t_attr: { xpath: "/login/@token" }
          t_elem: { xpath: "//login/token" }
          ctype: { header: Content-Type }
        check: [{ header: Content-Type, contains: xml, name: is xml }]
      - post: /login
        name: sign in
        headers: { Content-Type: application/json }
        body: '{"token": "${t_attr}", "username": "xml${vu}"}'
        extract:
          sess: { cookie: session }
          code: { status: true }
        check:
          - { jsonpath: "$.via", equals: json, name: via json }
          - { header: Set-Cookie, matches: "^session=sess-", name: set-cookie }
      - get: /verify?csrf_token=${t_elem}
        name: verify elem
        check: [{ status: 200, name: ok }]
      - get: /account
        name: no jar
        expect_status: 401
      - get: /account
        name: by hand
        headers: { Cookie: "session=${sess}" }
        check: [{ jsonpath: "$.session", equals: "${sess}", name: same session }]
      - get: /query?code=${code}&ct=${urlencode(ctype)}
        name: show
        check:
          - { jsonpath: "$.code", equals: "200", name: code }
          - { jsonpath: "$.ct", matches: "xml", name: ctype }
"#;
    let s = run_code("login-xml", plan, server.port(), &[], 0);
    assert_all_checks_passed(&s);
    assert_eq!(check(&s, "by hand", "same session"), (4, 0));
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let login = server.0.as_ref().unwrap().login_stats();
    assert_eq!(login.tokens_issued, 4, "{login:?}");
    assert_eq!(login.tokens_ok, 8, "{login:?}");
    assert_eq!(login.tokens_bad, 0, "{login:?}");
    assert_eq!(login.sessions_ok, 4, "{login:?}");
    assert_eq!(
        login.sessions_bad, 4,
        "cookies: off sends no jar cookie: {login:?}"
    );
}

#[test]
fn a_wrong_extractor_with_a_default_sends_the_default_and_fails() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: login
    load: { vus: 1, iterations: 4 }
    steps:
      - get: /login
        name: page
        extract:
          token: { regex: 'data-tokn="([^"]+)"', default: bogus }
      - get: /verify?token=${token}
        name: verify
        check: [{ status: 200, name: ok }]
"#;
    let s = run_code("login-bad", plan, server.port(), &[], 0);
    let login = server.0.as_ref().unwrap().login_stats();
    assert_eq!(login.tokens_issued, 4, "{login:?}");
    assert_eq!(login.tokens_bad, 4, "the default was sent: {login:?}");
    assert_eq!(login.tokens_ok, 0, "{login:?}");
    let verify = step(&s, "login", "verify");
    assert_eq!(u64_at(verify, "/requests"), 4);
    assert_eq!(u64_at(verify, "/failures"), 4, "{verify:#}");
    assert_eq!(u64_at(verify, "/status_codes/403"), 4, "{verify:#}");
    assert_eq!(check(&s, "verify", "ok"), (0, 4));
    // With a default there is no extraction check, and the page step itself did not fail.
    assert_eq!(u64_at(step(&s, "login", "page"), "/failures"), 0);
}

// ---------------------------------------------------------------------------------------------
// 2. Feeders: `unique` rows, `on_exhausted: stop` and `recycle`.

fn ids_csv(rows: usize) -> Vec<u8> {
    let mut csv = String::from("id\n");
    for i in 0..rows {
        csv.push_str(&format!("row{i}\n"));
    }
    csv.into_bytes()
}

fn feeder_plan(iterations: u64, exhausted: &str) -> String {
    format!(
        r#"target: http://127.0.0.1:{{port}}
scenarios:
  - name: feed
    load: {{ vus: 50, shared_iterations: {iterations} }}
    feeders:
      - {{ file: ids.csv, mode: unique, on_exhausted: {exhausted} }}
    steps:
      - get: /query?id=${{id}}
        name: row
"#
    )
}

fn id_counts(rec: &Recorder) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for t in rec.targets() {
        let q = query_of(&t);
        *counts.entry(q["id"].clone()).or_insert(0) += 1;
    }
    counts
}

#[test]
fn unique_feeder_gives_each_row_to_exactly_one_request() {
    let rec = Recorder::start();
    let csv = ids_csv(1000);
    let s = run_code(
        "unique",
        &feeder_plan(1000, "stop"),
        rec.port,
        &[("ids.csv", &csv)],
        0,
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 1000);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let counts = id_counts(&rec);
    assert_eq!(rec.targets().len(), 1000);
    assert_eq!(counts.len(), 1000, "every row was used");
    for i in 0..1000 {
        assert_eq!(counts.get(&format!("row{i}")), Some(&1), "row{i}");
    }
}

#[test]
fn unique_feeder_stops_when_exhausted_or_recycles() {
    let csv = ids_csv(1000);

    let rec = Recorder::start();
    let (output, out) = run_raw(
        "unique-stop",
        &feeder_plan(1500, "stop"),
        rec.port,
        &[("ids.csv", &csv)],
    );
    assert!(out.join("summary.json").exists(), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(
        rec.targets().len(),
        1000,
        "no request after the rows ran out"
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 1000, "{}", text(&output));
    let counts = id_counts(&rec);
    assert_eq!(counts.len(), 1000);
    assert!(counts.values().all(|&c| c == 1));
    assert!(
        s["stopped_early"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("ran out")),
        "the summary says why the scenario ended: {s:#}"
    );
    assert!(text(&output).contains("ran out"), "{}", text(&output));

    let rec = Recorder::start();
    let s = run_code(
        "unique-recycle",
        &feeder_plan(1500, "recycle"),
        rec.port,
        &[("ids.csv", &csv)],
        0,
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 1500);
    assert_eq!(rec.targets().len(), 1500);
    let counts = id_counts(&rec);
    assert_eq!(counts.len(), 1000, "every row used at least once");
    assert!(
        counts.values().all(|&c| (1..=2).contains(&c)),
        "no row used more than twice in 1.5 passes: {counts:?}"
    );
    assert_eq!(counts.values().filter(|&&c| c == 2).count(), 500);
}

// ---------------------------------------------------------------------------------------------
// 3. Cookies.

fn cookie_plan(mode: &str, set_once: bool) -> String {
    let set = if set_once {
        "      - once:\n          - get: /cookies/set?a=1\n            name: set\n"
    } else {
        "      - get: /cookies/set?a=1\n        name: set\n"
    };
    format!(
        r#"target: http://127.0.0.1:{{port}}
http: {{ cookies: {mode} }}
scenarios:
  - name: c
    load: {{ vus: 2, iterations: 3 }}
    steps:
{set}      - get: /cookies
        name: read
        check: [{{ jsonpath: "$.a", equals: "1", name: a }}]
"#
    )
}

#[test]
fn cookie_jar_modes() {
    let server = Server::start();
    let s = run_code(
        "cookies-on",
        &cookie_plan("on", false),
        server.port(),
        &[],
        0,
    );
    assert_eq!(check(&s, "read", "a"), (6, 0));

    let s = run_code(
        "cookies-off",
        &cookie_plan("off", false),
        server.port(),
        &[],
        0,
    );
    assert_eq!(check(&s, "read", "a"), (0, 6), "no jar, no cookie sent");

    let s = run_code(
        "cookies-on-once",
        &cookie_plan("on", true),
        server.port(),
        &[],
        0,
    );
    assert_eq!(requests(&s, "c", "set"), 2, "once per VU");
    assert_eq!(
        check(&s, "read", "a"),
        (6, 0),
        "the jar lives as long as the VU"
    );

    let s = run_code(
        "cookies-per-iteration",
        &cookie_plan("per_iteration", true),
        server.port(),
        &[],
        0,
    );
    assert_eq!(
        check(&s, "read", "a"),
        (2, 4),
        "only iteration 0 (where `once` set it) sends the cookie"
    );
}

#[test]
fn each_vu_has_its_own_cookie_jar() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: c
    load: { vus: 5, iterations: 4 }
    steps:
      - get: /cookies/set?who=v${vu}&it=i${iteration}
        name: set
      - think: 1ms..5ms
      - get: /cookies
        name: read
        check:
          - { jsonpath: "$.who", equals: "v${vu}", name: own }
          - { jsonpath: "$.it", equals: "i${iteration}", name: replaced }
      - get: /cookies/delete?it
        name: delete
      - get: /cookies
        name: after delete
        check:
          - { jsonpath: "$.it", exists: false, name: deleted }
          - { jsonpath: "$.who", equals: "v${vu}", name: kept }
"#;
    let s = run_code("cookies-per-vu", plan, server.port(), &[], 0);
    assert_all_checks_passed(&s);
    assert_eq!(check(&s, "read", "own"), (20, 0));
    assert_eq!(check(&s, "after delete", "deleted"), (20, 0));
}

#[test]
fn a_failed_login_in_once_with_stop_vu_stops_the_vu() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: s
    load: { vus: 3, iterations: 4 }
    steps:
      - once:
          - get: /login?format=json
            name: token
            extract:
              token: { jsonpath: "$.token" }
          - post: /login
            name: sign in
            form: { csrf_token: "${token}x", username: "u${vu}" }
            on_failure: stop_vu
      - get: /account
        name: account
"#;
    let s = run_code("once-stop-vu", plan, server.port(), &[], 0);
    assert_eq!(requests(&s, "s", "token"), 3);
    assert_eq!(requests(&s, "s", "sign in"), 3);
    assert_eq!(requests(&s, "s", "account"), 0, "every VU stopped");
    let login = server.0.as_ref().unwrap().login_stats();
    assert_eq!(login.tokens_bad, 3, "{login:?}");
}

// ---------------------------------------------------------------------------------------------
// 4. Forms and multipart.

#[test]
fn urlencoded_form_fields_arrive_decoded() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: f
    load: { vus: 3, iterations: 2 }
    steps:
      - post: /form
        name: form
        form: { a: "x y", b: "${vu}", c: "1&2=3" }
        check:
          - { jsonpath: "$.fields.a", equals: "x y", name: a }
          - { jsonpath: "$.fields.b", equals: "${vu}", name: b }
          - { jsonpath: "$.fields.b", matches: "^[0-9]+$", name: b is a number }
          - { jsonpath: "$.fields.c", equals: "1&2=3", name: c }
          - { jsonpath: "$.files[0]", exists: false, name: no files }
"#;
    let s = run_code("form", plan, server.port(), &[], 0);
    assert_all_checks_passed(&s);
    assert_eq!(check(&s, "form", "c"), (6, 0));
    assert_eq!(u64_at(&s, "/totals/failures"), 0);
}

#[test]
fn multipart_uploads_a_200_mb_file_from_20_vus_in_constant_memory() {
    const SIZE: usize = 200 << 20;
    let server = Server::start();
    let dir = temp_dir("scen-multipart-data");
    let file = dir.join("big.bin");
    let mut hasher = Sha256::new();
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
        let chunk: Vec<u8> = (0..1 << 20)
            .map(|i: u32| (i.wrapping_mul(7) % 251) as u8)
            .collect();
        for _ in 0..SIZE / chunk.len() {
            w.write_all(&chunk).unwrap();
            hasher.update(&chunk);
        }
        w.flush().unwrap();
    }
    let digest = hex(&hasher.finalize());
    let plan = format!(
        r#"target: http://127.0.0.1:{{port}}
http: {{ timeout: 120s }}
scenarios:
  - name: m
    load: {{ vus: 20, iterations: 1 }}
    steps:
      - post: /form
        name: upload
        multipart:
          title: "report ${{vu}}"
          upload: {{ file: {file}, content_type: application/octet-stream }}
        check:
          - {{ status: 200, name: ok }}
          - {{ jsonpath: "$.fields.title", equals: "report ${{vu}}", name: title }}
          - {{ jsonpath: "$.files[0].field", equals: upload, name: field }}
          - {{ jsonpath: "$.files[0].filename", equals: big.bin, name: filename }}
          - {{ jsonpath: "$.files[0].content_type", equals: application/octet-stream, name: type }}
          - {{ jsonpath: "$.files[0].length", equals: "{SIZE}", name: length }}
          - {{ jsonpath: "$.files[0].sha256", equals: "{digest}", name: sha256 }}
"#,
        file = file.display()
    );
    let started = Instant::now();
    let s = run_code("multipart", &plan, server.port(), &[], 0);
    eprintln!("multipart: 20 x 200 MiB in {:?}", started.elapsed());
    assert_all_checks_passed(&s);
    assert_eq!(check(&s, "upload", "sha256"), (20, 0));
    assert_eq!(check(&s, "upload", "length"), (20, 0));
    let rss = f64_at(&s, "/generator/rss_mb_peak");
    eprintln!("multipart: peak RSS {rss} MB");
    assert!(rss < 100.0, "peak RSS {rss} MB: the file must be streamed");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// 5. Body hash and size checks on a 1 GiB download.

#[test]
fn a_1_gib_download_is_hashed_while_streaming() {
    const SIZE: u64 = 1 << 30;
    let server = Server::start();
    let digest = pattern_sha256(SIZE);
    let plan = format!(
        r#"target: http://127.0.0.1:{{port}}
http: {{ timeout: 120s }}
scenarios:
  - name: big
    load: {{ vus: 1, iterations: 1 }}
    steps:
      - get: /bytes/{SIZE}
        name: download
        check: [{{ body_sha256: {digest}, name: sha }}, {{ body_size: {SIZE}, name: size }}]
"#
    );
    let s = run_code("gib", &plan, server.port(), &[], 0);
    assert_eq!(check(&s, "download", "sha"), (1, 0));
    assert_eq!(check(&s, "download", "size"), (1, 0));
    assert_eq!(u64_at(&s, "/totals/failures"), 0);
    let rss = f64_at(&s, "/generator/rss_mb_peak");
    eprintln!("1 GiB download: peak RSS {rss} MB");
    assert!(rss < 50.0, "peak RSS {rss} MB for a 1 GiB body");
}

#[test]
fn body_hash_and_size_checks_fail_on_a_different_body() {
    let server = Server::start();
    let wrong = pattern_sha256(999);
    let right = pattern_sha256(1000);
    let md5_wrong = "0123456789abcdef0123456789abcdef";
    let plan = format!(
        r#"target: http://127.0.0.1:{{port}}
scenarios:
  - name: small
    load: {{ vus: 1, iterations: 3 }}
    steps:
      - get: /bytes/1000
        name: bytes
        check:
          - {{ body_sha256: {wrong}, name: wrong sha }}
          - {{ body_sha256: {right}, name: right sha }}
          - {{ body_md5: {md5_wrong}, name: wrong md5 }}
          - {{ body_size: 999, name: wrong size }}
          - {{ body_size: {{ min: 1000, max: 1000 }}, name: right size }}
"#
    );
    // Every request fails a check: exit 4, "no request succeeded".
    let s = run_code("hash-wrong", &plan, server.port(), &[], 4);
    assert_eq!(check(&s, "bytes", "wrong sha"), (0, 3));
    assert_eq!(check(&s, "bytes", "right sha"), (3, 0));
    assert_eq!(check(&s, "bytes", "wrong md5"), (0, 3));
    assert_eq!(check(&s, "bytes", "wrong size"), (0, 3));
    assert_eq!(check(&s, "bytes", "right size"), (3, 0));
    assert_eq!(u64_at(step(&s, "small", "bytes"), "/failures"), 3);
}

// ---------------------------------------------------------------------------------------------
// 6. Decompression.

fn decompress_plan(decompress: bool) -> String {
    let digest = pattern_sha256(1_000_000);
    format!(
        r#"target: http://127.0.0.1:{{port}}
http: {{ decompress: {decompress} }}
scenarios:
  - name: d
    load: {{ vus: 1, iterations: 2 }}
    steps:
      - get: /gzip
        name: gzip
        check: [{{ jsonpath: "$.token", equals: "{token}", name: token }}]
      - get: /deflate
        name: deflate
        check: [{{ jsonpath: "$.token", exists: true, name: token }}]
      - get: /brotli
        name: brotli
        check: [{{ jsonpath: "$.token", exists: true, name: token }}]
      - get: /bytes/1000000?encoding=gzip
        name: bytes gzip
        check: [{{ body_size: 1000000, name: size }}, {{ body_sha256: {digest}, name: sha }}]
      - get: /bytes/1000000?encoding=br
        name: bytes br
        check: [{{ body_size: 1000000, name: size }}]
"#,
        token = onrush_server::JSON_TOKEN
    )
}

#[test]
fn decompression_on_and_off() {
    let server = Server::start();
    let s = run_code(
        "decompress-on",
        &decompress_plan(true),
        server.port(),
        &[],
        0,
    );
    assert_all_checks_passed(&s);
    for name in ["gzip", "deflate", "brotli"] {
        assert_eq!(check(&s, name, "token"), (2, 0), "{name}");
    }
    assert_eq!(check(&s, "bytes gzip", "size"), (2, 0));
    assert_eq!(check(&s, "bytes gzip", "sha"), (2, 0));
    assert_eq!(check(&s, "bytes br", "size"), (2, 0));
    // `bytes_in` counts what crossed the wire, not the decoded size.
    let wire = u64_at(step(&s, "d", "bytes gzip"), "/bytes_in");
    assert!(
        wire < 200_000,
        "2 x 1 MB compressed: {wire} bytes on the wire"
    );

    // Every request fails a check: exit 4.
    let s = run_code(
        "decompress-off",
        &decompress_plan(false),
        server.port(),
        &[],
        4,
    );
    for name in ["gzip", "deflate", "brotli"] {
        assert_eq!(check(&s, name, "token"), (0, 2), "{name}: compressed bytes");
    }
    assert_eq!(check(&s, "bytes gzip", "size"), (0, 2));
    assert_eq!(check(&s, "bytes br", "size"), (0, 2));
}

#[test]
fn a_corrupt_encoded_body_is_a_bad_response() {
    let rec = Recorder::start_with(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 16\r\n\r\nthis is not gzip",
    );
    let plan = r#"target: http://127.0.0.1:{port}
http: { decompress: true }
scenarios:
  - name: d
    load: { vus: 1, iterations: 2 }
    steps:
      - get: /corrupt
        name: corrupt
        check: [{ jsonpath: "$.token", exists: true, name: token }]
"#;
    let (output, out) = run_raw("corrupt-gzip", plan, rec.port, &[]);
    assert!(out.join("summary.json").exists(), "{}", text(&output));
    let s = summary(&out);
    let st = step(&s, "d", "corrupt");
    assert_eq!(u64_at(st, "/failures"), 2, "{st:#}");
    assert_eq!(u64_at(st, "/failures_by_class/bad_response"), 2, "{st:#}");
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
}

// ---------------------------------------------------------------------------------------------
// 7. Redirects.

fn redirect_plan(redirects: Option<u32>) -> String {
    let http = redirects.map_or(String::new(), |n| format!("http: {{ redirects: {n} }}\n"));
    format!(
        r#"target: http://127.0.0.1:{{port}}
{http}scenarios:
  - name: r
    load: {{ vus: 1, iterations: 2 }}
    steps:
      - get: /redirect/3
        name: hop
        expect_status: [200, 302]
        extract:
          final: {{ url: true }}
          code: {{ status: true }}
        check: [{{ status: 200, name: ok }}]
      - get: /query?u=${{final}}&code=${{code}}
        name: show
        check:
          - {{ jsonpath: "$.u", equals: "/redirect/0", name: final url }}
          - {{ jsonpath: "$.code", equals: "200", name: final code }}
"#
    )
}

#[test]
fn redirects_are_followed_up_to_the_limit() {
    let server = Server::start();
    let s = run_code("redirect-5", &redirect_plan(Some(5)), server.port(), &[], 0);
    assert_all_checks_passed(&s);
    assert_eq!(u64_at(step(&s, "r", "hop"), "/status_codes/200"), 2);
    assert_eq!(check(&s, "show", "final url"), (2, 0));

    // Every request fails a check (hop: status, show: final code): exit 4.
    let s = run_code("redirect-none", &redirect_plan(None), server.port(), &[], 4);
    assert_eq!(check(&s, "hop", "ok"), (0, 2), "not followed by default");
    assert_eq!(u64_at(step(&s, "r", "hop"), "/status_codes/302"), 2);
    assert_eq!(check(&s, "show", "final code"), (0, 2));

    let s = run_code("redirect-2", &redirect_plan(Some(2)), server.port(), &[], 4);
    assert_eq!(check(&s, "hop", "ok"), (0, 2), "3 hops > 2");
    assert_eq!(u64_at(step(&s, "r", "hop"), "/status_codes/302"), 2);
}

// ---------------------------------------------------------------------------------------------
// 8. Auth.

#[test]
fn basic_and_bearer_auth() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
vars: { password: "p@ss word" }
scenarios:
  - name: a
    load: { vus: 1, iterations: 3 }
    steps:
      - get: /basic-auth/u/p
        name: basic ok
        auth: { basic: { user: u, password: p } }
        check: [{ jsonpath: "$.user", equals: u, name: user }]
      - get: /basic-auth/u/p%40ss%20word
        name: basic templated
        auth: { basic: { user: u, password: "${password}" } }
        check: [{ status: 200, name: ok }]
      - get: /basic-auth/u/p
        name: basic wrong
        auth: { basic: { user: u, password: q } }
      - get: /bearer
        name: bearer
        auth: { bearer: "tok-${vu}" }
        check: [{ jsonpath: "$.token", matches: "^tok-[0-9]+$", name: token }]
      - get: /bearer
        name: no bearer
"#;
    let s = run_code("auth", plan, server.port(), &[], 0);
    assert_eq!(check(&s, "basic ok", "user"), (3, 0));
    assert_eq!(check(&s, "basic templated", "ok"), (3, 0));
    assert_eq!(check(&s, "bearer", "token"), (3, 0));
    let wrong = step(&s, "a", "basic wrong");
    assert_eq!(u64_at(wrong, "/status_codes/401"), 3);
    assert_eq!(u64_at(wrong, "/failures"), 3, "a 401 is a failure");
    assert_eq!(u64_at(step(&s, "a", "no bearer"), "/failures"), 3);
    assert_eq!(u64_at(step(&s, "a", "basic ok"), "/failures"), 0);
    assert_eq!(u64_at(&s, "/totals/failures"), 6);
}

// ---------------------------------------------------------------------------------------------
// 9. Flow steps.

#[test]
fn flow_steps_group_if_loops_and_once() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: flow
    load: { vus: 2, iterations: 3 }
    steps:
      - once:
          - get: /
            name: once home
      - group:
          name: grp
          steps:
            - get: /json
              name: catalogue
              extract:
                ids: { jsonpath: "$.items[*].id", occurrence: all }
                uid: { jsonpath: "$.user.id" }
      - loop:
          foreach: ids
          as: id
          steps:
            - get: /query?id=${id}
              name: item
              check: [{ jsonpath: "$.id", equals: "${id}", name: same id }]
      - if: { var: uid, equals: "42" }
        then:
          - get: /query?branch=then
            name: then 42
        else:
          - get: /query?branch=else
            name: else 42
      - if: { var: uid, matches: "^7$" }
        then:
          - get: /
            name: then 7
        else:
          - get: /
            name: else 7
      - loop:
          while: { var: uid, exists: true }
          max: 3
          steps:
            - get: /
              name: while max
  - name: while
    load: { vus: 1, iterations: 1 }
    steps:
      - loop:
          while: { var: c, not_equals: "3" }
          max: 10
          steps:
            - get: /query?c=${counter(w)}
              name: count up
              extract:
                c: { jsonpath: "$.c" }
"#;
    let s = run_code("flow", plan, server.port(), &[], 0);
    assert_all_checks_passed(&s);
    assert_eq!(requests(&s, "flow", "once home"), 2, "once per VU");
    assert_eq!(requests(&s, "flow", "catalogue"), 6);
    assert_eq!(requests(&s, "flow", "item"), 24, "4 items per iteration");
    assert_eq!(check(&s, "item", "same id"), (24, 0));
    assert_eq!(requests(&s, "flow", "then 42"), 6);
    assert_eq!(requests(&s, "flow", "else 42"), 0);
    assert_eq!(requests(&s, "flow", "then 7"), 0);
    assert_eq!(requests(&s, "flow", "else 7"), 6);
    assert_eq!(requests(&s, "flow", "while max"), 18, "max 3 per iteration");
    assert_eq!(requests(&s, "while", "count up"), 3, "stops when c = 3");
    let grp = step(&s, "flow", "grp");
    assert_eq!(grp["kind"], "group", "{grp:#}");
    assert_eq!(u64_at(grp, "/requests"), 6, "one run per iteration");
    let request_steps: u64 = s["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "request")
        .map(|x| x["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(request_steps, 2 + 6 + 24 + 6 + 6 + 18 + 3);
    assert_eq!(
        u64_at(&s, "/totals/requests"),
        request_steps,
        "groups are not requests"
    );
    assert_eq!(server.stats().requests, request_steps);
}

#[test]
fn random_branches_follow_their_weights() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: rnd
    load: { vus: 4, iterations: 100 }
    steps:
      - random:
          - weight: 3
            steps: [{ get: /, name: heavy }]
          - weight: 1
            steps: [{ get: /bytes/1, name: light }]
"#;
    let s = run_code("random", plan, server.port(), &[], 0);
    let heavy = requests(&s, "rnd", "heavy");
    let light = requests(&s, "rnd", "light");
    assert_eq!(heavy + light, 400);
    // Expected 300, standard deviation ~8.7: ±60 is a 7-sigma bound.
    assert!((240..=360).contains(&heavy), "heavy {heavy}, light {light}");
}

#[test]
fn pacing_holds_each_iteration_to_its_period() {
    let server = Server::start();
    let plan = |pacing: &str| {
        format!(
            "target: http://127.0.0.1:{{port}}\nscenarios:\n  - name: p\n    load: {{ vus: 1, iterations: 5 }}\n{pacing}    steps:\n      - get: /\n        name: fast\n"
        )
    };
    let s = run_code(
        "pacing",
        &plan("    pacing: 100ms\n"),
        server.port(),
        &[],
        0,
    );
    assert_eq!(requests(&s, "p", "fast"), 5);
    let d = f64_at(&s, "/run/duration_s");
    assert!(d >= 0.38, "5 iterations paced at 100 ms took {d} s");
    assert!(d < 3.0, "{d}");
    let s = run_code("no-pacing", &plan(""), server.port(), &[], 0);
    let d = f64_at(&s, "/run/duration_s");
    assert!(d < 0.3, "unpaced: {d} s");
}

// ---------------------------------------------------------------------------------------------
// 10. Templates.

#[test]
fn template_functions_render_as_documented() {
    let server = Server::start();
    let user_sha = sha256_hex(b"alice");
    let plan = format!(
        r#"target: http://127.0.0.1:{{port}}
vars: {{ user: alice }}
scenarios:
  - name: t
    load: {{ vus: 2, iterations: 3 }}
    steps:
      - get: /query?r=${{random_int(5, 5)}}&u=${{uuid()}}&b=${{base64("a:b")}}&h=${{sha256(user)}}&up=${{upper(user)}}&m=${{md5("abc")}}
        name: funcs
        check:
          - {{ jsonpath: "$.r", equals: "5", name: random_int }}
          - {{ jsonpath: "$.u", matches: "^[0-9a-f]{{8}}-[0-9a-f]{{4}}-4[0-9a-f]{{3}}-[89ab][0-9a-f]{{3}}-[0-9a-f]{{12}}$", name: uuid }}
          - {{ jsonpath: "$.b", equals: "YTpi", name: base64 }}
          - {{ jsonpath: "$.h", equals: "{user_sha}", name: sha256 }}
          - {{ jsonpath: "$.up", equals: "ALICE", name: upper }}
          - {{ jsonpath: "$.m", equals: "900150983cd24fb0d6963f7d28e17f72", name: md5 }}
      - get: /headers
        name: header funcs
        headers:
          X-B: '${{base64("${{user}}:pw")}}'
          X-Rs: '${{random_string(8, "ab")}}'
          X-Ch: '${{choice("x", "y")}}'
          X-Lo: '${{lower("ABC")}}'
          X-S1: '${{sha1("abc")}}'
          X-Bu: '${{base64url("??>")}}'
          X-Now: '${{now("%Y")}}'
          X-Ms: '${{now_ms()}}'
          X-Env: '${{env(ONRUSH_SCENARIOS_TEST_UNSET, "dflt")}}'
          X-Def: '${{ONRUSH_SCENARIOS_TEST_UNSET:-fallback}}'
          X-Lit: '$${{literal}}'
          X-It: 'it${{iteration}}'
        check:
          - {{ jsonpath: "$['x-b']", equals: "YWxpY2U6cHc=", name: nested template }}
          - {{ jsonpath: "$['x-rs']", matches: "^[ab]{{8}}$", name: random_string }}
          - {{ jsonpath: "$['x-ch']", matches: "^[xy]$", name: choice }}
          - {{ jsonpath: "$['x-lo']", equals: abc, name: lower }}
          - {{ jsonpath: "$['x-s1']", equals: a9993e364706816aba3e25717850c26c9cd0d89d, name: sha1 }}
          - {{ jsonpath: "$['x-bu']", equals: Pz8-, name: base64url }}
          - {{ jsonpath: "$['x-now']", matches: "^2[0-9]{{3}}$", name: now }}
          - {{ jsonpath: "$['x-ms']", matches: "^1[0-9]{{12}}$", name: now_ms }}
          - {{ jsonpath: "$['x-env']", equals: dflt, name: env default }}
          - {{ jsonpath: "$['x-def']", equals: fallback, name: var default }}
          - {{ jsonpath: "$['x-lit']", equals: "$${{literal}}", name: literal }}
          - {{ jsonpath: "$['x-it']", matches: "^it[0-2]$", name: iteration }}
      - post: /form
        name: template body
        headers: {{ Content-Type: application/x-www-form-urlencoded }}
        body_template: body.txt
        check:
          - {{ jsonpath: "$.fields.user", equals: alice, name: user }}
          - {{ jsonpath: "$.fields.vu", equals: "${{vu}}", name: vu }}
          - {{ jsonpath: "$.fields.n", equals: "7", name: n }}
"#
    );
    let s = run_code(
        "templates",
        &plan,
        server.port(),
        &[("body.txt", b"user=${user}&vu=${vu}&n=${random_int(7, 7)}")],
        0,
    );
    assert_all_checks_passed(&s);
    assert_eq!(check(&s, "funcs", "uuid"), (6, 0));
    assert_eq!(check(&s, "template body", "n"), (6, 0));
    assert_eq!(check(&s, "header funcs", "nested template"), (6, 0));
    assert_eq!(check(&s, "header funcs", "literal"), (6, 0));
    assert_eq!(u64_at(&s, "/totals/failures"), 0);
}

#[test]
fn counters_count_per_vu_across_iterations_and_uuids_differ() {
    let rec = Recorder::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: t
    load: { vus: 3, iterations: 3 }
    steps:
      - get: /c?vu=${vu}&c=${counter()}&n=${counter(other)}&g=${global_counter()}&u=${uuid()}
        name: count
"#;
    let s = run_code("counters", plan, rec.port, &[], 0);
    assert_eq!(u64_at(&s, "/totals/requests"), 9);
    let mut per_vu: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut globals = Vec::new();
    let mut uuids = std::collections::HashSet::new();
    for t in rec.targets() {
        let q = query_of(&t);
        let c: u64 = q["c"].parse().unwrap();
        assert_eq!(q["n"], q["c"], "a named counter counts on its own: {t}");
        per_vu.entry(q["vu"].clone()).or_default().push(c);
        globals.push(q["g"].parse::<u64>().unwrap());
        assert!(uuids.insert(q["u"].clone()), "uuid repeated: {t}");
    }
    assert_eq!(per_vu.len(), 3, "{per_vu:?}");
    for (vu, seq) in &per_vu {
        assert_eq!(seq, &[1, 2, 3], "VU {vu}'s counter");
    }
    globals.sort_unstable();
    assert_eq!(globals, (1..=9).collect::<Vec<u64>>(), "global counter");
}

#[test]
fn an_unknown_variable_is_refused_with_its_name_and_line() {
    let plan = r#"target: http://127.0.0.1:9
vars: { user: alice }
scenarios:
  - name: t
    load: { vus: 1, iterations: 1 }
    steps:
      - get: /
      - get: /query?u=${usr}
"#;
    let err = run_bad("unknown-var", plan, &[]);
    assert!(err.contains("usr"), "{err}");
    assert!(err.contains("plan.yaml:8:"), "names line 8: {err}");
}

#[test]
fn a_variable_used_before_it_is_set_fails_that_request_only() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: t
    load: { vus: 2, iterations: 3 }
    steps:
      - get: /query?t=${token}
        name: too early
      - get: /json
        name: source
        extract:
          token: { jsonpath: "$.token" }
      - get: /query?t=${token:-none}
        name: with default
        check: [{ jsonpath: "$.t", matches: "^(none|onrush-session-7f3c9a2e41d8)$", name: t }]
      - get: /query?t=${token}
        name: after
        check: [{ jsonpath: "$.t", equals: "${token}", name: same }]
"#;
    let (output, out) = run_raw("unset", plan, server.port(), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&out);
    // Runtime variables are kept across iterations of a VU (a token extracted in `once:` serves
    // every iteration): only each VU's first iteration lacks the token.
    let early = step(&s, "t", "too early");
    let unset = u64_at(early, "/failures_by_class/variable_unset");
    assert_eq!(unset, u64_at(early, "/failures"), "{early:#}");
    assert_eq!(unset, 2, "each VU's first iteration: {early:#}");
    assert_eq!(
        u64_at(&s, "/totals/failures_by_class/variable_unset"),
        unset
    );
    assert_eq!(requests(&s, "t", "after"), 6, "the run went on");
    assert_eq!(check(&s, "after", "same"), (6, 0));
    assert_eq!(check(&s, "with default", "t"), (6, 0));
    assert_eq!(u64_at(step(&s, "t", "with default"), "/failures"), 0);
    let err = stderr_of(&output);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("${token}") && l.contains("too early"))
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "the variable and step are named once: {}",
        text(&output)
    );
}

// ---------------------------------------------------------------------------------------------
// 11. on_failure.

fn on_failure_plan(action: &str) -> String {
    format!(
        r#"target: http://127.0.0.1:{{port}}
scenarios:
  - name: f
    load: {{ vus: 2, iterations: 5 }}
    steps:
      - get: /
        name: before
      - get: /status/500
        name: fail
        on_failure: {action}
      - get: /
        name: after
"#
    )
}

#[test]
fn on_failure_actions() {
    let server = Server::start();
    let s = run_code(
        "onf-continue",
        &on_failure_plan("continue"),
        server.port(),
        &[],
        0,
    );
    assert_eq!(requests(&s, "f", "fail"), 10);
    assert_eq!(requests(&s, "f", "after"), 10);

    let s = run_code(
        "onf-next",
        &on_failure_plan("next_iteration"),
        server.port(),
        &[],
        0,
    );
    assert_eq!(requests(&s, "f", "before"), 10);
    assert_eq!(requests(&s, "f", "fail"), 10);
    assert_eq!(
        requests(&s, "f", "after"),
        0,
        "the rest of the iteration is skipped"
    );

    let s = run_code(
        "onf-stop-vu",
        &on_failure_plan("stop_vu"),
        server.port(),
        &[],
        0,
    );
    assert_eq!(
        requests(&s, "f", "before"),
        2,
        "each VU stops in its first iteration"
    );
    assert_eq!(requests(&s, "f", "fail"), 2);
    assert_eq!(requests(&s, "f", "after"), 0);
    let iterations = u64_at(&s, "/totals/iterations");
    assert!(
        iterations <= 2,
        "2 VUs stopped in their first iteration: {iterations}"
    );

    // stop_test: a long run ends at the first failure, results written.
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: long
    load: { vus: 1, iterations: 100000 }
    steps:
      - get: /
        name: ok
      - get: /status/500
        name: fail
        on_failure: stop_test
"#;
    let started = Instant::now();
    let (output, out) = run_raw("onf-stop-test", plan, server.port(), &[]);
    let took = started.elapsed();
    eprintln!("stop_test: {} in {took:?}", text(&output));
    // A test stopped by a failed step failed: exit 1, and summary.json says why.
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(out.join("summary.json").exists(), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(s["stopped_early"][0]["scenario"], "long", "{s:#}");
    assert!(
        s["stopped_early"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("stop_test"),
        "{s:#}"
    );
    assert_eq!(requests(&s, "long", "fail"), 1, "{s:#}");
    assert_eq!(requests(&s, "long", "ok"), 1);
    assert!(took < Duration::from_secs(10));
}

#[test]
fn on_failure_stop_test_with_other_busy_scenarios_ends_them_too() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: busy
    load: { vus: 2, duration: 30s }
    steps:
      - get: /delay/5
        name: tick
  - name: stopper
    load: { vus: 1, iterations: 1 }
    steps:
      - get: /delay/300
        name: wait
      - get: /status/503
        name: fail
        on_failure: stop_test
"#;
    let started = Instant::now();
    let (output, out) = run_raw("onf-stop-test-busy", plan, server.port(), &[]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "ended early: {took:?}");
    assert!(out.join("summary.json").exists(), "{}", text(&output));
    assert_ne!(output.status.code(), Some(130), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(requests(&s, "stopper", "fail"), 1);
    assert!(requests(&s, "busy", "tick") > 0);
}

// ---------------------------------------------------------------------------------------------
// 12. Throttle.

#[test]
fn throttle_caps_the_download_rate() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
http: { throttle: 500KB/s, timeout: 30s }
scenarios:
  - name: slow
    load: { vus: 1, iterations: 1 }
    steps:
      - get: /bytes/1000000
        name: download
        check: [{ body_size: 1000000, name: size }]
"#;
    let s = run_code("throttle", plan, server.port(), &[], 0);
    assert_eq!(check(&s, "download", "size"), (1, 0));
    let service = f64_at(step(&s, "slow", "download"), "/service_ms/max");
    assert!(service >= 1600.0, "1 MB at 500 KB/s took {service} ms");
    assert!(service < 6000.0, "{service} ms");
}

#[test]
fn throttle_caps_the_upload_rate_too() {
    let server = Server::start();
    let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    let digest = sha256_hex(&body);
    let plan = format!(
        r#"target: http://127.0.0.1:{{port}}
http: {{ throttle: 500KB/s, timeout: 30s }}
scenarios:
  - name: slow
    load: {{ vus: 1, iterations: 1 }}
    steps:
      - post: /upload
        name: upload
        body_file: up.bin
        check: [{{ jsonpath: "$.sha256", equals: "{digest}", name: sha }}]
"#
    );
    let s = run_code("throttle-up", &plan, server.port(), &[("up.bin", &body)], 0);
    assert_eq!(check(&s, "upload", "sha"), (1, 0));
    let service = f64_at(step(&s, "slow", "upload"), "/service_ms/max");
    assert!(service >= 1600.0, "1 MB up at 500 KB/s took {service} ms");
    assert!(service < 6000.0, "{service} ms");
}

// ---------------------------------------------------------------------------------------------
// 13. Bad plans: exit 2, the message names the field and the line.

/// (name, plan, data files, what stderr must contain)
type BadCase<'a> = (&'a str, String, Vec<(&'a str, &'a [u8])>, Vec<&'a str>);

fn bad_request_plan(step_body: &str) -> String {
    format!(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n      - get: /login\n{step_body}"
    )
}

#[test]
fn bad_plans_are_refused_with_field_and_line() {
    let cases: Vec<BadCase> = vec![
        (
            "unknown-extractor-key",
            bad_request_plan("        extract:\n          t: { jsonpth: \"$.token\" }\n"),
            vec![],
            vec!["plan.yaml:8:", "extract.t.jsonpth", "unknown key"],
        ),
        (
            "two-extractors",
            bad_request_plan(
                "        extract:\n          t: { jsonpath: \"$.token\", regex: \"x(.)\" }\n",
            ),
            vec![],
            vec!["plan.yaml:8:", "extract.t.", "`jsonpath` and `regex` are both given"],
        ),
        (
            "bad-regex",
            bad_request_plan("        extract:\n          t: { regex: \"tok-([0-9\" }\n"),
            vec![],
            vec!["plan.yaml:8:", "extract.t.regex"],
        ),
        (
            "bad-jsonpath",
            bad_request_plan("        extract:\n          t: { jsonpath: \"$.[[token\" }\n"),
            vec![],
            vec!["plan.yaml:8:", "extract.t.jsonpath"],
        ),
        (
            "bad-jsonpath-check",
            bad_request_plan("        check:\n          - { jsonpath: \"$..[?(\" }\n"),
            vec![],
            vec!["plan.yaml:8:", "check[0].jsonpath"],
        ),
        (
            "equals-on-status",
            bad_request_plan("        check:\n          - { status: 200, equals: \"200\" }\n"),
            vec![],
            vec!["plan.yaml:8:", "check[0].equals", "status"],
        ),
        (
            "feeder-missing",
            "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    feeders:\n      - { file: nowhere.csv }\n    steps:\n      - get: /\n".to_string(),
            vec![],
            vec!["plan.yaml:6:", "feeders[0].file", "nowhere.csv", "does not exist"],
        ),
        (
            "ragged-csv",
            "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    feeders:\n      - { file: users.csv }\n    steps:\n      - get: /?u=${user}\n".to_string(),
            vec![("users.csv", b"user,password\nada,x\nbob\ncy,z\n" as &[u8])],
            vec!["plan.yaml:6:", "feeders[0].file", "users.csv line 3"],
        ),
        (
            "foreach-not-runtime",
            "target: http://127.0.0.1:9\nvars: { ids: \"1,2\" }\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - loop:\n          foreach: ids\n          as: id\n          steps:\n            - get: /query?id=${id}\n".to_string(),
            vec![],
            vec!["plan.yaml:8:", "loop.foreach", "ids", "not a runtime variable"],
        ),
        (
            "foreach-unknown",
            "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - loop:\n          foreach: nothing\n          as: id\n          steps:\n            - get: /query?id=${id}\n".to_string(),
            vec![],
            vec!["plan.yaml:7:", "loop.foreach", "nothing"],
        ),
    ];
    let mut problems = Vec::new();
    for (name, plan, files, wanted) in &cases {
        let (output, _) = run_raw(&format!("bad-{name}"), plan, 9, files);
        let err = stderr_of(&output);
        if output.status.code() != Some(2) {
            problems.push(format!(
                "{name}: exit {:?}\n{}",
                output.status.code(),
                text(&output)
            ));
            continue;
        }
        for w in wanted {
            if !err.contains(w) {
                problems.push(format!("{name}: stderr lacks {w:?}:\n{err}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
