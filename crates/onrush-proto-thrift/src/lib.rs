//! Apache Thrift as a protocol of onrush's engine: one call per `thrift:` step, typed against
//! the plan's IDL when the plan loads (`onrush-plan`, with `onrush-thrift`'s reader and codec).
//!
//! ```yaml
//! thrift: { idl: [calculator.thrift] }
//! scenarios:
//!   - name: s
//!     steps:
//!       - { thrift: 127.0.0.1:9090, call: Calculator.add, args: { num1: 1, num2: "${n}" },
//!           check: [ { json: "$", equals: 3 } ] }
//!       - { thrift: "tls://localhost:9443", call: Calculator.ping }   # TLS with http.tls
//! ```
//!
//! - `plan.rs` resolves each step's `host:port` once and what it needs per call;
//! - `session.rs` is a VU's session: a connection per target kept per the connection scope,
//!   the call encoded into a reused buffer, the reply framed, decoded and classified;
//! - the connection is TCP's (`onrush_proto_tcp::stream`): plain, or TLS for a `tls://`
//!   target (as Apache Thrift's TSSLSocket), with the scenario's `http.tls`.

pub mod classes;
mod grammar;
mod grammar_args;
mod plan;
mod session;

use std::net::SocketAddr;

use onrush_plan::Plan;

pub use grammar::{IdlSection, ThriftGrammar, ThriftSpec};
pub use plan::{ThriftPlan, ThriftStep};
pub use session::ThriftSession;

/// Apache Thrift as a protocol of the engine.
pub struct Thrift;

impl onrush_protocol::Protocol for Thrift {
    type Plan = ThriftPlan;
    type Step = ThriftStep;
    /// Sessions share nothing between VUs.
    type Worker = ();
    type Session = ThriftSession;

    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        classes::register();
        grammars.add_section(std::sync::Arc::new(IdlSection))?;
        grammars.add(std::sync::Arc::new(ThriftGrammar))
    }

    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<ThriftPlan> {
        Ok(ThriftPlan::new(plan, builtin))
    }

    fn compile(
        state: &mut ThriftPlan,
        plan: &Plan,
        scenario: usize,
        step: &onrush_plan::Step,
    ) -> anyhow::Result<Option<ThriftStep>> {
        match step {
            onrush_plan::Step::Custom(step) => match step.spec::<ThriftSpec>() {
                Some(spec) => state.compile(plan, scenario, step, spec).map(Some),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn targets(state: &ThriftPlan) -> Vec<SocketAddr> {
        state.addresses()
    }

    fn worker(_state: &ThriftPlan, _scenario: usize) {}

    fn session(
        state: &std::sync::Arc<ThriftPlan>,
        scenario: usize,
        vu: u64,
        _worker: &(),
    ) -> ThriftSession {
        ThriftSession::new(state, scenario, vu)
    }
}
