//! gRPC as a protocol of onrush's engine: unary, server-streaming, client-streaming and
//! bidirectional calls over onrush's own HTTP/2 client (h2c, or TLS with ALPN `h2` and
//! `http.tls`), their messages built from the plan's `.proto` files (compiled when the plan
//! loads, with protox: no protoc, no generated code).
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
//! - `section.rs`: the plan's top-level `grpc:` (its `.proto` files compiled, or a server's
//!   reflection fetched) when the plan loads; `grammar.rs`: a `grpc:` step checked against those
//!   descriptors into a `GrpcSpec` (`spec.rs`), its messages as typed templates;
//! - `plan.rs`: targets resolved once, the scenario's TLS client, each step's fixed headers;
//! - `message.rs`: a request message built per call from its typed template;
//! - `codec.rs`: the 5-byte message prefix (compressed flag, length), gzip, `grpc-status`;
//! - `session.rs`: the VU's connection (per VU, iteration, request, or a stream on one of the
//!   worker's pooled ones), the call, and its outcome as a failure class naming the gRPC code.
//!
//! Connections: `http.connections: shared` pools HTTP/2 connections per worker thread and
//! target as HTTP/2 requests do (onrush-proto-http's `ConnectionPool`): a call takes a stream
//! on the first connection with fewer than `http.max_streams` calls in flight, or opens the
//! next one. So `connections: shared, max_streams: 10` with 50 VUs on one worker is ghz's
//! `--connections 5 -c 50`: 5 connections of 10 concurrent calls.
//!
//! Descriptors may come from the server instead of `.proto` files: `grpc: { reflection:
//! HOST:PORT }` (`reflection.rs`: the standard reflection protocol, v1 else v1alpha, once
//! when the plan loads, by `section.rs`).
//!
//! The response is shown to extractors and checks as JSON (the protobuf JSON mapping): the
//! message of a unary or client-streaming call, an array of all messages of a server stream;
//! the head and trailers (with `grpc-status`) are the headers, and `onrush-grpc-messages` is
//! the number of messages received.

pub mod classes;
mod codec;
mod grammar;
mod message;
mod plan;
pub mod reflection;
mod section;
mod session;
pub mod spec;

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use onrush_plan::Plan;
use onrush_proto_http::ConnectionPool;

pub use codec::{encode, Deframer, FrameError};
pub use grammar::GrpcGrammar;
pub use plan::{GrpcPlan, GrpcStep};
pub use section::{Descriptors, ProtoSection};
pub use session::GrpcSession;
pub use spec::GrpcSpec;

/// gRPC as a protocol of the engine.
pub struct Grpc;

impl onrush_protocol::Protocol for Grpc {
    type Plan = GrpcPlan;
    type Step = GrpcStep;
    /// The worker's pool of HTTP/2 connections per target (`connections: shared`): each
    /// carries up to `http.max_streams` calls at once, another is opened when all are full.
    type Worker = Rc<ConnectionPool>;
    type Session = GrpcSession;

    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        classes::registered();
        grammars.add_section(Arc::new(ProtoSection))?;
        grammars.add(Arc::new(GrpcGrammar))
    }

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
            onrush_plan::Step::Custom(step) => match step.spec::<GrpcSpec>() {
                Some(spec) => state.compile(plan, scenario, step, spec).map(Some),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn targets(state: &GrpcPlan) -> Vec<SocketAddr> {
        state.targets.addresses()
    }

    fn worker(state: &GrpcPlan, scenario: usize) -> Rc<ConnectionPool> {
        Rc::new(ConnectionPool::new(
            state.targets.len(),
            state.max_streams[scenario],
        ))
    }

    fn session(
        state: &Arc<GrpcPlan>,
        scenario: usize,
        vu: u64,
        worker: &Rc<ConnectionPool>,
    ) -> GrpcSession {
        GrpcSession::new(state, scenario, vu, worker)
    }
}
