//! WebSocket (RFC 6455, `ws://` and `wss://`) as a protocol of onrush's engine: a VU opens a
//! socket, sends text or binary messages (templated), receives until a message matches, a count
//! or a timeout, pings, and closes with a code; extractors and checks run on the last message
//! received. The socket stays open across the VU's other steps (HTTP, TCP, think times).
//!
//! ```yaml
//! steps:
//!   - { ws: connect, url: "ws://127.0.0.1:8765/chat?u=${vu}", subprotocols: [chat.v1] }
//!   - { ws: send, text: "echo ${iteration}", await: { match: "echo ([0-9]+)" },
//!       check: { body_contains: echo } }
//!   - { ws: receive, count: 3, timeout: 2s }
//!   - { ws: ping }
//!   - { ws: close, code: 1000 }
//! ```
//!
//! - `grammar.rs` reads a `ws:` step when the plan loads (`WsGrammar`, added by
//!   `Ws::register`): its action and that action's keys, into a `WsSpec`;
//! - `plan.rs` resolves each `ws: connect`'s host once, and builds the scenario's TLS client
//!   from `http.tls` for `wss://` (onrush-http's rustls configuration, as HTTP uses);
//! - `session.rs` is a VU's socket and the actions on it, with its reading policy (the socket
//!   is read only while a `ws:` step runs; see there);
//! - `socket.rs` is the WebSocket itself: the handshake, then messages in and out, over
//!   - `handshake.rs`, the upgrade request and the response's checks (sans I/O),
//!   - `frame.rs`, RFC 6455's framing (sans I/O),
//!   - `deflate.rs`, permessage-deflate (RFC 7692),
//!   - `transport.rs`, the TCP or TLS stream, counting the bytes.
//!
//! Metrics, per step: a connect's latency is the whole handshake (TCP, TLS, HTTP upgrade), its
//! `connect_us` the TCP part; a send with `await` measures the round trip from the send to the
//! awaited message; bytes in and out are wire bytes (frames and handshake included).
//! permessage-deflate is offered (`compression: none` on the connect step turns it off) and
//! used when the server accepts it: messages both ways are compressed, as a browser's are.

mod deflate;
mod frame;
mod grammar;
mod handshake;
mod plan;
mod session;
mod socket;
mod transport;

use std::net::SocketAddr;
use std::sync::Arc;

use onrush_plan::Plan;

pub use grammar::{WsAction, WsConnect, WsGrammar, WsPayload, WsSpec, WsUntil};
pub use plan::{WsPlan, WsStep};
pub use session::{WsSession, PENDING_MAX};

/// WebSocket as a protocol of the engine.
pub struct Ws;

impl onrush_protocol::Protocol for Ws {
    type Plan = WsPlan;
    type Step = WsStep;
    /// A socket belongs to one VU: nothing is shared between VUs.
    type Worker = ();
    type Session = WsSession;

    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        grammars.add(Arc::new(WsGrammar))
    }

    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<WsPlan> {
        Ok(WsPlan::new(plan, builtin))
    }

    fn compile(
        state: &mut WsPlan,
        plan: &Plan,
        scenario: usize,
        step: &onrush_plan::Step,
    ) -> anyhow::Result<Option<WsStep>> {
        match step {
            onrush_plan::Step::Custom(step) => match step.spec::<WsSpec>() {
                Some(spec) => state.compile(plan, scenario, step, spec).map(Some),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn targets(state: &WsPlan) -> Vec<SocketAddr> {
        state.addresses()
    }

    fn worker(_state: &WsPlan, _scenario: usize) {}

    fn session(state: &Arc<WsPlan>, scenario: usize, vu: u64, _worker: &()) -> WsSession {
        WsSession::new(state, scenario, vu)
    }
}
