//! `onrush serve`: the built-in target server in the foreground until Ctrl-C.
//!
//! It speaks HTTP/1.1 and HTTP/2: h2c with prior knowledge on the plain port, and over TLS
//! whichever ALPN negotiates (`h2` preferred); on the plain port also WebSocket, gRPC and TCP
//! echo (lines, length-prefixed), told apart by a connection's first bytes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::exit;

/// What `-h` adds: the protocols the server speaks.
const PROTOCOLS_HELP: &str =
    "Protocols, all on the one plain port, told apart by a connection's first bytes:\n\
  HTTP/1.1 (an HTTP request line), HTTP/2 with prior knowledge (h2c: the HTTP/2 preface),\n\
  WebSocket (GET /ws/echo: echo of text and binary, pings answered, close codes),\n\
  gRPC over h2c (helloworld.Greeter of examples/protos/greeter.proto: SayHello,\n\
  SayHelloStream, SayHelloClientStream, SayHelloBidi; HelloRequest's delay_ms and error_code\n\
  ask for a delay or a status),\n\
  TCP echo of length-prefixed messages (first byte 0: a 4-byte big-endian length, then the\n\
  message; under 16 MiB), TCP echo of lines (any other first line),\n\
  Apache Thrift (the Calculator of examples/idl/calculator.thrift: binary or compact protocol,\n\
  framed or buffered transport, multiplexed or not; a framed call is 0x00 then its length and\n\
  0x80 0x01 or 0x82, a buffered one starts 0x80 0x01 or 0x82 itself; messages up to 1 MiB).\n\
TCP lines/frames and WebSocket messages take commands: /delay/MS TEXT, /stream/N TEXT,\n\
  /close (WebSocket: /close/CODE REASON), /stall; anything else is echoed.\n\
In a plan with `target: builtin`, steps name this server with the host `builtin`:\n\
  `tcp: builtin`, `grpc: builtin`, `thrift: builtin`, `url: ws://builtin/ws/echo`.\n\
With --tls: HTTP/2 or HTTP/1.1 as ALPN negotiates (h2 preferred); the other protocols are on\n\
  the plain port only. With --tls --http3 also HTTP/3 over QUIC on the same port number (UDP),\n\
  advertised by `Alt-Svc: h3=\":PORT\"` on HTTP/1.1 and HTTP/2 responses (gRPC stays on h2c).\n\
GET /stats counts requests and connections, h2_*, h3_*, quic_*, tls_*, and per protocol\n\
  tcp_connections, tcp_messages, ws_connections, ws_messages, ws_pings, grpc_calls,\n\
  grpc_messages_in, grpc_messages_out, thrift_connections, thrift_calls; GET /tls describes the\n\
  TLS of the connection it is asked on.\n\
Every HTTP endpoint and what it answers: `onrush serve --help`, docs/server.md.";

/// What `--help` adds: the protocols, then every HTTP endpoint and what it answers.
fn serve_long_help() -> String {
    format!(
        "{PROTOCOLS_HELP}\n\nHTTP endpoints (a 404 lists them too; any method unless said):\n{}",
        onrush_server::endpoints_help()
    )
}

#[derive(Args)]
#[command(after_help = PROTOCOLS_HELP, after_long_help = serve_long_help())]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Server threads [default: one per core].
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Serve HTTPS (TLS 1.2 and 1.3). Without --cert/--key, a CA and a certificate for
    /// localhost/127.0.0.1/::1 are generated (see --ca-out).
    #[arg(long)]
    tls: bool,
    /// PEM certificate chain to serve (with --key).
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// PEM private key of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// Require client certificates signed by the CA(s) in this PEM file (mutual TLS).
    #[arg(long, value_name = "FILE")]
    client_ca: Option<PathBuf>,
    /// Write the generated CA certificate (PEM) here, for clients to trust (http.tls.ca_file).
    #[arg(long, value_name = "FILE")]
    ca_out: Option<PathBuf>,
    /// Also answer HTTP/3 (QUIC) on the same port number over UDP, and advertise it with
    /// `Alt-Svc: h3=":PORT"` on HTTP/1.1 and HTTP/2 responses. Needs --tls (or --cert/--key).
    #[arg(long)]
    http3: bool,
    /// HTTP/2 (and HTTP/3): streams a client may have open at once on one connection
    /// (SETTINGS_MAX_CONCURRENT_STREAMS; QUIC's max_streams_bidi).
    #[arg(long, value_name = "N", default_value_t = onrush_server::Http2Config::default().max_concurrent_streams,
          value_parser = clap::value_parser!(u32).range(1..))]
    h2_max_streams: u32,
}

pub fn run(args: ServeArgs) -> i32 {
    onrush_engine::signals::install();
    crate::sys::raise_nofile_limit();
    let threads = args.threads.unwrap_or_else(default_threads);
    let config = onrush_server::ServerConfig {
        addr: args.addr,
        threads,
    };
    let tls = args.tls || args.cert.is_some() || args.client_ca.is_some();
    if args.http3 && !tls {
        eprintln!(
            "error: --http3 needs --tls (or --cert/--key): QUIC is always encrypted; \
             try `onrush serve --tls --http3`"
        );
        return exit::USAGE;
    }
    let options = onrush_server::ServerOptions {
        tls: tls.then(|| onrush_server::ServerTls {
            cert_key: args.cert.clone().zip(args.key.clone()),
            client_ca: args.client_ca.clone(),
        }),
        http2: onrush_server::Http2Config {
            max_concurrent_streams: args.h2_max_streams,
            ..onrush_server::Http2Config::default()
        },
        http3: args.http3,
    };
    let started = onrush_server::start_with_options(config, options);
    let server = match started {
        Ok(server) => server,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", args.addr);
            return exit::RUNTIME;
        }
    };
    if let (Some(path), Some(pem)) = (&args.ca_out, server.self_signed_ca_pem()) {
        if let Err(e) = std::fs::write(path, pem) {
            eprintln!("error: cannot write {}: {e}", path.display());
            server.shutdown();
            return exit::RUNTIME;
        }
        eprintln!("generated CA certificate written to {}", path.display());
    }
    eprintln!(
        "onrush built-in server listening on {}://{} ({}, {threads} thread{}); Ctrl-C stops it",
        if tls { "https" } else { "http" },
        server.local_addr(),
        if args.http3 {
            "HTTP/1.1 and HTTP/2 by ALPN over TCP, HTTP/3 over UDP on the same port"
        } else if tls {
            "HTTP/1.1 and HTTP/2 by ALPN"
        } else {
            "HTTP/1.1, h2c, WebSocket /ws/echo, gRPC, Thrift, TCP echo"
        },
        if threads == 1 { "" } else { "s" }
    );
    while !onrush_engine::signals::interrupted() {
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
