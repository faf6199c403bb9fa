//! The engine: runs a prepared plan on one worker thread per core.
//!
//! Each worker owns a `current_thread` runtime, its share of every scenario's VUs, their
//! protocol sessions and its [`WorkerMetrics`](onrush_metrics::WorkerMetrics); nothing is locked
//! or sent between threads per request. Once a second each worker hands a snapshot to the
//! collector running on the calling thread.
//!
//! The engine is generic over the [`Protocol`](onrush_protocol::Protocol) it drives and names
//! no protocol's types: loops, groups, branches, think times, extractors, checks and
//! `on_failure` are the engine's; everything on the wire is the protocol's.
//!
//! ```no_run
//! # fn demo<P: onrush_protocol::Protocol>(plan: &onrush_plan::Plan) -> anyhow::Result<()> {
//! let prepared = onrush_engine::prepare::<P>(plan, None)?;
//! let outcome = onrush_engine::run(prepared, onrush_engine::RunOptions::quiet(1, &plan.name))?;
//! println!("{} requests", outcome.collector.summary().totals.requests);
//! # Ok(()) }
//! ```

pub(crate) mod checks;
mod debug;
pub mod erased;
mod failing;
pub mod finish;
pub mod monitor;
mod pacer;
mod prepare;
mod program;
mod run;
pub mod schedule;
pub mod signals;
mod start;
mod status;
pub mod steer;
mod vu;
mod worker;

pub use debug::{debug_exchanges, DEBUG_BODY_LIMIT};
pub use erased::{prepare_boxed, PrepareFn, PreparedRun};
pub use finish::{
    finish, write_results, FinishError, FinishOptions, Finished, WriteOptions, Written,
};
pub use prepare::{prepare, Prepared, ScenarioRun, Stops};
pub use run::{run, RunOptions, RunOutcome, Segment};
pub use steer::{RunState, SteerError, Steerable, Steering};

#[cfg(test)]
mod tests;
