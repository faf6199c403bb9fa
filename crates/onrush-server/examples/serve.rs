//! Runs the built-in server for a bounded time, for benchmarks and manual checks without the
//! full CLI: `cargo run --release -p onrush-server --example serve -- 127.0.0.1:8080 1 30`
//! (address, threads, seconds; defaults 127.0.0.1:8080, 1 thread, 60 s).

use std::time::Duration;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let threads = args.next().map_or(Ok(1), |t| t.parse()).map_err(invalid)?;
    let seconds: u64 = args.next().map_or(Ok(60), |s| s.parse()).map_err(invalid)?;
    let server = onrush_server::start(onrush_server::ServerConfig {
        addr: addr.parse().map_err(invalid)?,
        threads,
    })?;
    println!(
        "listening on http://{} for {seconds} s",
        server.local_addr()
    );
    std::thread::sleep(Duration::from_secs(seconds));
    println!("{:?}", server.stats());
    server.shutdown();
    Ok(())
}

fn invalid(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
}
