//! Measures what the endpoint choice costs the client: CPU time (user + system, getrusage) per
//! connection opened and per request, with one UDP socket per connection against one per
//! thread. Runs against the aioquic witness server (tests/servers/h3_server.py), which is the
//! slower side, so wall time says little; the client's own CPU is what is compared.
//!
//! `cargo run -p onrush-http3 --example endpoint_cost -- CA_PEM PORT [CONNECTIONS] [REQUESTS]`
//! with the server started as `python3 tests/servers/h3_server.py server.pem server.key`.

use std::net::SocketAddr;
use std::time::Duration;

use onrush_http::{ConnectOptions, Request, RequestBody, SessionMode, TlsClient, TlsOptions};
use onrush_http3::{connect, EndpointScope, H3Settings};

fn cpu() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given; RUSAGE_SELF is valid.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let ca = &args[1];
    let port: u16 = args[2].parse().unwrap();
    let connections: usize = args.get(3).map_or(20, |a| a.parse().unwrap());
    let requests: usize = args.get(4).map_or(50, |a| a.parse().unwrap());
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(ca.into()),
        alpn: vec![b"h3".to_vec()],
        ..Default::default()
    })
    .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let host = format!("localhost:{port}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for scope in [EndpointScope::PerConnection, EndpointScope::PerThread] {
        let settings = H3Settings {
            endpoint: scope,
            ..Default::default()
        };
        rt.block_on(async {
            let session = client.session(SessionMode::Full, 1);
            let before = cpu();
            let mut conns = Vec::new();
            for _ in 0..connections {
                let (c, _, _) = connect(
                    addr,
                    &ConnectOptions::default(),
                    &session,
                    "localhost",
                    host.as_bytes(),
                    &settings,
                )
                .await
                .unwrap();
                conns.push(c);
            }
            let opened = cpu() - before;
            let before = cpu();
            let mut tasks = Vec::new();
            for mut c in conns {
                let host = host.clone();
                tasks.push(tokio::spawn(async move {
                    for _ in 0..requests {
                        let req = Request {
                            method: "GET",
                            target: b"/hello",
                            host: host.as_bytes(),
                            headers: b"",
                            body: RequestBody::Empty,
                            close: false,
                        };
                        c.send(&req, &mut onrush_http::Discard).await.unwrap();
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            let sent = cpu() - before;
            println!(
                "{scope:?}: {:.0} µs CPU per connection opened, {:.1} µs CPU per request ({connections} connections x {requests} requests)",
                opened.as_secs_f64() * 1e6 / connections as f64,
                sent.as_secs_f64() * 1e6 / (connections * requests) as f64,
            );
        });
    }
}
