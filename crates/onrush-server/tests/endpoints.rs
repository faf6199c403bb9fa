//! Each endpoint, checked on the wire with a raw client.

mod common;

use std::time::{Duration, Instant};

use common::{server, Client};
use sha2::{Digest, Sha256};

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn root_says_hello() {
    let s = server(1);
    let r = Client::connect(s.local_addr()).get("/");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "Hello from onrush\n");
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    assert_eq!(r.header("content-length"), Some("18"));
}

#[test]
fn bytes_with_content_length() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for n in [0u64, 1, 255, 256, 65_535, 65_536, 65_537, 200_000] {
        let r = c.get(&format!("/bytes/{n}"));
        assert_eq!(r.status, 200, "n={n}");
        assert_eq!(r.header("content-type"), Some("application/octet-stream"));
        assert_eq!(r.header("content-length"), Some(n.to_string().as_str()));
        assert_eq!(r.header("transfer-encoding"), None);
        assert_eq!(r.body_len, n);
        assert!(r.pattern_ok, "n={n}: byte i must be i % 256");
    }
    // 10 MiB on the same keep-alive connection, content checked.
    let r = c.get("/bytes/10485760");
    assert_eq!(r.body_len, 10 << 20);
    assert!(r.pattern_ok);
    assert_eq!(c.get("/").status, 200, "connection still usable");
}

#[test]
fn bytes_chunked() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for n in [0u64, 1, 65_536, 1_000_001] {
        let r = c.get(&format!("/bytes/{n}?chunked=1"));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("transfer-encoding"), Some("chunked"), "n={n}");
        assert_eq!(r.header("content-length"), None);
        assert_eq!(r.body_len, n);
        assert!(r.pattern_ok);
    }
    let r = c.get("/bytes/10?chunked=0");
    assert_eq!(r.header("content-length"), Some("10"));
}

#[test]
fn bytes_huge_is_streamed_in_constant_memory() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let before = common::rss_kib();
    let n: u64 = 200 << 20;
    let r = c.get_discard(&format!("/bytes/{n}"));
    assert_eq!(r.body_len, n);
    let grown_mib = common::rss_kib().saturating_sub(before) / 1024;
    // Buffering the body would grow this process (client and server) by 200 MiB.
    assert!(
        grown_mib < 50,
        "RSS grew by {grown_mib} MiB while streaming 200 MiB"
    );
}

#[test]
fn bytes_rejects_bad_counts() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for bad in ["abc", "-1", "1.5", "", "99999999999999999999999"] {
        let r = c.get(&format!("/bytes/{bad}"));
        assert_eq!(r.status, 400, "/bytes/{bad}");
        assert!(r.text().contains("non-negative integer"), "{}", r.text());
    }
    assert_eq!(c.get("/bytes").status, 400);
}

#[test]
fn delay_waits_without_blocking_the_thread() {
    let s = server(1);
    let addr = s.local_addr();
    let started = Instant::now();
    let slow = std::thread::spawn(move || Client::connect(addr).get("/delay/400"));
    // While the slow request sleeps, the single server thread answers others at once.
    std::thread::sleep(Duration::from_millis(50));
    let quick = Instant::now();
    assert_eq!(Client::connect(addr).get("/").status, 200);
    assert!(quick.elapsed() < Duration::from_millis(300));
    let r = slow.join().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "delayed 400 ms\n");
    assert!(started.elapsed() >= Duration::from_millis(400));

    let r = Client::connect(addr).get("/delay/soon");
    assert_eq!(r.status, 400);
    assert!(r.text().contains("milliseconds"));
}

#[test]
fn status_codes() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for code in [200u16, 201, 302, 400, 404, 418, 500, 503, 599] {
        let r = c.get(&format!("/status/{code}"));
        assert_eq!(r.status, code);
        assert!(r.text().starts_with(&code.to_string()));
    }
    for code in [204u16, 304] {
        let r = c.get(&format!("/status/{code}"));
        assert_eq!(r.status, code);
        assert_eq!(r.header("content-length"), None);
    }
    for bad in ["100", "101", "199", "600", "0", "abc", "2000"] {
        let r = c.get(&format!("/status/{bad}"));
        assert_eq!(r.status, 400, "/status/{bad}");
    }
    assert_eq!(c.get("/").status, 200, "connection survives all of it");
}

#[test]
fn echo_describes_the_request() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let body = b"hello onrush";
    let r = c.request(
        "POST",
        "/echo?a=1&b=two",
        &[
            ("X-Test", "one"),
            ("x-test", "two"),
            ("Content-Type", "text/plain"),
        ],
        body,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["method"], "POST");
    assert_eq!(v["path"], "/echo");
    assert_eq!(v["query"], "a=1&b=two");
    assert_eq!(v["headers"]["x-test"], "one, two");
    assert_eq!(v["headers"]["content-length"], "12");
    assert_eq!(v["body_length"], 12);
    assert_eq!(v["body_sha256"], sha256_hex(body));

    // Chunked request body, other method, no query.
    c.send(
        "PUT",
        "/echo",
        &[("Transfer-Encoding", "chunked")],
        b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    );
    let v = c.read_response(false, false).json();
    assert_eq!(v["method"], "PUT");
    assert_eq!(v["query"], "");
    assert_eq!(v["body_length"], 5);
    assert_eq!(v["body_sha256"], sha256_hex(b"abcde"));
}

#[test]
fn upload_hashes_large_bodies() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7) as u8).collect();
    let v = c.request("POST", "/upload", &[], &body).json();
    assert_eq!(v["length"], 3_000_000);
    assert_eq!(v["sha256"], sha256_hex(&body));

    // Chunked upload, several chunks.
    let mut chunked = Vec::new();
    for part in body.chunks(700_000) {
        chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        chunked.extend_from_slice(part);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    c.send(
        "PUT",
        "/upload",
        &[("Transfer-Encoding", "chunked")],
        &chunked,
    );
    let v = c.read_response(false, false).json();
    assert_eq!(v["length"], 3_000_000);
    assert_eq!(v["sha256"], sha256_hex(&body));

    let v = c.request("POST", "/upload", &[], b"").json();
    assert_eq!(v["length"], 0);
}

#[test]
fn sample_documents() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.get("/json");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["token"], onrush_server::JSON_TOKEN);
    assert_eq!(v["user"]["id"], onrush_server::JSON_USER_ID);
    assert_eq!(v["user"]["name"], onrush_server::JSON_USER_NAME);
    assert!(v["items"].as_array().unwrap().len() >= 3);

    let r = c.get("/html");
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let csrf = format!(
        r#"<input type="hidden" name="csrf_token" value="{}">"#,
        onrush_server::CSRF_TOKEN
    );
    assert!(r.text().contains(&csrf));
    assert!(r.text().contains("<title>") && r.text().contains("<table"));

    let r = c.get("/xml");
    assert_eq!(r.header("content-type"), Some("application/xml"));
    assert!(r.text().starts_with("<?xml"));
    assert!(r.text().contains(onrush_server::XML_ORDER_ID));
}

#[test]
fn head_has_headers_but_no_body() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.request("HEAD", "/", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("18"));
    let r = c.request("HEAD", "/bytes/5000000000", &[], b"");
    assert_eq!(r.header("content-length"), Some("5000000000"));
    let r = c.request("HEAD", "/bytes/5000000000?chunked=1", &[], b"");
    assert_eq!(r.status, 200);
    let r = c.request("HEAD", "/json", &[], b"");
    assert!(r.header("content-length").unwrap().parse::<u64>().unwrap() > 100);
    let r = c.request("HEAD", "/status/404", &[], b"");
    assert_eq!(r.status, 404);
    // Had any of these sent a body, this response would be misread.
    assert_eq!(c.get("/").text(), "Hello from onrush\n");
}

#[test]
fn unknown_paths_are_404() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for path in ["/nope", "/json/extra", "/stats/", "/echo/x"] {
        let r = c.get(path);
        assert_eq!(r.status, 404, "{path}");
        assert!(r.text().starts_with("not found"));
    }
}

#[test]
fn odd_request_targets_are_404_not_panics() {
    let s = server(1);
    for req in [
        &b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        b"CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
    ] {
        let mut c = Client::connect(s.local_addr());
        c.write_raw(req);
        assert_eq!(c.read_response(false, false).status, 404);
    }
    let mut c = Client::connect(s.local_addr());
    c.write_raw(b"GET http://127.0.0.1/json HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.read_response(false, false).status, 200, "absolute-form");
}

#[test]
fn stall_pauses_in_windows_aligned_to_server_start() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    // Find a window: within one period (1 s) some request lands in the 500 ms pause.
    let mut ended_window = false;
    for _ in 0..20 {
        let r = c.get("/stall?every=1000&for=500");
        assert_eq!(r.status, 200);
        if r.text() != "stalled 0 ms\n" {
            ended_window = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(ended_window, "no request stalled within 2 s");
    // We are now just past the end of window k (at W = k s + 500 ms): the next request goes
    // through at once.
    let window_end = Instant::now();
    let t = Instant::now();
    let r = c.get("/stall?every=1000&for=500");
    assert_eq!(r.text(), "stalled 0 ms\n");
    assert!(t.elapsed() < Duration::from_millis(300));
    // 600 ms later we are ~100 ms into window k+1, which ends at W + 1000 ms: the answer comes
    // then, however late the request arrived inside the window (robust on a busy machine).
    std::thread::sleep(Duration::from_millis(600));
    let r = c.get("/stall?every=1000&for=500");
    let since_window_end = window_end.elapsed();
    let said: u64 = r.text()["stalled ".len()..]
        .trim_end_matches(" ms\n")
        .parse()
        .unwrap();
    assert!(said > 0 && said <= 500, "said {:?}", r.text());
    assert!(
        since_window_end >= Duration::from_millis(900)
            && since_window_end <= Duration::from_millis(1300),
        "answered {since_window_end:?} after the previous window's end, expected ~1 s"
    );
}

#[test]
fn stall_validates_its_parameters() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for q in [
        "every=100&for=100",
        "every=100&for=200",
        "every=0&for=0",
        "every=x",
        "for=-1",
    ] {
        let r = c.get(&format!("/stall?{q}"));
        assert_eq!(r.status, 400, "{q}");
    }
    // for=0 never stalls.
    let r = c.get("/stall?every=50&for=0");
    assert_eq!(r.text(), "stalled 0 ms\n");
}

#[test]
fn every_listed_endpoint_answers_and_a_404_lists_them_all() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for endpoint in onrush_server::ENDPOINTS {
        // A plain GET of each, its placeholders filled in (WebSocket's asks for an upgrade).
        let path = endpoint
            .path
            .replace("/N", "/2")
            .replace("/MS", "/1")
            .replace("/CODE", "/200")
            .replace("USER/PASS", "u/p");
        let r = c.get(&path);
        if path == "/ws/echo" {
            assert_ne!(r.status, 200, "{path} without an upgrade");
        } else {
            assert_ne!(r.status, 404, "{path} is listed and must exist");
        }
        assert!(!endpoint.what.is_empty());
    }
    let r = c.get("/nope");
    for endpoint in onrush_server::ENDPOINTS {
        assert!(
            r.text().contains(endpoint.path),
            "{} in:\n{}",
            endpoint.path,
            r.text()
        );
    }
    let help = onrush_server::endpoints_help();
    assert_eq!(
        help.lines().count(),
        onrush_server::ENDPOINTS.len(),
        "{help}"
    );
}
