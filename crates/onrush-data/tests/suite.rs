//! Every integration test of this crate in one test binary (`cargo test -p onrush-data --test suite`):
//! one link instead of one per file, which was most of CI's time. A file that measures the
//! whole process (its RSS, its allocator, its CPU) stays a binary of its own, in Cargo.toml.

#[path = "csv.rs"]
mod csv;
#[path = "feeder.rs"]
mod feeder;
#[path = "json.rs"]
mod json;
#[path = "memory.rs"]
mod memory;
