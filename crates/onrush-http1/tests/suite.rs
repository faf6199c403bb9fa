//! Every integration test of this crate in one test binary (`cargo test -p onrush-http1 --test suite`):
//! one link instead of one per file, which was most of CI's time. A file that measures the
//! whole process (its RSS, its allocator, its CPU) stays a binary of its own, in Cargo.toml.

mod common;

#[path = "connect_options.rs"]
mod connect_options;
#[path = "hyper_diff.rs"]
mod hyper_diff;
#[path = "network.rs"]
mod network;
#[path = "realism.rs"]
mod realism;
#[path = "tls.rs"]
mod tls;
#[path = "tls_options.rs"]
mod tls_options;
