//! The crate's integration tests (one binary). The end-to-end runs of a controller and its
//! agents, as processes, are in the onrush crate's suite (`distributed.rs`).
