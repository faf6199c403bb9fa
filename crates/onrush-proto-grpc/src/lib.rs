//! gRPC as a protocol of onrush's engine: unary, server-streaming, client-streaming and
//! bidirectional calls over onrush's own HTTP/2 client (h2c, or TLS with ALPN `h2` and
//! `http.tls`), their messages built from the plan's `.proto` files (compiled when the plan
//! loads by onrush-plan, with protox: no protoc, no generated code).
//!
//! ```yaml
//! grpc: { protos: [protos/greeter.proto] }
//! scenarios:
//!   - name: s
//!     load: { vus: 2, iterations: 10 }
//!     steps:
//!       - grpc: 127.0.0.1:50051            # grpcs://HOST:PORT for TLS
//!         call: helloworld.Greeter/SayHello
//!         message: { name: "user-${vu}" }
//!         metadata: { authorization: "Bearer ${token}" }
//!         timeout: 2s                      # grpc-timeout, and the local deadline
//!         check: [ { jsonpath: "$.message", equals: "Hello user-${vu}" } ]
//! ```
//!
//! - `plan.rs`: targets resolved once, the scenario's TLS client, each step's fixed headers;
//! - `message.rs`: a request message built per call from its typed template;
//! - `codec.rs`: the 5-byte message prefix (compressed flag, length), gzip, `grpc-status`;
//! - `session.rs`: the VU's connection (per VU, iteration, request, or the worker's shared
//!   one: HTTP/2 streams), the call, and its outcome as a failure class naming the gRPC code.
//!
//! The response is shown to extractors and checks as JSON (the protobuf JSON mapping): the
//! message of a unary or client-streaming call, an array of all messages of a server stream;
//! the head and trailers (with `grpc-status`) are the headers, and `onrush-grpc-messages` is
//! the number of messages received.

mod codec;
mod message;
mod plan;
mod session;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use onrush_plan::Plan;

pub use codec::{encode, Deframer, FrameError};
pub use plan::{GrpcPlan, GrpcStep};
pub use session::{GrpcSession, SharedConns, SharedSlot};

/// gRPC as a protocol of the engine.
pub struct Grpc;

impl onrush_protocol::Protocol for Grpc {
    type Plan = GrpcPlan;
    type Step = GrpcStep;
    /// The worker's shared connections (`connections: shared`), one per target.
    type Worker = SharedConns;
    type Session = GrpcSession;

    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<GrpcPlan> {
        Ok(GrpcPlan::new(plan, builtin))
    }

    fn compile(
        state: &mut GrpcPlan,
        plan: &Plan,
        scenario: usize,
        step: &onrush_plan::Step,
    ) -> anyhow::Result<Option<GrpcStep>> {
        match step {
            onrush_plan::Step::Grpc(g) => state.compile(plan, scenario, g).map(Some),
            _ => Ok(None),
        }
    }

    fn targets(state: &GrpcPlan) -> Vec<SocketAddr> {
        state.targets.addresses()
    }

    fn worker(_state: &GrpcPlan, _scenario: usize) -> SharedConns {
        Rc::new(RefCell::new(Vec::new()))
    }

    fn session(
        state: &Arc<GrpcPlan>,
        scenario: usize,
        vu: u64,
        worker: &SharedConns,
    ) -> GrpcSession {
        GrpcSession::new(state, scenario, vu, worker)
    }
}
