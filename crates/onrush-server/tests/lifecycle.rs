//! Connections, counters, start and shutdown.

use crate::common;

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{server, stats, Client};
use onrush_server::{ServerConfig, Stats};

#[test]
fn keep_alive_counts_one_connection() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    assert_eq!(c.get("/").status, 200);
    assert_eq!(c.get("/json").status, 200);
    assert_eq!(stats(s.local_addr()), (2, 1));
    assert_eq!(
        s.stats(),
        Stats {
            requests: 2,
            connections: 1
        }
    );
}

#[test]
fn connection_close_is_honoured() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let r = c.request("GET", "/", &[("Connection", "close")], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed_by_server(Duration::from_secs(2)));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    c.write_raw(
        b"GET /status/201 HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /bytes/3 HTTP/1.1\r\nHost: x\r\n\r\n\
          GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(c.read_response(false, false).status, 201);
    assert_eq!(c.read_response(false, false).body, [0, 1, 2]);
    assert_eq!(c.read_response(false, false).text(), "Hello from onrush\n");
    assert_eq!(s.stats().requests, 3);
}

#[test]
fn unread_request_bodies_do_not_break_keep_alive() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let body = vec![b'x'; 300_000];
    assert_eq!(c.request("POST", "/", &[], &body).status, 200);
    assert_eq!(c.request("PUT", "/status/202", &[], &body).status, 202);
    assert_eq!(c.get("/").status, 200);
    assert_eq!(s.stats().connections, 1);
}

#[test]
fn stats_requests_are_not_counted() {
    let s = server(1);
    let addr = s.local_addr();
    assert_eq!(stats(addr), (0, 0));
    assert_eq!(stats(addr), (0, 0), "reading /stats changes nothing");

    // A connection that starts with /stats is counted at its first other request.
    let mut c = Client::connect(addr);
    let v = c.get("/stats").json();
    assert_eq!(
        (v["requests"].as_u64(), v["connections"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(v["accepted"].as_u64().unwrap() >= 3);
    assert_eq!(c.get("/").status, 200);
    assert_eq!(c.get("/stats").status, 200);
    assert_eq!(c.get("/").status, 200);
    assert_eq!(stats(addr), (2, 1));

    // Bad requests and 404s are requests too.
    let mut d = Client::connect(addr);
    assert_eq!(d.get("/nope").status, 404);
    assert_eq!(d.get("/bytes/x").status, 400);
    assert_eq!(stats(addr), (4, 2));
    assert_eq!(
        s.stats(),
        Stats {
            requests: 4,
            connections: 2
        }
    );
    // Every TCP connection, /stats-only ones included, is in `accepted`.
    assert_eq!(s.accepted_connections(), 6);
}

#[test]
fn many_threads_share_the_port() {
    let s = server(4);
    let addr = s.local_addr();
    assert_ne!(addr.port(), 0);
    let clients: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..5 {
                    let mut c = Client::connect(addr);
                    assert_eq!(c.get("/").status, 200);
                    assert_eq!(c.get("/bytes/100").body_len, 100);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    assert_eq!(stats(addr), (80, 40));
}

#[test]
fn busy_port_is_an_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let err = onrush_server::start(ServerConfig {
        addr: taken.local_addr().unwrap(),
        threads: 2,
    })
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");

    // Another onrush server (which sets SO_REUSEPORT itself) must not share the port either.
    let s = server(2);
    let err = onrush_server::start(ServerConfig {
        addr: s.local_addr(),
        threads: 2,
    })
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
}

#[test]
fn explicit_port_and_zero_threads_work() {
    // Find a free port, release it, then ask for it by number.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = onrush_server::start(ServerConfig {
        addr: format!("127.0.0.1:{port}").parse().unwrap(),
        threads: 0,
    })
    .unwrap();
    assert_eq!(s.local_addr().port(), port);
    assert_eq!(Client::connect(s.local_addr()).get("/").status, 200);
}

#[test]
fn shutdown_is_prompt_even_with_busy_connections() {
    let s = server(2);
    let addr = s.local_addr();
    // One request sleeping for 30 s, one endless-looking download, one idle keep-alive.
    let mut sleeping = Client::connect(addr);
    sleeping.send("GET", "/delay/30000", &[], b"");
    let mut downloading = Client::connect(addr);
    downloading.send("GET", "/bytes/100000000000", &[], b"");
    let mut idle = Client::connect(addr);
    assert_eq!(idle.get("/").status, 200);
    std::thread::sleep(Duration::from_millis(100));

    let t = Instant::now();
    s.shutdown();
    let took = t.elapsed();
    assert!(took < Duration::from_secs(1), "shutdown took {took:?}");

    assert!(idle.closed_by_server(Duration::from_secs(2)));
    assert!(sleeping.closed_by_server(Duration::from_secs(2)));
    let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
    assert!(refused.is_err(), "still accepting after shutdown");
}

#[test]
fn dropping_the_handle_stops_the_server() {
    let s = server(1);
    let addr = s.local_addr();
    drop(s);
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}
