//! The engine: runs a prepared plan on one worker thread per core.
//!
//! Each worker owns a `current_thread` runtime, its share of every scenario's VUs, their
//! connections and its [`WorkerMetrics`]; nothing is locked or sent between threads per request.
//! Once a second each worker hands a snapshot to the collector running on the calling thread.

pub(crate) mod checks;
mod pacer;
mod prepare;
mod program;
mod run;
pub mod schedule;
mod vu;
mod worker;

pub use prepare::prepare;
pub(crate) use prepare::ScenarioRun;
pub use run::{run, RunOptions};
