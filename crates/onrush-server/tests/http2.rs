//! The server over HTTP/2: h2 over TLS (ALPN), h2c with prior knowledge next to HTTP/1.1 on the
//! plain port, the endpoints' behaviour over h2, stream multiplexing and its counters in
//! `/stats`, and the HTTP/2 settings.

use crate::common;

use std::time::{Duration, Instant};

use common::h2client::{tls_config, H2};
use common::Client;
use onrush_server::{H2Stats, Http2Config, ServerConfig, ServerHandle, ServerOptions, ServerTls};
use sha2::{Digest, Sha256};

fn config() -> ServerConfig {
    ServerConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
    }
}

fn tls_server() -> ServerHandle {
    onrush_server::start_tls(config(), ServerTls::default()).unwrap()
}

async fn h2_tls(server: &ServerHandle) -> H2 {
    let ca = server.self_signed_ca_pem().unwrap();
    H2::tls(
        server.local_addr(),
        tls_config(ca, &[b"h2", b"http/1.1"], None),
    )
    .await
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// No HTTP/1-only header may reach an HTTP/2 response (RFC 9113 8.2.2; the h2 client would
/// also refuse the response).
fn assert_no_connection_headers(r: &common::h2client::H2Response, what: &str) {
    for name in [
        "connection",
        "keep-alive",
        "transfer-encoding",
        "upgrade",
        "proxy-connection",
    ] {
        assert!(r.header(name).is_none(), "{what}: {name} in an h2 response");
    }
}

#[tokio::test]
async fn endpoints_over_h2_with_tls() {
    let server = tls_server();
    let h2 = h2_tls(&server).await;
    let mut streams = 0;

    let r = h2.get("/").await;
    streams += 1;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "Hello from onrush\n");
    assert_eq!(r.header("content-length"), Some("18"));
    assert_no_connection_headers(&r, "/");

    let r = h2.get("/bytes/1000000").await;
    streams += 1;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("1000000"));
    assert_eq!(r.body.len(), 1_000_000);
    assert!(r.body.iter().enumerate().all(|(i, &b)| b == i as u8));

    // Over h2 "chunked" only means no content-length: DATA frames until END_STREAM.
    let r = h2.get("/bytes/100000?chunked=1").await;
    streams += 1;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), None);
    assert_no_connection_headers(&r, "/bytes?chunked=1");
    assert_eq!(r.body.len(), 100_000);
    assert!(r.body.iter().enumerate().all(|(i, &b)| b == i as u8));

    let r = h2.get("/bytes/300000?encoding=gzip").await;
    streams += 1;
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_no_connection_headers(&r, "/bytes?encoding=gzip");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&r.body[..]), &mut plain).unwrap();
    assert_eq!(plain.len(), 300_000);
    assert!(plain.iter().enumerate().all(|(i, &b)| b == i as u8));

    let body: Vec<u8> = (0..200_000u32).map(|i| (i * 7) as u8).collect();
    let r = h2.request("POST", "/echo?x=1", &body).await;
    streams += 1;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["method"], "POST");
    assert_eq!(v["path"], "/echo");
    assert_eq!(v["query"], "x=1");
    assert_eq!(v["body_length"], 200_000);
    assert_eq!(v["body_sha256"], hex(&Sha256::digest(&body)));

    let r = h2.request("PUT", "/upload", &body).await;
    streams += 1;
    assert_eq!(r.json()["length"], 200_000);

    let r = h2.get("/status/503").await;
    streams += 1;
    assert_eq!(r.status, 503);
    assert_eq!(r.text(), "503 Service Unavailable\n");

    let r = h2.get("/status/204").await;
    streams += 1;
    assert_eq!(r.status, 204);
    assert!(r.body.is_empty());

    let started = Instant::now();
    let r = h2.get("/delay/50").await;
    streams += 1;
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(r.text(), "delayed 50 ms\n");

    let r = h2.request("HEAD", "/bytes/12345", b"").await;
    streams += 1;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("12345"));
    assert!(r.body.is_empty());

    let r = h2.get("/cookies/set?a=1&b=2").await;
    streams += 1;
    let cookies: Vec<_> = r.headers.get_all("set-cookie").iter().collect();
    assert_eq!(cookies, ["a=1; Path=/", "b=2; Path=/"]);

    // The authority comes from `:authority` (there is no Host header in h2).
    let r = h2.get("/redirect/2?absolute=1").await;
    streams += 1;
    assert_eq!(r.status, 302);
    let port = server.local_addr().port();
    assert_eq!(
        r.header("location"),
        Some(format!("http://localhost:{port}/redirect/1?absolute=1").as_str())
    );

    let r = h2.get("/login?format=json").await;
    streams += 1;
    let token = r.json()["token"].as_str().unwrap().to_owned();
    let r = h2
        .request_with(
            "POST",
            "/login",
            &[("content-type", "application/x-www-form-urlencoded")],
            format!("csrf_token={token}&username=grace").as_bytes(),
        )
        .await;
    streams += 1;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["via"], "form");
    let session = r.json()["session"].as_str().unwrap().to_owned();
    let r = h2
        .request_with(
            "GET",
            "/account",
            &[("cookie", &format!("session={session}"))],
            b"",
        )
        .await;
    streams += 1;
    assert_eq!(r.json()["user"], "grace", "{}", r.text());

    let r = h2.get("/nowhere").await;
    streams += 1;
    assert_eq!(r.status, 404);

    let r = h2.get("/tls").await;
    streams += 1;
    assert_eq!(r.json()["alpn"], "h2");

    // `/stats` on the same connection: not counted itself.
    let v = h2.stats().await;
    assert_eq!(v["h2_connections"], 1, "{v}");
    assert_eq!(v["h2_streams"], streams, "{v}");
    assert_eq!(v["requests"], streams, "{v}");
    assert_eq!(v["connections"], 1, "{v}");
    assert_eq!(v["h2_max_concurrent_streams"], 1, "{v}");
    assert_eq!(v["tls_full"], 1, "{v}");
    let v2 = h2.stats().await;
    assert_eq!(v2["h2_streams"], streams);
    assert_eq!(
        server.h2_stats(),
        H2Stats {
            connections: 1,
            streams,
            max_concurrent_streams: 1,
        }
    );
}

#[tokio::test]
async fn http11_over_tls_is_unchanged_when_the_client_offers_no_h2() {
    let server = tls_server();
    let ca = server.self_signed_ca_pem().unwrap();
    for alpn in [&[&b"http/1.1"[..]][..], &[]] {
        let config = tls_config(ca, alpn, None);
        let tcp = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .unwrap();
        let mut tls = tokio_rustls::TlsConnector::from(config)
            .connect(
                rustls::pki_types::ServerName::try_from("localhost").unwrap(),
                tcp,
            )
            .await
            .unwrap();
        let negotiated = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        assert_eq!(negotiated, alpn.first().map(|p| p.to_vec()));
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        tls.write_all(b"GET /tls HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        tls.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let body = response.split_once("\r\n\r\n").unwrap().1;
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        let expected = match alpn.first() {
            Some(_) => serde_json::json!("http/1.1"),
            None => serde_json::Value::Null,
        };
        assert_eq!(v["alpn"], expected, "{v}");
    }
    let v = H2::tls(
        server.local_addr(),
        tls_config(ca, &[b"h2", b"http/1.1"], None),
    )
    .await
    .stats()
    .await;
    assert_eq!(v["h2_connections"], 0, "{v}");
    assert_eq!(v["connections"], 2, "{v}");
}

#[tokio::test]
async fn h2c_with_prior_knowledge_and_http11_share_the_plain_port() {
    let server = common::server(1);
    let addr = server.local_addr();
    let h2 = H2::h2c(addr).await;
    let r = h2.get("/").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "Hello from onrush\n");
    let r = h2.request("POST", "/echo", b"hello h2c").await;
    assert_eq!(r.json()["body_length"], 9);
    let r = h2.get("/bytes/200000").await;
    assert_eq!(r.body.len(), 200_000);
    let r = h2.get("/tls").await;
    assert_eq!(r.status, 400, "plain connections have no TLS to describe");

    // HTTP/1.1 on the same port, also a request that starts like the preface but is not one.
    let addr2 = addr;
    let v = tokio::task::spawn_blocking(move || {
        let mut c = Client::connect(addr2);
        let r = c.get("/");
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), "Hello from onrush\n");
        let r = c.get_discard("/bytes/100000");
        assert_eq!(r.body_len, 100_000);
        let mut p = Client::connect(addr2);
        p.write_raw(b"PRI / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
        let r = p.read_response(false, false);
        assert_eq!(r.status, 200, "PRI is just a method to HTTP/1.1");
        c.get("/stats").json()
    })
    .await
    .unwrap();
    assert_eq!(v["connections"], 3, "{v}");
    assert_eq!(v["h2_connections"], 1, "{v}");
    assert_eq!(v["h2_streams"], 4, "{v}");
    assert_eq!(v["requests"], 7, "{v}");
    assert_eq!(v["tls_full"], 0, "{v}");
}

/// Sends `n` requests for `path` at once on `h2` and waits for all; returns the time taken.
async fn concurrently(h2: &H2, n: usize, path: &str) -> Duration {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..n {
        let h2 = h2.clone();
        let path = path.to_owned();
        tasks.push(tokio::spawn(async move { h2.get(&path).await }));
    }
    for t in tasks {
        let r = t.await.unwrap();
        assert_eq!(r.status, 200);
    }
    started.elapsed()
}

#[tokio::test]
async fn fifty_streams_run_concurrently_on_one_connection() {
    let server = tls_server();
    let h2 = h2_tls(&server).await;
    let took = concurrently(&h2, 50, "/delay/200").await;
    // Sequential would be 10 s; concurrent is one delay plus overhead.
    assert!(
        took < Duration::from_millis(2000),
        "50 x /delay/200 took {took:?}"
    );
    let v = h2.stats().await;
    assert!(
        v["h2_max_concurrent_streams"].as_u64().unwrap() >= 40,
        "{v}"
    );
    assert_eq!(v["h2_streams"], 50, "{v}");
    assert_eq!(v["connections"], 1, "{v}");
    assert_eq!(v["h2_connections"], 1, "{v}");
    let first_max = v["h2_max_concurrent_streams"].as_u64().unwrap();
    assert!(first_max <= 50, "{v}");

    // Finished streams leave the in-flight count: a second wave of 50 does not add up to 100.
    concurrently(&h2, 50, "/delay/100").await;
    let max = h2.stats().await["h2_max_concurrent_streams"]
        .as_u64()
        .unwrap();
    assert!((40..=50).contains(&max), "max {max} after a second wave");
}

#[tokio::test]
async fn instant_streams_sent_together_are_in_flight_together() {
    let server = common::server(1);
    let h2 = H2::h2c(server.local_addr()).await;
    h2.get("/").await;
    // Ten HEADERS frames queued before the connection task runs again: one write, one read on
    // the server, which accepts them all before any handler runs.
    let mut send = h2.sender().ready().await.unwrap();
    let mut responses = Vec::new();
    for _ in 0..10 {
        let (response, _) = send.send_request(h2.request_for("GET", "/"), true).unwrap();
        responses.push(response);
    }
    for response in responses {
        let (parts, mut body) = response.await.unwrap().into_parts();
        assert_eq!(parts.status, 200);
        while let Some(chunk) = body.data().await {
            chunk.unwrap();
        }
    }
    let s = server.h2_stats();
    assert_eq!((s.streams, s.max_concurrent_streams), (11, 10), "{s:?}");
}

#[tokio::test]
async fn reset_streams_leave_the_in_flight_count() {
    let server = common::server(1);
    let h2 = H2::h2c(server.local_addr()).await;
    // Three streams the client gives up on while the server is still delaying them.
    let mut send = h2.sender();
    for _ in 0..3 {
        send = send.ready().await.unwrap();
        let (response, mut stream) = send
            .send_request(h2.request_for("GET", "/delay/60000"), true)
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        stream.send_reset(h2::Reason::CANCEL);
        drop(response);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    concurrently(&h2, 20, "/delay/300").await;
    let v = h2.stats().await;
    assert_eq!(v["h2_streams"], 23, "{v}");
    assert_eq!(
        v["h2_max_concurrent_streams"], 20,
        "the reset streams must have ended: {v}"
    );
}

#[tokio::test]
async fn max_concurrent_streams_setting_is_announced_and_enforced() {
    let server = onrush_server::start_with_options(
        config(),
        ServerOptions {
            http2: Http2Config {
                max_concurrent_streams: 8,
                ..Http2Config::default()
            },
            ..ServerOptions::default()
        },
    )
    .unwrap();
    let h2 = H2::h2c(server.local_addr()).await;
    // The SETTINGS frame has arrived once a first response is in.
    h2.get("/").await;
    assert_eq!(h2.sender().current_max_send_streams(), 8);
    let took = concurrently(&h2, 20, "/delay/150").await;
    // 20 streams, 8 at a time: three waves.
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert_eq!(server.h2_stats().max_concurrent_streams, 8);

    let default = common::server(1);
    let h2 = H2::h2c(default.local_addr()).await;
    h2.get("/").await;
    assert_eq!(h2.sender().current_max_send_streams(), 1000);

    for bad in [
        Http2Config {
            max_concurrent_streams: 0,
            ..Http2Config::default()
        },
        Http2Config {
            stream_window: 1000,
            ..Http2Config::default()
        },
        Http2Config {
            connection_window: u32::MAX,
            ..Http2Config::default()
        },
    ] {
        let err = onrush_server::start_with_options(
            config(),
            ServerOptions {
                http2: bad,
                ..ServerOptions::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{bad:?}");
    }
}

#[tokio::test]
async fn many_h2_connections_on_several_threads() {
    let server = onrush_server::start_tls(
        ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            threads: 2,
        },
        ServerTls::default(),
    )
    .unwrap();
    let mut conns = Vec::new();
    for _ in 0..8 {
        conns.push(h2_tls(&server).await);
    }
    for h2 in &conns {
        concurrently(h2, 10, "/delay/20").await;
    }
    let s = server.h2_stats();
    assert_eq!(s.connections, 8);
    assert_eq!(s.streams, 80);
    assert!((5..=10).contains(&s.max_concurrent_streams), "{s:?}");
    assert_eq!(server.stats().requests, 80);
}
