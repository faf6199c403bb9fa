//! The seam between the engine and the wire.
//!
//! The engine, the metrics and the reports only know what [`Client`] exposes: a step is executed
//! and yields one [`Exchange`] (timings, bytes, outcome). A new protocol (raw TCP, WebSocket,
//! gRPC, ...) is a new implementation of this trait; nothing else changes.

pub mod connect;
pub mod http;
pub mod pool;

use std::time::Instant;

use onrush_metrics::RequestRecord;
use onrush_plan::RenderContext;

/// The result of executing one request step.
pub struct Exchange {
    pub record: RequestRecord,
    /// Whether this exchange opened a new connection (counted per scenario).
    pub opened_connection: bool,
}

/// One virtual user's protocol session: its connections and reusable buffers.
///
/// A session lives on one worker thread (it is never sent between threads), so the futures it
/// returns need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Client {
    /// The protocol-specific step this client executes.
    type Step;

    /// Executes one request. `intended_start` is when the request should have started (the
    /// open model's arrival time for the first request of an iteration): latency is measured
    /// from it so that a late start is never hidden (no coordinated omission).
    async fn execute(
        &mut self,
        step: &Self::Step,
        ctx: &RenderContext,
        intended_start: Instant,
    ) -> Exchange;

    /// Called when an iteration ends, so a session can drop what must not outlive it
    /// (`connections: per_iteration`).
    fn end_iteration(&mut self);
}
