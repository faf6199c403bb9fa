//! Measures the client's cost per request, for comparison with stack.md's figures.
//!
//! ```text
//! cargo build --release -p onrush-http1 --example h1_loop
//! taskset -c 1 target/release/examples/h1_loop serve 127.0.0.1:18080 &
//! taskset -c 0 valgrind --tool=cachegrind --cache-sim=no \
//!     target/release/examples/h1_loop client 127.0.0.1:18080 50 20000
//! ```
//! Run the client twice with different request counts and divide the difference in
//! instructions by the difference in requests, which removes start-up costs.
//!
//! `serve`: a minimal keep-alive server answering every request head with a 2-byte body.
//! `client ADDR CONNS TOTAL`: CONNS connections on one current_thread runtime, TOTAL requests.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;

use onrush_http1::{connect, ConnectOptions, Discard, Request, RequestBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const OK2: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: h1_loop serve ADDR | h1_loop client ADDR CONNS TOTAL";
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    match args.get(1).map(String::as_str) {
        Some("serve") => local.block_on(&rt, serve(args[2].parse().expect(usage))),
        Some("client") => {
            let addr: SocketAddr = args[2].parse().expect(usage);
            let conns: u64 = args[3].parse().expect(usage);
            let total: u64 = args[4].parse().expect(usage);
            let started = std::time::Instant::now();
            local.block_on(&rt, client(addr, conns, total));
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "{total} requests in {secs:.3}s ({:.0}/s)",
                total as f64 / secs
            );
        }
        _ => panic!("{usage}"),
    }
}

async fn serve(addr: SocketAddr) {
    let l = tokio::net::TcpListener::bind(addr).await.unwrap();
    loop {
        let (mut s, _) = l.accept().await.unwrap();
        s.set_nodelay(true).unwrap();
        tokio::task::spawn_local(async move {
            let mut buf = vec![0u8; 8192];
            let mut have = 0;
            loop {
                let n = match s.read(&mut buf[have..]).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                have += n;
                let mut answers = 0;
                while let Some(i) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                    answers += 1;
                    buf.copy_within(i + 4..have, 0);
                    have -= i + 4;
                }
                for _ in 0..answers {
                    if s.write_all(OK2).await.is_err() {
                        return;
                    }
                }
            }
        });
    }
}

async fn client(addr: SocketAddr, conns: u64, total: u64) {
    let remaining = Rc::new(Cell::new(total));
    let host = addr.to_string();
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let remaining = remaining.clone();
        let host = host.clone();
        tasks.push(tokio::task::spawn_local(async move {
            let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
            let req = Request {
                method: "GET",
                target: b"/",
                host: host.as_bytes(),
                headers: b"User-Agent: onrush/0.1\r\n",
                body: RequestBody::Empty,
                close: false,
            };
            while remaining.get() > 0 {
                remaining.set(remaining.get() - 1);
                let r = conn.send(&req, &mut Discard).await.unwrap();
                assert_eq!(r.status, 200);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}
