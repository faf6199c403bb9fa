//! Every integration test of this crate in one test binary (`cargo test -p onrush-metrics --test suite`):
//! one link instead of one per file, which was most of CI's time. A file that measures the
//! whole process (its RSS, its allocator, its CPU) stays a binary of its own, in Cargo.toml.

mod common;

#[path = "files.rs"]
mod files;
#[path = "groups_checks.rs"]
mod groups_checks;
#[path = "handshakes.rs"]
mod handshakes;
#[path = "recording.rs"]
mod recording;
#[path = "streaming.rs"]
mod streaming;
