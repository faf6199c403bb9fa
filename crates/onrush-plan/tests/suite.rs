//! Every integration test of this crate in one test binary (`cargo test -p onrush-plan --test suite`):
//! one link instead of one per file, which was most of CI's time. A file that measures the
//! whole process (its RSS, its allocator, its CPU) stays a binary of its own, in Cargo.toml.

mod common;

#[path = "docs.rs"]
mod docs;
#[path = "errors.rs"]
mod errors;
#[path = "good.rs"]
mod good;
#[path = "grammar.rs"]
mod grammar;
#[path = "port_wall.rs"]
mod port_wall;
#[path = "schema.rs"]
mod schema;
#[path = "template.rs"]
mod template;
#[path = "thresholds.rs"]
mod thresholds;
#[path = "tls.rs"]
mod tls;
#[path = "unset_vars.rs"]
mod unset_vars;
