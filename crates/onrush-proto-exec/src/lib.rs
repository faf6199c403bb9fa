//! A local command as a protocol of onrush's engine — for preparing files during a test and
//! calling tools such as `wget`, as JMeter's OS Process Sampler does.
//!
//! ```yaml
//! steps:
//!   - { name: fetch, exec: [wget, -q, -O, "/tmp/page-${vu}.html", "http://127.0.0.1:8080/"],
//!       timeout: 5s }
//!   - { name: count, shell: "wc -c < /tmp/page-${vu}.html", extract: { size: { regex: "(\\d+)" } } }
//! ```
//!
//! The command's exit code is the step's status (a code not in `expect_exit` is
//! `unexpected_status`; killed by signal N it is 128+N, as shells say), its stdout the body and
//! its stderr the `stderr` header for extractors and checks, each kept up to `max_output`.
//! A command still running at the step's timeout has its process group killed (`timeout`).
//!
//! - `plan.rs` resolves each step once, before the run;
//! - `session.rs` is a VU's session: spawn, feed, capture, wait, all as futures of the
//!   worker's current-thread runtime (a waiting VU never blocks the other VUs of its worker);
//! - `capture.rs` reads a pipe keeping at most a limit and counting the rest.

mod capture;
mod grammar;
mod plan;
mod session;

use std::net::SocketAddr;

use onrush_plan::Plan;

pub use grammar::{ExecGrammar, ExecSpec};
pub use plan::{ExecPlan, ExecStep};
pub use session::ExecSession;

/// Local commands as a protocol of the engine.
pub struct Exec;

impl onrush_protocol::Protocol for Exec {
    type Plan = ExecPlan;
    type Step = ExecStep;
    /// Commands share nothing between VUs.
    type Worker = ();
    type Session = ExecSession;

    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        grammars.add(std::sync::Arc::new(ExecGrammar))
    }

    fn prepare(plan: &Plan, _builtin: Option<SocketAddr>) -> anyhow::Result<ExecPlan> {
        Ok(ExecPlan::new(plan))
    }

    fn compile(
        state: &mut ExecPlan,
        _plan: &Plan,
        scenario: usize,
        step: &onrush_plan::Step,
    ) -> anyhow::Result<Option<ExecStep>> {
        match step {
            onrush_plan::Step::Custom(step) => Ok(step
                .spec::<ExecSpec>()
                .map(|spec| state.compile(scenario, step, spec))),
            _ => Ok(None),
        }
    }

    /// A command talks to no network target of its own.
    fn targets(_state: &ExecPlan) -> Vec<SocketAddr> {
        Vec::new()
    }

    fn worker(_state: &ExecPlan, _scenario: usize) {}

    fn session(
        _state: &std::sync::Arc<ExecPlan>,
        _scenario: usize,
        _vu: u64,
        _worker: &(),
    ) -> ExecSession {
        ExecSession::default()
    }
}
