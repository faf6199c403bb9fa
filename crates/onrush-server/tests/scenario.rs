//! The endpoints for a client's scenario features (login tokens, sessions, redirects, cookies,
//! compression, auth, forms, query and header echoes), checked on the wire with a raw client.

use crate::common;

use std::io::Read;
use std::net::SocketAddr;

use base64::Engine;
use common::{server, Client, Response};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn all_stats(addr: SocketAddr) -> Value {
    Client::connect(addr).get("/stats").json()
}

fn login_counters(addr: SocketAddr) -> [u64; 5] {
    let v = all_stats(addr);
    [
        "tokens_issued",
        "tokens_ok",
        "tokens_bad",
        "sessions_ok",
        "sessions_bad",
    ]
    .map(|k| {
        v[k].as_u64()
            .unwrap_or_else(|| panic!("/stats has no {k}: {v}"))
    })
}

/// The text between `start` and the next `end` in `hay`.
fn between<'a>(hay: &'a str, start: &str, end: &str) -> &'a str {
    let from = hay
        .find(start)
        .unwrap_or_else(|| panic!("{start:?} not in {hay}"))
        + start.len();
    let len = hay[from..].find(end).unwrap();
    &hay[from..from + len]
}

fn html_token(c: &mut Client) -> String {
    let r = c.get("/login");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let html = r.text();
    let token = between(html, r#"name="csrf_token" value=""#, "\"").to_owned();
    assert_eq!(
        between(html, r#"<meta name="csrf-token" content=""#, "\""),
        token
    );
    assert_eq!(between(html, r#"data-token=""#, "\""), token);
    token
}

fn set_cookies(r: &Response) -> Vec<&str> {
    r.headers
        .iter()
        .filter(|(n, _)| n == "set-cookie")
        .map(|(_, v)| v.as_str())
        .collect()
}

fn assert_verified(r: &Response, user: &str, via: &str) -> String {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["user"], user);
    assert_eq!(v["via"], via);
    let session = v["session"].as_str().unwrap().to_owned();
    assert_eq!(
        set_cookies(r),
        [format!("session={session}; Path=/; HttpOnly").as_str()]
    );
    session
}

fn assert_refused(r: &Response) -> String {
    assert_eq!(r.status, 403, "{}", String::from_utf8_lossy(&r.body));
    assert!(set_cookies(r).is_empty());
    let v = r.json();
    assert_eq!(v["ok"], false);
    v["reason"].as_str().unwrap().to_owned()
}

#[test]
fn login_tokens_verify_by_every_route_and_forgeries_do_not() {
    let s = server(2);
    let addr = s.local_addr();
    assert_eq!(login_counters(addr), [0; 5]);
    let mut c = Client::connect(addr);
    let t1 = html_token(&mut c);
    let t2 = html_token(&mut c);
    assert_ne!(t1, t2, "a fresh token per request");
    assert!(t1.starts_with(onrush_server::TOKEN_PREFIX));
    assert!(s.verify_token(&t1) && s.verify_token(&t2));
    assert_eq!(login_counters(addr), [2, 0, 0, 0, 0]);

    // JSON and XML formats.
    let j = c.get("/login?format=json");
    assert_eq!(j.header("content-type"), Some("application/json"));
    let j = j.json();
    let t3 = j["token"].as_str().unwrap().to_owned();
    assert_eq!(j["user"]["id"], onrush_server::JSON_USER_ID);
    assert_eq!(j["user"]["name"], onrush_server::JSON_USER_NAME);
    assert_eq!(j["user"]["login"], onrush_server::LOGIN_DEFAULT_USER);
    let x = c.get("/login?format=xml");
    assert_eq!(x.header("content-type"), Some("application/xml"));
    let t4 = between(x.text(), r#"<login token=""#, "\"").to_owned();
    assert_eq!(between(x.text(), "<token>", "</token>"), t4);
    assert_eq!(c.get("/login?format=yaml").status, 400);
    assert_eq!(login_counters(addr), [4, 0, 0, 0, 0]);

    // Form POST, JSON POST, query, X-CSRF-Token, Bearer.
    let form = format!("csrf_token={t1}&username=grace&password=secret");
    let r = c.request(
        "POST",
        "/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        form.as_bytes(),
    );
    let session = assert_verified(&r, "grace", "form");
    assert_eq!(s.verify_session(&session).as_deref(), Some("grace"));
    let body = json!({"token": t2, "username": "alan"}).to_string();
    let r = c.request(
        "POST",
        "/login",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_verified(&r, "alan", "json");
    assert_verified(&c.get(&format!("/verify?token={t3}")), "ada", "query");
    let r = c.request("GET", "/verify", &[("X-CSRF-Token", &t4)], b"");
    assert_verified(&r, "ada", "header");
    let bearer = format!("Bearer {t1}");
    let r = c.request("POST", "/login", &[("Authorization", &bearer)], b"");
    assert_verified(&r, "ada", "bearer");
    // Tokens are stateless: the same one verifies again.
    assert_verified(
        &c.get(&format!("/verify?token={t1}&username=x")),
        "x",
        "query",
    );
    assert_eq!(login_counters(addr), [4, 6, 0, 0, 0]);

    // Forged and altered tokens, via every route.
    let mut altered = t1.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'0' { b'1' } else { b'0' };
    let altered = String::from_utf8(altered).unwrap();
    let other_counter = t1.replacen("tok-1-", "tok-9-", 1);
    let foreign = {
        let other = server(1);
        html_token(&mut Client::connect(other.local_addr()))
    };
    let mut bad = 0;
    for forged in [
        altered.as_str(),
        &other_counter,
        &foreign,
        onrush_server::CSRF_TOKEN,
        "x",
    ] {
        assert!(!s.verify_token(forged), "{forged}");
        let form = format!("csrf_token={forged}&username=u");
        let r = c.request(
            "POST",
            "/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            form.as_bytes(),
        );
        assert_refused(&r);
        let body = json!({ "token": forged }).to_string();
        let r = c.request(
            "POST",
            "/login",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        assert_refused(&r);
        assert_refused(&c.get(&format!("/verify?token={forged}")));
        assert_refused(&c.request("GET", "/verify", &[("X-CSRF-Token", forged)], b""));
        let bearer = format!("Bearer {forged}");
        assert_refused(&c.request("POST", "/login", &[("Authorization", &bearer)], b""));
        bad += 5;
    }
    // No token at all, and a body that is not JSON.
    assert!(assert_refused(&c.get("/verify")).contains("missing token"));
    assert!(assert_refused(&c.request("POST", "/login", &[], b"")).contains("missing token"));
    let r = c.request(
        "POST",
        "/login",
        &[("Content-Type", "application/json")],
        b"{not json",
    );
    assert!(assert_refused(&r).contains("JSON"));
    bad += 3;
    assert_eq!(login_counters(addr), [4, 6, bad, 0, 0]);
    assert_eq!(s.login_stats().tokens_bad, bad);
    assert_eq!(s.login_stats().tokens_issued, 4);
    // The request counters still follow their rule (the foreign server's request is its own).
    let v = all_stats(addr);
    assert_eq!(v["requests"], 4 + 1 + 6 + 25 + 3);
    assert_eq!(v["connections"], 1);
}

#[test]
fn account_needs_a_session_this_server_issued() {
    let s = server(1);
    let addr = s.local_addr();
    let mut c = Client::connect(addr);
    let r = c.get("/account");
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["ok"], false);

    let token = html_token(&mut c);
    let form = format!("csrf_token={token}&username=ada+lovelace&password=p");
    let r = c.request(
        "POST",
        "/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        form.as_bytes(),
    );
    let session = assert_verified(&r, "ada lovelace", "form");
    let cookie = format!("theme=dark; session={session}");
    let r = c.request("GET", "/account", &[("Cookie", &cookie)], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["user"], "ada lovelace");
    assert_eq!(r.json()["session"], session.as_str());

    // An altered session (another user, another mac) or another cookie name is refused.
    let forged = session.replacen(
        &"ada lovelace"
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
        "626f62",
        1,
    );
    assert_ne!(forged, session);
    for cookie in [
        format!("session={forged}"),
        format!("session={session}0"),
        format!("sid={session}"),
        "session=".to_owned(),
    ] {
        let r = c.request("GET", "/account", &[("Cookie", &cookie)], b"");
        assert_eq!(r.status, 401, "{cookie}");
        assert!(r.json()["reason"].is_string());
    }
    assert_eq!(login_counters(addr), [1, 1, 0, 1, 5]);
}

#[test]
fn head_of_login_issues_a_token_without_a_body() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.request("HEAD", "/login", &[], b"");
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(login_counters(s.local_addr())[0], 1);
}

#[test]
fn redirect_chain_ends_in_done() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let mut path = "/redirect/5".to_owned();
    let mut hops = 0;
    loop {
        let r = c.get(&path);
        if r.status == 200 {
            assert_eq!(r.text(), "done\n");
            break;
        }
        assert_eq!(r.status, 302);
        path = r.header("location").unwrap().to_owned();
        hops += 1;
        assert_eq!(path, format!("/redirect/{}", 5 - hops));
    }
    assert_eq!(hops, 5);
    let r = c.get("/redirect/2?absolute=1");
    assert_eq!(r.status, 302);
    assert_eq!(
        r.header("location"),
        Some("http://127.0.0.1/redirect/1?absolute=1")
    );
    for bad in ["/redirect/x", "/redirect/-1", "/redirect"] {
        assert_eq!(c.get(bad).status, 400, "{bad}");
    }
}

#[test]
fn redirect_to_any_redirect_status() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for status in [301u16, 302, 303, 307, 308] {
        let r = c.get(&format!("/redirect-to?url=/json&status={status}"));
        assert_eq!(r.status, status);
        assert_eq!(r.header("location"), Some("/json"));
    }
    let r = c.get("/redirect-to?url=%2Fquery%3Fa%3D1%26b%3D2");
    assert_eq!(r.status, 302, "302 by default");
    assert_eq!(r.header("location"), Some("/query?a=1&b=2"));
    let r = c.get("/redirect-to?url=http%3A%2F%2Fexample.com%2F&status=307");
    assert_eq!(r.header("location"), Some("http://example.com/"));
    for bad in [
        "/redirect-to",
        "/redirect-to?url=",
        "/redirect-to?url=/json&status=200",
        "/redirect-to?url=/json&status=x",
        "/redirect-to?url=/a%0D%0Ab",
    ] {
        assert_eq!(c.get(bad).status, 400, "{bad}");
    }
}

#[test]
fn cookies_set_echo_and_delete() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.get("/cookies/set?a=1&flavour=choc-chip&b=x%2Fy");
    assert_eq!(r.status, 200);
    assert_eq!(
        set_cookies(&r),
        ["a=1; Path=/", "flavour=choc-chip; Path=/", "b=x/y; Path=/"]
    );
    assert_eq!(
        r.json(),
        json!({"a": "1", "flavour": "choc-chip", "b": "x/y"})
    );

    let r = c.request(
        "GET",
        "/cookies",
        &[("Cookie", "a=1; flavour=choc-chip")],
        b"",
    );
    assert_eq!(r.json(), json!({"a": "1", "flavour": "choc-chip"}));
    let r = c.request(
        "GET",
        "/cookies",
        &[("Cookie", "a=1"), ("Cookie", "b=\"q\"; a=2")],
        b"",
    );
    assert_eq!(
        r.json(),
        json!({"a": "1", "b": "q"}),
        "first of a name wins"
    );
    assert_eq!(c.get("/cookies").json(), json!({}));

    let r = c.get("/cookies/delete?a&flavour");
    assert_eq!(r.status, 200);
    assert_eq!(
        set_cookies(&r),
        ["a=; Max-Age=0; Path=/", "flavour=; Max-Age=0; Path=/"]
    );
    assert_eq!(r.json(), json!({"deleted": ["a", "flavour"]}));

    for bad in [
        "/cookies/set",
        "/cookies/set?a=b%20c",
        "/cookies/set?a=b%3Bc",
        "/cookies/set?bad%20name=1",
        "/cookies/delete",
    ] {
        let r = c.get(bad);
        assert_eq!(r.status, 400, "{bad}");
        assert!(set_cookies(&r).is_empty());
    }
    assert_eq!(c.get("/cookies/other").status, 404);
}

fn decompress(encoding: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match encoding {
        "gzip" => flate2::read::GzDecoder::new(data).read_to_end(&mut out),
        "deflate" => flate2::read::ZlibDecoder::new(data).read_to_end(&mut out),
        "br" => brotli::Decompressor::new(data, 4096).read_to_end(&mut out),
        other => panic!("{other}"),
    }
    .unwrap_or_else(|e| panic!("{encoding}: {e}"));
    out
}

#[test]
fn compressed_json_decompresses_to_the_sample() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for (path, encoding) in [
        ("/gzip", "gzip"),
        ("/deflate", "deflate"),
        ("/brotli", "br"),
    ] {
        let r = c.get(path);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-encoding"), Some(encoding));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(
            r.header("content-length"),
            Some(r.body.len().to_string().as_str())
        );
        assert!(r.body.len() < onrush_server::samples::JSON.len());
        assert_eq!(
            decompress(encoding, &r.body),
            onrush_server::samples::JSON.as_bytes(),
            "{path}"
        );
    }
}

#[test]
fn compressed_bytes_stream_and_decompress_to_the_pattern() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    for encoding in ["gzip", "deflate", "br"] {
        for n in [0u64, 1, 65_536, 1_000_003] {
            let r = c.get(&format!("/bytes/{n}?encoding={encoding}"));
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-encoding"), Some(encoding));
            assert_eq!(r.header("transfer-encoding"), Some("chunked"));
            assert_eq!(r.header("content-length"), None);
            let plain = decompress(encoding, &r.body);
            assert_eq!(plain.len() as u64, n, "{encoding} {n}");
            assert!(plain.iter().enumerate().all(|(i, b)| *b == i as u8));
        }
    }
    // 64 MiB compress to little, in constant memory, on the same connection.
    let r = c.get("/bytes/67108864?encoding=gzip");
    assert!(r.body.len() < 1 << 20);
    assert_eq!(decompress("gzip", &r.body).len(), 64 << 20);
    assert_eq!(c.get("/bytes/10?encoding=zstd").status, 400);
    assert_eq!(c.get("/bytes/x?encoding=gzip").status, 400);
}

#[test]
fn basic_auth_right_and_wrong() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let right = format!("Basic {}", b64("alice:s3cret"));
    let r = c.request(
        "GET",
        "/basic-auth/alice/s3cret",
        &[("Authorization", &right)],
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"authenticated": true, "user": "alice"}));
    // Percent-encoded path segments are decoded.
    let spaced = format!("Basic {}", b64("a b:p:q"));
    let r = c.request(
        "GET",
        "/basic-auth/a%20b/p%3Aq",
        &[("Authorization", &spaced)],
        b"",
    );
    assert_eq!(r.status, 200);
    let wrong_pass = format!("Basic {}", b64("alice:nope"));
    let wrong_user = format!("Basic {}", b64("bob:s3cret"));
    for auth in [
        Some(wrong_pass.as_str()),
        Some(wrong_user.as_str()),
        Some("Basic !!notbase64"),
        Some("Bearer abc"),
        None,
    ] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", *a)).collect();
        let r = c.request("GET", "/basic-auth/alice/s3cret", &headers, b"");
        assert_eq!(r.status, 401, "{auth:?}");
        assert_eq!(r.header("www-authenticate"), Some("Basic realm=\"onrush\""));
        assert_eq!(r.json()["authenticated"], false);
    }
    for bad in ["/basic-auth", "/basic-auth/alice", "/basic-auth/a/b/c"] {
        assert_eq!(c.get(bad).status, 400, "{bad}");
    }
}

#[test]
fn bearer_echoes_the_token() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.request(
        "GET",
        "/bearer",
        &[("Authorization", "Bearer abc.def")],
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"authenticated": true, "token": "abc.def"}));
    for auth in [
        &[("Authorization", "Bearer ")][..],
        &[("Authorization", "Basic eDp5")],
        &[],
    ] {
        let r = c.request("GET", "/bearer", auth, b"");
        assert_eq!(r.status, 401);
        assert_eq!(
            r.header("www-authenticate"),
            Some("Bearer realm=\"onrush\"")
        );
    }
}

#[test]
fn urlencoded_form_fields() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.request(
        "POST",
        "/form",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"name=Ada+Lovelace&tag=a&tag=b&note=50%25+off%21&empty=",
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"fields": {"name": "Ada Lovelace", "tag": ["a", "b"], "note": "50% off!", "empty": ""},
               "files": []})
    );
    let r = c.request("POST", "/form", &[("Content-Type", "text/plain")], b"x");
    assert_eq!(r.status, 415);
    let r = c.request("POST", "/form", &[], b"x");
    assert_eq!(r.status, 415);
    assert_eq!(c.get("/").status, 200, "connection still usable");
}

/// One multipart part: name, file name, content type, content.
type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// A multipart body of these parts.
fn multipart(boundary: &str, parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file, ctype, data) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let mut disp = format!("Content-Disposition: form-data; name=\"{name}\"");
        if let Some(f) = file {
            disp.push_str(&format!("; filename=\"{f}\""));
        }
        body.extend_from_slice(disp.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(t) = ctype {
            body.extend_from_slice(format!("Content-Type: {t}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

#[test]
fn multipart_form_with_a_20_mb_file() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let big: Vec<u8> = (0..20_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let small = b"hello\r\n--not-the-boundary\r\n".to_vec();
    let boundary = "----onrush-test-7d3a";
    let body = multipart(
        boundary,
        &[
            ("username", None, None, b"ada"),
            ("tag", None, None, b"x"),
            ("tag", None, None, b"y"),
            (
                "avatar",
                Some("big.bin"),
                Some("application/octet-stream"),
                &big,
            ),
            ("notes", Some("notes.txt"), None, &small),
        ],
    );
    let ct = format!("multipart/form-data; boundary={boundary}");
    let r = c.request("POST", "/form", &[("Content-Type", &ct)], &body);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json(),
        json!({
            "fields": {"username": "ada", "tag": ["x", "y"]},
            "files": [
                {"field": "avatar", "filename": "big.bin", "content_type": "application/octet-stream",
                 "length": 20_000_000, "sha256": sha256_hex(&big)},
                {"field": "notes", "filename": "notes.txt", "content_type": null,
                 "length": small.len(), "sha256": sha256_hex(&small)},
            ]
        })
    );
    // The same upload chunked.
    c.send(
        "POST",
        "/form",
        &[("Content-Type", &ct), ("Transfer-Encoding", "chunked")],
        b"",
    );
    for piece in body.chunks(1_000_000) {
        c.write_raw(format!("{:x}\r\n", piece.len()).as_bytes());
        c.write_raw(piece);
        c.write_raw(b"\r\n");
    }
    c.write_raw(b"0\r\n\r\n");
    let r = c.read_response(false, false);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["files"][0]["sha256"], sha256_hex(&big));
}

#[test]
fn bad_multipart_is_400_with_the_reason() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let ct = "multipart/form-data; boundary=abc";
    // Truncated: no closing boundary.
    let r = c.request(
        "POST",
        "/form",
        &[("Content-Type", ct)],
        b"--abc\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue",
    );
    assert_eq!(r.status, 400);
    assert!(r.text().starts_with("bad multipart body"), "{}", r.text());
    // No boundary parameter.
    let r = c.request(
        "POST",
        "/form",
        &[("Content-Type", "multipart/form-data")],
        b"x",
    );
    assert_eq!(r.status, 400);
    assert!(r.text().contains("multipart"), "{}", r.text());
    // A part without Content-Disposition.
    let mut c = Client::connect(s.local_addr());
    let r = c.request(
        "POST",
        "/form",
        &[("Content-Type", ct)],
        b"--abc\r\nContent-Type: text/plain\r\n\r\nvalue\r\n--abc--\r\n",
    );
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    // An over-long text field.
    let mut c = Client::connect(s.local_addr());
    let long = vec![b'a'; onrush_server::MAX_TEXT_FIELD + 1];
    let body = multipart("abc", &[("big", None, None, &long)]);
    let r = c.request("POST", "/form", &[("Content-Type", ct)], &body);
    assert_eq!(r.status, 413);
}

#[test]
fn query_decodes_parameters() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.get("/query?q=caf%C3%A9+au+lait&id=1&id=2&id=3&flag&e=&sym=%26%3D%2B");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"q": "café au lait", "id": ["1", "2", "3"], "flag": "", "e": "", "sym": "&=+"})
    );
    assert_eq!(c.get("/query").json(), json!({}));
}

#[test]
fn headers_are_echoed_as_json() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.request(
        "GET",
        "/headers",
        &[
            ("X-Trace", "a"),
            ("x-trace", "b"),
            ("User-Agent", "onrush-test"),
        ],
        b"",
    );
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["x-trace"], "a, b");
    assert_eq!(v["user-agent"], "onrush-test");
    assert_eq!(v["host"], "127.0.0.1");
}

#[test]
fn not_found_lists_the_new_endpoints() {
    let s = server(1);
    let r = Client::connect(s.local_addr()).get("/nope");
    assert_eq!(r.status, 404);
    for e in [
        "/login",
        "/redirect/N",
        "/cookies/set",
        "/gzip",
        "/basic-auth/USER/PASS",
        "/form",
    ] {
        assert!(r.text().contains(e), "{e}");
    }
}
