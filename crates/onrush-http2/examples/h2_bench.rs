//! CPU per request of the two HTTP/2 clients: `fast` (hand-written) and `h2` (the h2 crate),
//! 50 VUs over 5 TLS connections x 10 streams, `GET /` against the built-in server.
//!
//! ```text
//! h2_bench serve [PORT]          # the built-in server over TLS (h2 by ALPN), 1 thread
//! h2_bench fast|h2 PORT N        # N requests, then exit
//! ```
//! See `benches/h2_cost.sh` (in this crate) for the callgrind measurement.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;

use onrush_http::{
    ConnectOptions, Discard, Request, RequestBody, SessionMode, TlsClient, TlsOptions,
};
use onrush_http2::H2Settings;

const CONNS: usize = 5;
const STREAMS: usize = 10;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => {
            let port: u16 = args.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
            let server = onrush_server::start_tls(
                onrush_server::ServerConfig {
                    addr: SocketAddr::from(([127, 0, 0, 1], port)),
                    threads: 1,
                },
                onrush_server::ServerTls::default(),
            )
            .expect("server");
            println!("{}", server.local_addr().port());
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
        Some(which @ ("fast" | "h2")) => {
            let port: u16 = args[1].parse().expect("PORT");
            let n: u64 = args[2].parse().expect("N");
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let t0 = Instant::now();
            tokio::task::LocalSet::new().block_on(&rt, run(which == "fast", addr, n));
            let took = t0.elapsed();
            eprintln!(
                "{which}: {n} requests in {:.3}s ({:.0}/s)",
                took.as_secs_f64(),
                n as f64 / took.as_secs_f64()
            );
        }
        _ => eprintln!("usage: h2_bench serve [PORT] | h2_bench fast|h2 PORT N"),
    }
}

enum Conn {
    Fast(onrush_http2::fast::H2Connection),
    H2(onrush_http2::reference::H2Connection),
}

async fn run(fast: bool, addr: SocketAddr, n: u64) {
    let client = TlsClient::new(&TlsOptions {
        alpn: vec![b"h2".to_vec()],
        insecure: true,
        ..TlsOptions::default()
    })
    .unwrap();
    let left = Rc::new(Cell::new(n));
    let mut vus = Vec::new();
    for c in 0..CONNS {
        let session = client.session(SessionMode::Full, c as u64 + 1);
        let (stream, _, _) = onrush_http::connect_tls_stream(
            addr,
            &ConnectOptions::default(),
            &session,
            "localhost",
        )
        .await
        .expect("TLS connect");
        let settings = H2Settings::default();
        let scheme = http::uri::Scheme::HTTPS;
        let conn = if fast {
            Conn::Fast(
                onrush_http2::fast::handshake(stream, scheme, b"127.0.0.1", &settings)
                    .await
                    .expect("handshake"),
            )
        } else {
            Conn::H2(
                onrush_http2::reference::handshake(stream, scheme, b"127.0.0.1", &settings)
                    .await
                    .expect("handshake"),
            )
        };
        for _ in 0..STREAMS {
            let mut conn = match &conn {
                Conn::Fast(c) => Conn::Fast(c.clone()),
                Conn::H2(c) => Conn::H2(c.clone()),
            };
            let left = left.clone();
            vus.push(tokio::task::spawn_local(async move {
                let req = Request {
                    method: "GET",
                    target: b"/",
                    host: b"127.0.0.1",
                    headers: b"",
                    body: RequestBody::Empty,
                    close: false,
                };
                while left.get() > 0 {
                    left.set(left.get() - 1);
                    let r = match &mut conn {
                        Conn::Fast(c) => c.send(&req, &mut Discard).await,
                        Conn::H2(c) => c.send(&req, &mut Discard).await,
                    };
                    assert_eq!(r.expect("request").status, 200);
                }
            }));
        }
    }
    for vu in vus {
        vu.await.unwrap();
    }
}
