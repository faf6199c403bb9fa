//! The seam between the engine and the wire: the contract every protocol implements.
//!
//! The engine (`onrush-engine`) runs a scenario's program — loops, groups, branches, think
//! times, extractors, checks, `on_failure` — and records metrics. It knows nothing of HTTP, TCP
//! or any other protocol: it only speaks the traits of this crate.
//!
//! - A [`Protocol`] compiles the request steps of a plan once, before the run ([`Protocol::prepare`]
//!   and [`Protocol::compile`]), and gives every virtual user its [`Session`].
//! - A [`Session`] executes one step and yields one [`Exchange`] (timings, bytes, status,
//!   failure class); it shows what it kept of the response as a [`ResponseView`], on which the
//!   engine runs the step's extractors and checks.
//! - A compiled step says what the engine needs to know of it through [`StepSpec`]: its metric,
//!   its extractors and checks, and its `on_failure`.
//!
//! Sessions live on one worker thread and are never sent between threads: their futures need
//! not be `Send`. The engine is generic over the protocol, so a call through the seam costs a
//! static call, not an allocation or a virtual call (the hot path stays as cheap as before the
//! seam existed). docs/protocols.md walks through implementing one.

use std::net::SocketAddr;
use std::ops::Range;
use std::time::Duration;

pub use onrush_clock::Moment;

pub use onrush_metrics::{failure_examples, FailureClass, Handshake, RequestRecord};

pub mod compose;
pub mod debug;
mod io_class;
mod targets;
pub mod timer;
pub mod turn;
pub use compose::With;
pub use debug::RequestView;
pub use io_class::{connect_failure, io_failure};
use onrush_plan::{Check, Extract, OnFailure, Plan, RenderContext, Step};
pub use targets::{resolve_host, Target, Targets, BUILTIN_HOST};
pub use timer::{within, RequestTimer};

/// When a request starts, as the engine hands it to [`Session::execute`].
#[derive(Debug, Clone, Copy)]
pub struct RequestStart {
    /// What the latency counts from: the open model's scheduled arrival for the first request
    /// of an iteration, else the moment the VU reached the request.
    pub intended: Moment,
    /// `intended` is a clock reading taken as the VU reached the request (the closed model, or
    /// a request after the first of an iteration): the session's own start is then that same
    /// instant, and [`begin`](Self::begin) does not read the clock again.
    read_now: bool,
}

impl RequestStart {
    /// A request that should have started at `intended` (a scheduled arrival).
    #[inline]
    pub fn scheduled(intended: Moment) -> Self {
        RequestStart {
            intended,
            read_now: false,
        }
    }

    /// A request starting now: `now` was just read from the clock by the VU.
    #[inline]
    pub fn now(now: Moment) -> Self {
        RequestStart {
            intended: now,
            read_now: true,
        }
    }

    /// The start of the service time: the clock read here for a scheduled request, the VU's own
    /// reading otherwise (one clock read per request less; issue 17). In the closed model the
    /// service time and the latency are then the same figure, to the nanosecond: the engine's
    /// work between the VU's reading and the session (a few hundred nanoseconds) counts in both.
    #[inline]
    pub fn begin(&self) -> Moment {
        if self.read_now {
            self.intended
        } else {
            Moment::now()
        }
    }
}

/// The result of executing one request step.
pub struct Exchange {
    pub record: RequestRecord,
    /// Whether this exchange opened a new connection (counted per scenario).
    pub opened_connection: bool,
    /// A response (or reply) was received, so extractors and checks run on it.
    pub responded: bool,
}

impl Exchange {
    /// An exchange that has not started: no response, no failure yet, all figures zero.
    #[inline]
    pub fn empty() -> Self {
        Exchange {
            record: RequestRecord {
                latency_us: 0,
                service_us: 0,
                connect_us: None,
                ttfb_us: None,
                bytes_in: 0,
                bytes_out: 0,
                status: 0,
                failure: None,
                handshake: None,
            },
            opened_connection: false,
            responded: false,
        }
    }

    /// Sets the service time (from `started`) and the latency (from `intended_start`, never
    /// less than the service time): the open model's latency counts from the scheduled arrival.
    #[inline]
    pub fn finish(&mut self, started: Moment, intended_start: Moment) {
        self.finish_at(Moment::now(), started, intended_start);
    }

    /// [`Exchange::finish`] with the end already timed: a protocol that read the clock when
    /// the response's last byte arrived passes that reading (one clock read less).
    #[inline]
    pub fn finish_at(&mut self, finished: Moment, started: Moment, intended_start: Moment) {
        self.record.service_us = finished.micros_since(started);
        self.record.latency_us = finished
            .micros_since(intended_start)
            .max(self.record.service_us);
    }
}

/// What a session kept of the last response, for extractors and checks.
///
/// Protocols without some part leave it empty: a TCP reply has a body and no headers; its
/// `status` is 0.
#[derive(Default)]
pub struct ResponseView<'a> {
    pub status: u16,
    /// The response's head: `(name, value)` ranges into `head`; names lower case.
    pub head: &'a [u8],
    pub headers: &'a [(Range<usize>, Range<usize>)],
    /// The (decoded) body, up to the step's body limit.
    pub body: &'a [u8],
    /// Decoded body bytes in all (also beyond the limit).
    pub body_size: u64,
    /// Hex digest of the whole decoded body, when a hash check asked for one.
    pub body_hash: Option<&'a str>,
    /// What was addressed: an HTTP request's path and query (after redirects), a TCP target.
    pub url: &'a [u8],
}

impl ResponseView<'_> {
    /// Values of the headers called `name` (lower case), in order.
    pub fn header<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s [u8]> + 's {
        self.headers
            .iter()
            .filter(move |(n, _)| self.head[n.clone()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &self.head[v.clone()])
    }
}

/// What the engine needs to know of a compiled step of any protocol.
pub trait StepSpec {
    /// Index into the scenario's metrics ([`onrush_plan::Scenario::metrics`]).
    fn metric(&self) -> usize;
    /// `extract:`: variables set from the response, in plan order.
    fn extract(&self) -> &[Extract];
    /// `check:`: response checks, in plan order.
    fn checks(&self) -> &[Check];
    /// What the VU does when the step fails.
    fn on_failure(&self) -> OnFailure;
}

/// One virtual user's session of a protocol: its connections and reusable buffers.
#[allow(async_fn_in_trait)]
pub trait Session {
    /// The compiled step this session executes.
    type Step;

    /// Executes one request. `start.intended` is when the request should have started (the
    /// open model's arrival time for the first request of an iteration): latency is measured
    /// from it so that a late start is never hidden (no coordinated omission). The service
    /// time runs from [`RequestStart::begin`].
    async fn execute(
        &mut self,
        step: &Self::Step,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange;

    /// What was kept of the last response (only what the step's extractors and checks need).
    fn response(&self) -> ResponseView<'_>;

    /// What the last request sent, when the session was made with [`debug::on`] and can say
    /// (`--debug`); `None` otherwise: only the response is shown.
    fn request(&self) -> Option<RequestView<'_>> {
        None
    }

    /// The runtime variable (slot) that made the last request fail to render, if any: the
    /// engine warns once per variable.
    fn take_unset(&mut self) -> Option<usize> {
        None
    }

    /// Called when an iteration starts (e.g. `cookies: per_iteration` empties the jar).
    fn begin_iteration(&mut self) {}

    /// Whether [`begin_iteration`](Self::begin_iteration) or
    /// [`end_iteration`](Self::end_iteration) can do anything for this session, as configured
    /// when it was made. A session that says `false` may not be called for them: a VU of a
    /// plan of several protocols asks each of its sessions otherwise, every iteration.
    fn iteration_hooks(&self) -> bool {
        true
    }

    /// Called when an iteration ends, so a session can drop what must not outlive it
    /// (`connections: per_iteration`).
    fn end_iteration(&mut self) {}

    /// Opens ahead of the load what executing `step` would open first and keep (an HTTP
    /// keep-alive connection), sending no request. The engine calls it for an open-model
    /// scenario's pre-allocated VUs (`load.warm_up`) with the scenario's first request step,
    /// before the run's clock starts: the first arrivals then find their VUs connected. The
    /// default opens nothing, for protocols with nothing worth opening ahead, or whose
    /// opening is part of what a step measures.
    async fn warm_up(&mut self, step: &Self::Step) -> Warmed {
        let _ = step;
        Warmed::Nothing
    }
}

/// What [`Session::warm_up`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmed {
    /// Nothing to open (or already open).
    Nothing,
    /// A connection was opened (the engine counts it in the scenario's connections opened).
    Opened,
    /// Opening failed (the target refuses, or is slow): the engine warms up no further VU of
    /// the scenario, and the run's requests will meet and report the failure themselves.
    Failed,
}

/// A protocol as the engine sees it: compiled once per run, a session per virtual user.
///
/// `Plan` is what the protocol resolves once for the whole run (targets, TLS configurations),
/// shared read-only by every worker. `Worker` is what one worker thread keeps per scenario
/// and shares between its VUs (a connection pool): thread-local, never locked.
pub trait Protocol: 'static {
    type Plan: Send + Sync + 'static;
    type Step: StepSpec + Send + Sync + 'static;
    type Worker: Clone + 'static;
    type Session: Session<Step = Self::Step> + 'static;

    /// What the protocol adds to a binary before any plan is read: the grammar of its steps
    /// when onrush-plan does not hold it (a protocol onrush does not ship), and its own
    /// failure classes ([`FailureClass::register`]), so that `validate`, the summary and the
    /// report know them. onrush's built-in protocols add nothing.
    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        let _ = grammars;
        Ok(())
    }

    /// Prepares the protocol's part of `plan` before any step is compiled. `builtin` is the
    /// address of the built-in target server when the plan's target is `builtin`.
    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<Self::Plan>;

    /// Compiles a request step of scenario `scenario`. Control-flow steps (loops, groups,
    /// branches, think times) are the engine's and never reach this; `None` means the step
    /// belongs to no protocol known here (an error the engine reports).
    fn compile(
        state: &mut Self::Plan,
        plan: &Plan,
        scenario: usize,
        step: &Step,
    ) -> anyhow::Result<Option<Self::Step>>;

    /// The addresses the plan talks to (for the generator's own socket accounting).
    fn targets(state: &Self::Plan) -> Vec<SocketAddr>;

    /// A worker's shared state for `scenario` (created once per worker and scenario).
    fn worker(state: &Self::Plan, scenario: usize) -> Self::Worker;

    /// The session of VU `vu` (1-based) of `scenario`.
    fn session(
        state: &std::sync::Arc<Self::Plan>,
        scenario: usize,
        vu: u64,
        worker: &Self::Worker,
    ) -> Self::Session;
}

/// Microseconds of `d`, saturating.
#[inline]
pub fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}
