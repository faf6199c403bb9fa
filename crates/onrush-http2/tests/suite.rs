//! Every integration test of this crate in one test binary (`cargo test -p onrush-http2 --test suite`):
//! one link instead of one per file, which was most of CI's time. A file that measures the
//! whole process (its RSS, its allocator, its CPU) stays a binary of its own, in Cargo.toml.

#[path = "fast_fake.rs"]
mod fast_fake;
#[path = "fast_server.rs"]
mod fast_server;
