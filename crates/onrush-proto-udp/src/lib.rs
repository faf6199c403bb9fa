//! UDP as a protocol of onrush's engine: send a datagram, optionally wait for one datagram in
//! reply. A reply that does not come within the step's timeout is its own failure class,
//! `no_reply`: on UDP a lost datagram is an expected event to count, not a stalled stream.
//!
//! ```yaml
//! steps:
//!   - { name: dns-ish, udp: 127.0.0.1:5353, send_hex: "AB CD 01 00", timeout: 500ms,
//!       check: { body_size: 12 } }
//! ```
//!
//! - `plan.rs` resolves each step's `host:port` once, before the run;
//! - `session.rs` is a VU's session: one connected socket per target, and the exchange.

mod plan;
mod session;

use std::net::SocketAddr;

use onrush_plan::Plan;

pub mod classes;
mod grammar;

pub use grammar::{UdpGrammar, UdpSpec};
pub use plan::{UdpPlan, UdpStep};
pub use session::UdpSession;

/// UDP as a protocol of the engine.
pub struct Udp;

impl onrush_protocol::Protocol for Udp {
    type Plan = UdpPlan;
    type Step = UdpStep;
    /// UDP sessions share nothing between VUs.
    type Worker = ();
    type Session = UdpSession;

    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        classes::no_reply();
        grammars.add(std::sync::Arc::new(UdpGrammar))
    }

    fn prepare(plan: &Plan, _builtin: Option<SocketAddr>) -> anyhow::Result<UdpPlan> {
        Ok(UdpPlan::new(plan))
    }

    fn compile(
        state: &mut UdpPlan,
        plan: &Plan,
        scenario: usize,
        step: &onrush_plan::Step,
    ) -> anyhow::Result<Option<UdpStep>> {
        match step {
            onrush_plan::Step::Custom(step) => match step.spec::<UdpSpec>() {
                Some(spec) => state.compile(plan, scenario, step, spec).map(Some),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn targets(state: &UdpPlan) -> Vec<SocketAddr> {
        state.addresses()
    }

    fn worker(_state: &UdpPlan, _scenario: usize) {}

    fn session(
        state: &std::sync::Arc<UdpPlan>,
        _scenario: usize,
        _vu: u64,
        _worker: &(),
    ) -> UdpSession {
        UdpSession::new(state)
    }
}
