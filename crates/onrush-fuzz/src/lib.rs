//! onrush's fuzz targets: one plain function `fn(&[u8])` per parser of outside input, each
//! checking more than "no panic" where a property is cheap to state.
//!
//! | target | feeds | checks |
//! |---|---|---|
//! | `plan` | the bytes as a plan file to `onrush_plan::load_str_with_env` | no panic; every error has a line and a column |
//! | `template` | the bytes as a `${...}` template (a request body in a fixed plan) | no panic; a constant renders to its bytes; with only `${vu}`/`${iteration}` the length stays under `max_len_hint` |
//! | `http1` | the bytes as a server's response to one request, in pieces, to `onrush_http1::Connection::send` | no panic, no hang; the sink sees the `body_bytes` the response reports, `end` once on success |
//! | `http2` | the bytes as everything a server sends on an h2c connection, to `onrush_http2::handshake` + `send` | no panic, no hang (virtual clock); on success, the sink sees `body_bytes` |
//! | `hpack` | the bytes as HPACK header blocks to the HTTP/2 client's decoder | no panic; the dynamic table stays within its size |
//! | `decompress` | a coding (first byte) and a compressed body to `onrush_http::Decompress` | no panic; the same output and verdict whatever the split of the body |
//! | `extract_body` | a hostile body to fixed JSONPath, CSS, XPath, regex and boundary extractors | no panic; every value found lies in bounds (boundary: is a slice of the body) |
//! | `extract_expr` | an expression (first line) and a body to `Extractor::new` + `select` | no panic; a bad expression is an error, not a crash |
//! | `feeder` | a CSV (delimiter from the first byte) or JSON data file to `Table::from_bytes` | no panic; every row's fields are UTF-8 and within the columns |
//! | `results_intervals` | an `intervals.jsonl` to `IntervalsReader` (histograms decoded) | no panic; errors name a line |
//! | `results_summary` | a `summary.json` to `Summary::from_json` | no panic |
//! | `results_hist` | a histogram string to `HistDecoder` | no panic; what decodes re-encodes to the same histogram |
//! | `jmx` | a JMeter `.jmx` to `onrush_import::import_jmx`, the plan it writes to the loader | no panic; plan errors have positions |
//!
//! Each target is run three ways: its corpus (`fuzz/corpus/<target>/`) replayed and a fixed
//! number of deterministically mutated inputs, in `cargo test` (tests/suite.rs); any number of
//! mutated inputs with `cargo run -p onrush-fuzz --release -- TARGET EXECS` (no coverage
//! feedback); and coverage-guided with cargo-afl through `fuzz/afl` (`bench/fuzz.sh`). See
//! docs/fuzzing.md.

pub mod mutate;
pub mod runner;
mod targets;

/// One fuzz target.
#[derive(Clone, Copy)]
pub struct Target {
    /// Its name: the corpus folder and the argument of `bench/fuzz.sh`.
    pub name: &'static str,
    /// Feeds the bytes to the parser; panics when a property fails.
    pub run: fn(&[u8]),
    /// Tokens of the input format, for the mutator.
    pub dict: &'static [&'static [u8]],
    /// The largest input worth trying (bigger ones only cost time).
    pub max_len: usize,
    /// Mutated inputs per `cargo test` run: a few seconds each on a 2-core machine.
    pub ci_execs: usize,
}

/// Every target.
pub const TARGETS: &[Target] = targets::ALL;

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
