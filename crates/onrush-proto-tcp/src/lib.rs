//! Raw TCP as a protocol of onrush's engine: connect, send bytes, read a reply up to a delimiter
//! or a byte count. The smallest protocol there is, and the walk-through of docs/protocols.md.
//!
//! ```yaml
//! steps:
//!   - { name: ping, tcp: 127.0.0.1:7000, send: "PING ${vu}\n", until: "\n",
//!       check: { body_contains: PONG } }
//!   - { name: secure, tcp: "tls://localhost:7443", send: "PING\n", until: "\n" }  # http.tls
//! ```
//!
//! - `plan.rs` resolves each step's `host:port` once, before the run;
//! - `session.rs` is a VU's session: one connection per target, kept per the scenario's
//!   connection scope, and the exchange itself;
//! - `stream.rs` is the connection, plain or TLS (onrush-http's, with `http.tls`), shared
//!   with Thrift;
//! - the engine does the rest (templates, extractors and checks on the reply, metrics).

mod grammar;
mod plan;
mod session;
pub mod stream;

use std::net::SocketAddr;

use onrush_plan::Plan;

pub use grammar::{LengthPrefix, TcpGrammar, TcpReply, TcpSpec};
pub use plan::{TcpPlan, TcpStep};
pub use session::TcpSession;

/// Raw TCP as a protocol of the engine.
pub struct Tcp;

impl onrush_protocol::Protocol for Tcp {
    type Plan = TcpPlan;
    type Step = TcpStep;
    /// TCP sessions share nothing between VUs.
    type Worker = ();
    type Session = TcpSession;

    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        grammars.add(std::sync::Arc::new(TcpGrammar))
    }

    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<TcpPlan> {
        Ok(TcpPlan::new(plan, builtin))
    }

    fn compile(
        state: &mut TcpPlan,
        plan: &Plan,
        scenario: usize,
        step: &onrush_plan::Step,
    ) -> anyhow::Result<Option<TcpStep>> {
        match step {
            onrush_plan::Step::Custom(step) => match step.spec::<TcpSpec>() {
                Some(spec) => state.compile(plan, scenario, step, spec).map(Some),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn targets(state: &TcpPlan) -> Vec<SocketAddr> {
        state.addresses()
    }

    fn worker(_state: &TcpPlan, _scenario: usize) {}

    fn session(
        state: &std::sync::Arc<TcpPlan>,
        scenario: usize,
        vu: u64,
        _worker: &(),
    ) -> TcpSession {
        TcpSession::new(state, scenario, vu)
    }
}
