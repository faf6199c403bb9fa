//! Every integration test of this crate in one test binary (`cargo test -p onrush --test suite`):
//! one link instead of one per file, which was most of CI's time. A file that measures the
//! whole process (its RSS, its allocator, its CPU) stays a binary of its own, in Cargo.toml.

mod common;

#[path = "builtin.rs"]
mod builtin;
#[path = "curl_import.rs"]
mod curl_import;
#[path = "debug.rs"]
mod debug;
#[path = "distributed.rs"]
mod distributed;
#[path = "distributed_ssh.rs"]
mod distributed_ssh;
#[path = "exec.rs"]
mod exec;
#[path = "failing_exchanges.rs"]
mod failing_exchanges;
#[path = "failures.rs"]
mod failures;
#[path = "figures.rs"]
mod figures;
#[path = "generator.rs"]
mod generator;
#[path = "grpc.rs"]
mod grpc;
#[path = "grpc_reflection.rs"]
mod grpc_reflection;
#[path = "har.rs"]
mod har;
#[path = "hostile.rs"]
mod hostile;
#[path = "http2.rs"]
mod http2;
#[path = "http3.rs"]
mod http3;
#[path = "http3_serve.rs"]
mod http3_serve;
#[path = "import.rs"]
mod import;
#[path = "kube.rs"]
mod kube;
// Needs Chromium and playwright-core: tests/install-chromium-har.sh.
mod live;
#[path = "load_flags.rs"]
mod load_flags;
#[path = "lost_results.rs"]
mod lost_results;
#[path = "memory.rs"]
mod memory;
#[path = "merge.rs"]
mod merge;
mod mixed;
#[path = "open_model.rs"]
mod open_model;
#[path = "phases.rs"]
mod phases;
#[path = "port_wall.rs"]
mod port_wall;
#[path = "preflight.rs"]
mod preflight;
#[path = "profiles.rs"]
mod profiles;
#[path = "rates.rs"]
mod rates;
#[path = "report.rs"]
mod report;
#[path = "run_plan.rs"]
mod run_plan;
#[path = "scenarios.rs"]
mod scenarios;
#[path = "scripting.rs"]
mod scripting;
#[path = "secrets.rs"]
mod secrets;
#[path = "sla_and_outputs.rs"]
mod sla_and_outputs;
#[path = "soak.rs"]
mod soak;
#[path = "stops.rs"]
mod stops;
#[path = "tcp.rs"]
mod tcp;
#[path = "tcp_tls.rs"]
mod tcp_tls;
#[path = "thrift.rs"]
mod thrift;
#[path = "thrift_tls.rs"]
mod thrift_tls;
#[path = "tls.rs"]
mod tls;
#[path = "udp.rs"]
mod udp;
#[path = "unsolicited.rs"]
mod unsolicited;
#[path = "ws.rs"]
mod ws;
