//! Measures the syscalls of `connect`, plain and with the options that avoid the ephemeral-port
//! wall (a bound source address with IP_BIND_ADDRESS_NO_PORT, SO_LINGER 0).
//!
//! ```text
//! cargo build --release -p onrush-http1 --example connect_cost
//! target/release/examples/connect_cost serve 127.0.0.1:18081 &
//! strace -f -c -o plain.txt target/release/examples/connect_cost client 127.0.0.1:18081 2000
//! strace -f -c -o from.txt  target/release/examples/connect_cost client 127.0.0.1:18081 2000 --from 127.0.0.2
//! strace -f -c -o reset.txt target/release/examples/connect_cost client 127.0.0.1:18081 2000 --reset
//! ```
//! Run the client with two counts and divide the difference in syscalls by the difference in
//! connections, which removes start-up costs.
//!
//! `serve ADDR`: accepts connections and reads each until it ends.
//! `client ADDR N [--from IP] [--reset]`: N connections one after the other, each dropped at once.

use std::net::SocketAddr;

use onrush_http1::{connect, ConnectOptions};
use tokio::io::AsyncReadExt;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: connect_cost serve ADDR | connect_cost client ADDR N [--from IP] [--reset]";
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match args.get(1).map(String::as_str) {
        Some("serve") => rt.block_on(serve(args[2].parse().expect(usage))),
        Some("client") => {
            let addr: SocketAddr = args[2].parse().expect(usage);
            let n: u64 = args[3].parse().expect(usage);
            let mut opts = ConnectOptions::default();
            let mut rest = args[4..].iter();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--from" => {
                        opts.local_addr = Some(rest.next().expect(usage).parse().expect(usage))
                    }
                    "--reset" => opts.linger_reset = true,
                    _ => panic!("{usage}"),
                }
            }
            let started = std::time::Instant::now();
            rt.block_on(async {
                for _ in 0..n {
                    let conn = connect(addr, &opts).await.expect("connect");
                    drop(conn);
                }
            });
            let secs = started.elapsed().as_secs_f64();
            eprintln!("{n} connections in {secs:.3} s");
        }
        _ => panic!("{usage}"),
    }
}

async fn serve(addr: SocketAddr) {
    let l = tokio::net::TcpListener::bind(addr).await.unwrap();
    loop {
        let (mut s, _) = l.accept().await.unwrap();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        });
    }
}
