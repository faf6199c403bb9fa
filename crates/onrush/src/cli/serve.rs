//! `onrush serve`: the built-in target server in the foreground until Ctrl-C.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::exit;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Server threads [default: one per core].
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

pub fn run(args: ServeArgs) -> i32 {
    crate::signals::install();
    crate::sys::raise_nofile_limit();
    let threads = args.threads.unwrap_or_else(default_threads);
    let server = match onrush_server::start(onrush_server::ServerConfig {
        addr: args.addr,
        threads,
    }) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", args.addr);
            return exit::RUNTIME;
        }
    };
    eprintln!(
        "onrush built-in server listening on http://{} ({threads} thread{}); Ctrl-C stops it",
        server.local_addr(),
        if threads == 1 { "" } else { "s" }
    );
    while !crate::signals::interrupted() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let stats = server.stats();
    server.shutdown();
    eprintln!(
        "stopped after {} requests on {} connections",
        stats.requests, stats.connections
    );
    exit::OK
}

pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
