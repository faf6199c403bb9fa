//! Every integration test of this crate in one test binary (`cargo test -p onrush-server --test suite`):
//! one link instead of one per file, which was most of CI's time. A file that measures the
//! whole process (its RSS, its allocator, its CPU) stays a binary of its own, in Cargo.toml.

mod common;

#[path = "http2.rs"]
mod http2;
#[path = "lifecycle.rs"]
mod lifecycle;
#[path = "scenario.rs"]
mod scenario;
#[path = "tls.rs"]
mod tls;
