//! A session's requests as a server receives them, for steps whose request never changes
//! (sent from the bytes their step encoded once) and steps with per-request values (rendered
//! every time): each request must arrive as its own bytes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use onrush_plan::{RenderContext, Vars};
use onrush_protocol::{RequestStart, Session};
use tokio::runtime::Runtime;

use crate::{ConnectionPool, HttpPlan, HttpSession, HttpStep};

/// A keep-alive HTTP/1.1 server on loopback that records every request (head and body) as
/// received, and answers 200 (with a cookie to `/login`).
fn recording_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut out = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut request = String::new();
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(n) = line.strip_prefix("Content-Length: ") {
                            length = n.trim().parse().unwrap();
                        }
                        request.push_str(&line);
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    request.push_str(&String::from_utf8(body).unwrap());
                    let cookie = if request.starts_with("GET /login ") {
                        "Set-Cookie: s=1\r\n"
                    } else {
                        ""
                    };
                    log.lock().unwrap().push(request);
                    let reply = format!("HTTP/1.1 200 OK\r\n{cookie}Content-Length: 2\r\n\r\nok");
                    out.write_all(reply.as_bytes()).unwrap();
                }
            });
        }
    });
    (port, seen)
}

/// The plan's steps compiled, and a session of VU 1.
fn compile(yaml: &str) -> (Vec<HttpStep>, HttpSession) {
    let grammars = onrush_plan::Grammars::only(crate::HttpGrammar);
    let plan = onrush_plan::load_str_with_grammars(
        "t",
        yaml,
        std::path::Path::new("."),
        &[],
        &[],
        &grammars,
    )
    .unwrap();
    let mut http = HttpPlan::new(&plan, None).unwrap();
    let steps = plan.scenarios[0]
        .steps
        .iter()
        .map(|s| match crate::RequestStep::of(s) {
            Some(r) => http.compile(&plan, 0, &r).unwrap(),
            None => panic!("a request step"),
        })
        .collect();
    let pool = Rc::new(ConnectionPool::new(http.targets.len(), 1));
    let session = HttpSession::new(&http.scenarios[0], http.targets.len(), 1, pool);
    (steps, session)
}

fn run(rt: &Runtime, session: &mut HttpSession, step: &HttpStep, iteration: u64) {
    let vars = Vars::default();
    let ctx = RenderContext::new(1, iteration, &vars);
    let start = RequestStart::now(onrush_protocol::Moment::now());
    let exchange = rt.block_on(session.execute(step, &ctx, start));
    assert_eq!(exchange.record.status, 200, "{:?}", exchange.record.failure);
}

const UA: &str = concat!("User-Agent: onrush/", env!("CARGO_PKG_VERSION"), "\r\n");

#[test]
fn each_request_arrives_as_its_own_bytes_prepared_or_rendered() {
    let (port, seen) = recording_server();
    let yaml = format!(
        "target: http://127.0.0.1:{port}\n\
         http: {{ decompress: false }}\n\
         scenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n\
         \x20     - {{ get: /static, query: {{ a: b c }}, headers: {{ X-A: \"1\" }} }}\n\
         \x20     - {{ post: /form, form: {{ k: v }} }}\n\
         \x20     - {{ get: \"/it/${{iteration}}\", headers: {{ X-Vu: \"${{vu}}\" }} }}\n\
         \x20     - {{ post: /echo, body: \"n=${{iteration}}\" }}\n\
         \x20     - {{ get: /login }}\n"
    );
    let (steps, mut session) = compile(&yaml);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let prepared: Vec<bool> = steps.iter().map(|s| s.prepared.is_some()).collect();
    assert_eq!(prepared, [true, true, false, false, true]);
    let host = format!("Host: 127.0.0.1:{port}\r\n");
    for iteration in 0..3 {
        for step in &steps[..4] {
            run(&rt, &mut session, step, iteration);
        }
    }
    let mut expected = Vec::new();
    for iteration in 0..3 {
        expected.push(format!(
            "GET /static?a=b%20c HTTP/1.1\r\n{host}{UA}X-A: 1\r\n\r\n"
        ));
        expected.push(format!(
            "POST /form HTTP/1.1\r\n{host}{UA}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\nk=v"
        ));
        expected.push(format!(
            "GET /it/{iteration} HTTP/1.1\r\n{host}{UA}X-Vu: 1\r\n\r\n"
        ));
        expected.push(format!(
            "POST /echo HTTP/1.1\r\n{host}{UA}Content-Length: 3\r\n\r\nn={iteration}"
        ));
    }
    assert_eq!(*seen.lock().unwrap(), expected);

    // Once the jar holds a cookie for it, a request that never changed carries it: rendered
    // again, not sent from its prepared bytes.
    seen.lock().unwrap().clear();
    run(&rt, &mut session, &steps[4], 0);
    run(&rt, &mut session, &steps[0], 0);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1],
        format!("GET /static?a=b%20c HTTP/1.1\r\n{host}{UA}X-A: 1\r\nCookie: s=1\r\n\r\n")
    );
}

/// The exchange of one request of `step`, whatever its outcome.
fn exchange(rt: &Runtime, session: &mut HttpSession, step: &HttpStep) -> onrush_protocol::Exchange {
    let vars = Vars::default();
    let ctx = RenderContext::new(1, 0, &vars);
    let start = RequestStart::now(onrush_protocol::Moment::now());
    rt.block_on(session.execute(step, &ctx, start))
}

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `connections: per_request` on loopback: each request opens its connection (the connect
/// done as connect() returns, without a future), with its connect time, and its request
/// arrives as it should.
#[test]
fn per_request_connections_are_opened_with_their_connect_time() {
    let (port, seen) = recording_server();
    let yaml = format!(
        "target: http://127.0.0.1:{port}\n\
         http: {{ connections: per_request }}\n\
         scenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n\
         \x20     - {{ get: /a }}\n"
    );
    let (steps, mut session) = compile(&yaml);
    let rt = current_thread();
    for _ in 0..3 {
        let done = exchange(&rt, &mut session, &steps[0]);
        assert_eq!(done.record.status, 200, "{:?}", done.record.failure);
        assert!(done.opened_connection);
        assert!(done.record.connect_us.is_some());
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter().all(|r| r.starts_with("GET /a HTTP/1.1\r\n")),
        "{seen:?}"
    );
}

/// A refused connect is `connect_refused`, with a per-request connection as with a kept one.
#[test]
fn a_refused_per_request_connect_is_connect_refused() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    for scope in ["per_request", "per_vu"] {
        let yaml = format!(
            "target: http://127.0.0.1:{port}\n\
             http: {{ connections: {scope} }}\n\
             scenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n\
             \x20     - {{ get: /a }}\n"
        );
        let (steps, mut session) = compile(&yaml);
        let rt = current_thread();
        let done = exchange(&rt, &mut session, &steps[0]);
        assert_eq!(
            done.record.failure,
            Some(onrush_protocol::FailureClass::ConnectRefused),
            "{scope}"
        );
        assert!(!done.opened_connection, "{scope}");
    }
}

/// A connect whose SYN gets no answer (a listener with a full accept queue drops it) is still
/// in progress after connect(): the session waits for it, and the request's timeout classifies
/// it as `connect_timeout`, not as a request timeout.
#[test]
fn an_unanswered_per_request_connect_is_connect_timeout() {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
    socket.listen(1).unwrap();
    let addr = socket.local_addr().unwrap().as_socket().unwrap();
    let mut filler = Vec::new();
    let mut dropped = false;
    for _ in 0..4 {
        let s = std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200));
        match s {
            Ok(s) => filler.push(s),
            Err(_) => dropped = true,
        }
    }
    if !dropped {
        eprintln!("a full accept queue still answers on this host: nothing to observe");
        return;
    }
    let yaml = format!(
        "target: http://{addr}\n\
         http: {{ connections: per_request, timeout: 300ms }}\n\
         scenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n\
         \x20     - {{ get: /a }}\n"
    );
    let (steps, mut session) = compile(&yaml);
    let rt = current_thread();
    let started = std::time::Instant::now();
    let done = exchange(&rt, &mut session, &steps[0]);
    let took = started.elapsed();
    assert_eq!(
        done.record.failure,
        Some(onrush_protocol::FailureClass::ConnectTimeout)
    );
    assert!(
        took >= std::time::Duration::from_millis(280),
        "took {took:?}"
    );
    drop(filler);
}

/// A keep-alive server that closes every connection after its first request, without saying
/// so (no `Connection: close`), as a server closing idle connections does; it answers that
/// request on the connections `answers` picks (by their order, from 0). Counts connections.
fn closing_server(answers: fn(usize) -> bool) -> (u16, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(Mutex::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let n = {
                let mut c = count.lock().unwrap();
                *c += 1;
                *c - 1
            };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            if answers(n) {
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            }
            // Dropped: the server's close, with no word of it in the response.
        }
    });
    (port, accepted)
}

/// A reused keep-alive connection the server closed while idle is not the target's fault: the
/// request is retried once on a fresh connection (the common request's short path, a request
/// encoded ahead, goes the general way for the retry), and succeeds.
#[test]
fn a_reused_connection_the_server_closed_is_retried_once_on_a_fresh_one() {
    let (port, accepted) = closing_server(|_| true);
    let yaml = format!(
        "target: http://127.0.0.1:{port}\n\
         scenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n\
         \x20     - {{ get: /a }}\n"
    );
    let (steps, mut session) = compile(&yaml);
    assert!(steps[0].prepared.is_some(), "the short path's request");
    let rt = current_thread();
    for i in 0..4 {
        // The server's close reaches the client before its next request.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let done = exchange(&rt, &mut session, &steps[0]);
        assert_eq!(
            done.record.status, 200,
            "request {i}: {:?}",
            done.record.failure
        );
        assert!(done.opened_connection, "request {i}: a fresh connection");
    }
    assert_eq!(*accepted.lock().unwrap(), 4);
}

/// The retry is once: when the fresh connection fails too, the request fails with its class,
/// and no third connection is opened.
#[test]
fn a_retried_request_that_fails_again_is_not_retried_twice() {
    let (port, accepted) = closing_server(|n| n == 0);
    let yaml = format!(
        "target: http://127.0.0.1:{port}\n\
         scenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n\
         \x20     - {{ get: /a }}\n"
    );
    let (steps, mut session) = compile(&yaml);
    let rt = current_thread();
    let first = exchange(&rt, &mut session, &steps[0]);
    assert_eq!(first.record.status, 200, "{:?}", first.record.failure);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = exchange(&rt, &mut session, &steps[0]);
    assert_eq!(second.record.status, 0);
    assert_eq!(
        second.record.failure,
        Some(onrush_protocol::FailureClass::ClosedEarly),
        "the fresh connection closed without an answer"
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(*accepted.lock().unwrap(), 2);
}

/// A keep-alive server whose answers take their time: `/whole` after 100 ms in one piece,
/// `/split` its head at once and its body 300 ms later, `/hop` a redirect to `/split` after
/// 100 ms.
fn slow_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut out = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                let ms = std::time::Duration::from_millis;
                loop {
                    let mut first = String::new();
                    if reader.read_line(&mut first).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut line = String::new();
                    while line != "\r\n" {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                    }
                    let head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
                    if first.starts_with("GET /whole ") {
                        std::thread::sleep(ms(100));
                        out.write_all(format!("{head}ok").as_bytes()).unwrap();
                    } else if first.starts_with("GET /split ") {
                        out.write_all(head.as_bytes()).unwrap();
                        std::thread::sleep(ms(300));
                        out.write_all(b"ok").unwrap();
                    } else {
                        std::thread::sleep(ms(100));
                        let redirect =
                            "HTTP/1.1 302 Found\r\nLocation: /split\r\nContent-Length: 0\r\n\r\n";
                        out.write_all(redirect.as_bytes()).unwrap();
                    }
                }
            });
        }
    });
    port
}

/// The TTFB is the time to the first byte of the first response, the service time to the
/// last byte of the last: one figure for a response that came in one piece, a shorter one for
/// a body that came later, the first hop's for a redirect followed.
#[test]
fn the_ttfb_is_the_first_responses_first_byte() {
    let port = slow_server();
    let yaml = format!(
        "target: http://127.0.0.1:{port}\n\
         http: {{ redirects: 5 }}\n\
         scenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n\
         \x20     - {{ get: /whole }}\n\
         \x20     - {{ get: /split }}\n\
         \x20     - {{ get: /hop }}\n"
    );
    let (steps, mut session) = compile(&yaml);
    let rt = current_thread();
    let times = |step: &HttpStep, session: &mut HttpSession| {
        let done = exchange(&rt, session, step);
        assert_eq!(done.record.status, 200, "{:?}", done.record.failure);
        (done.record.ttfb_us.expect("a TTFB"), done.record.service_us)
    };
    // Twice each: on the connection's first request (`follow`) and on a reused one (the
    // short path).
    for round in 0..2 {
        let (ttfb, service) = times(&steps[0], &mut session);
        assert!(
            service >= 100_000,
            "round {round}: /whole took {service} µs"
        );
        assert_eq!(ttfb, service, "round {round}: /whole came in one piece");
        let (ttfb, service) = times(&steps[1], &mut session);
        assert!(
            service >= 300_000,
            "round {round}: /split took {service} µs"
        );
        assert!(
            ttfb + 150_000 < service,
            "round {round}: /split's head came 300 ms before its body: TTFB {ttfb} µs, \
             service {service} µs"
        );
        let (ttfb, service) = times(&steps[2], &mut session);
        assert!(service >= 400_000, "round {round}: /hop took {service} µs");
        assert!(
            ttfb >= 100_000 && ttfb + 250_000 < service,
            "round {round}: /hop's redirect came 100 ms in, /split's body 300 ms after: \
             TTFB {ttfb} µs, service {service} µs"
        );
    }
}
