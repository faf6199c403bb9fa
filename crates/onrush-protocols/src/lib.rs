//! The protocols this build of onrush speaks, as one [`Protocol`] for the engine.
//!
//! A scenario may mix protocols (log in over HTTP, then talk TCP with a token extracted from
//! the HTTP response): each step is compiled by its protocol, and each VU holds one session per
//! protocol it uses, created when its first step of that protocol runs. Dispatch is a `match`
//! on the step's variant, compiled into the engine (no allocation, no virtual call).
//!
//! Adding a protocol: its own crate implementing [`Protocol`], its step in the plan grammar
//! (onrush-plan), and one variant in each enum here.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use onrush_plan::{Plan, RenderContext, Step};
use onrush_proto_exec::Exec;
use onrush_proto_grpc::Grpc;
use onrush_proto_http::Http;
use onrush_proto_tcp::Tcp;
use onrush_proto_thrift::Thrift;
use onrush_proto_udp::Udp;
use onrush_proto_ws::Ws;
use onrush_protocol::compose::unique;
use onrush_protocol::{Exchange, Protocol, RequestStart, ResponseView, Session, StepSpec, Warmed};

mod sizes;
pub use sizes::session_sizes;

/// How many requests went over HTTP/3, and what `version: auto` did (for the run's summary).
pub use onrush_proto_http::{version_counts, VersionCounts};

/// Whether `target: builtin` starts the built-in server over TLS with HTTP/3 (a scenario with
/// `version: h3`).
pub use onrush_proto_http::builtin_speaks_h3;

/// The step grammars of every built-in protocol: what a plan that uses them is loaded with
/// (`onrush_plan::load_with_grammars`) outside the `onrush` binary, e.g. in tests.
pub fn grammars() -> &'static onrush_plan::Grammars {
    static GRAMMARS: std::sync::OnceLock<onrush_plan::Grammars> = std::sync::OnceLock::new();
    GRAMMARS.get_or_init(|| {
        let mut grammars = onrush_plan::Grammars::default();
        <Protocols as Protocol>::register(&mut grammars).expect("built-in grammars");
        grammars
    })
}

/// Every protocol of this build.
pub struct Protocols;

/// What each protocol resolved for the run.
///
/// Each is in its own `Arc` so that a VU's lazily created session can hold it; they are unique
/// while the plan is compiled.
pub struct PlanState {
    http: Arc<<Http as Protocol>::Plan>,
    tcp: Arc<<Tcp as Protocol>::Plan>,
    udp: Arc<<Udp as Protocol>::Plan>,
    ws: Arc<<Ws as Protocol>::Plan>,
    thrift: Arc<<Thrift as Protocol>::Plan>,
    grpc: Arc<<Grpc as Protocol>::Plan>,
    exec: Arc<<Exec as Protocol>::Plan>,
}

/// A compiled step of any protocol.
// Steps live boxed in the program (`Op::Request`), built once: their size costs nothing per request.
#[allow(clippy::large_enum_variant)]
pub enum AnyStep {
    Http(<Http as Protocol>::Step),
    Tcp(<Tcp as Protocol>::Step),
    Udp(<Udp as Protocol>::Step),
    Ws(<Ws as Protocol>::Step),
    Thrift(<Thrift as Protocol>::Step),
    Grpc(<Grpc as Protocol>::Step),
    Exec(<Exec as Protocol>::Step),
}

/// A worker's shared state (per scenario) of every protocol.
#[derive(Clone)]
pub struct Workers {
    http: <Http as Protocol>::Worker,
    tcp: <Tcp as Protocol>::Worker,
    udp: <Udp as Protocol>::Worker,
    ws: <Ws as Protocol>::Worker,
    thrift: <Thrift as Protocol>::Worker,
    grpc: <Grpc as Protocol>::Worker,
    exec: <Exec as Protocol>::Worker,
}

/// Which protocol's session answered last (its response is the one extractors see).
#[derive(Clone, Copy)]
enum Last {
    None,
    Http,
    Tcp,
    Udp,
    Ws,
    Thrift,
    Grpc,
    Exec,
}

/// A VU's sessions, one per protocol it has used.
///
/// Each session is boxed: a VU lives in its task, so an inline `Option` of every protocol's
/// session made every VU carry ~1.7 KiB of sessions it never uses (a VU pays now only for
/// the protocols its steps use; one allocation when its first step of one runs).
pub struct Sessions {
    plan: Arc<PlanState>,
    scenario: usize,
    vu: u64,
    workers: Workers,
    http: Option<Box<<Http as Protocol>::Session>>,
    tcp: Option<Box<<Tcp as Protocol>::Session>>,
    udp: Option<Box<<Udp as Protocol>::Session>>,
    ws: Option<Box<<Ws as Protocol>::Session>>,
    thrift: Option<Box<<Thrift as Protocol>::Session>>,
    grpc: Option<Box<<Grpc as Protocol>::Session>>,
    exec: Option<Box<<Exec as Protocol>::Session>>,
    last: Last,
    /// Some session made so far has iteration hooks ([`Session::iteration_hooks`]): until
    /// then, beginning and ending an iteration ask none of the seven.
    hooks: bool,
}

/// Calls `$method` on each of the VU's sessions made so far.
macro_rules! each_session {
    ($sessions:ident, $method:ident) => {
        if let Some(s) = &mut $sessions.http {
            s.$method();
        }
        if let Some(s) = &mut $sessions.tcp {
            s.$method();
        }
        if let Some(s) = &mut $sessions.ws {
            s.$method();
        }
        if let Some(s) = &mut $sessions.udp {
            s.$method();
        }
        if let Some(s) = &mut $sessions.thrift {
            s.$method();
        }
        if let Some(s) = &mut $sessions.grpc {
            s.$method();
        }
        if let Some(s) = &mut $sessions.exec {
            s.$method();
        }
    };
}

impl Sessions {
    #[inline(never)]
    fn begin_iteration_of_each(&mut self) {
        each_session!(self, begin_iteration);
    }

    #[inline(never)]
    fn end_iteration_of_each(&mut self) {
        each_session!(self, end_iteration);
    }
}

/// A protocol's session made for a VU, boxed; `hooks` notes whether it has iteration hooks.
fn made<S: Session>(hooks: &mut bool, session: S) -> Box<S> {
    *hooks |= session.iteration_hooks();
    Box::new(session)
}

impl StepSpec for AnyStep {
    #[inline]
    fn metric(&self) -> usize {
        match self {
            AnyStep::Http(s) => s.metric(),
            AnyStep::Tcp(s) => s.metric(),
            AnyStep::Udp(s) => s.metric(),
            AnyStep::Ws(s) => s.metric(),
            AnyStep::Thrift(s) => s.metric(),
            AnyStep::Grpc(s) => s.metric(),
            AnyStep::Exec(s) => s.metric(),
        }
    }

    #[inline]
    fn extract(&self) -> &[onrush_plan::Extract] {
        match self {
            AnyStep::Http(s) => s.extract(),
            AnyStep::Tcp(s) => s.extract(),
            AnyStep::Udp(s) => s.extract(),
            AnyStep::Ws(s) => s.extract(),
            AnyStep::Thrift(s) => s.extract(),
            AnyStep::Grpc(s) => s.extract(),
            AnyStep::Exec(s) => s.extract(),
        }
    }

    #[inline]
    fn checks(&self) -> &[onrush_plan::Check] {
        match self {
            AnyStep::Http(s) => s.checks(),
            AnyStep::Tcp(s) => s.checks(),
            AnyStep::Udp(s) => s.checks(),
            AnyStep::Ws(s) => s.checks(),
            AnyStep::Thrift(s) => s.checks(),
            AnyStep::Grpc(s) => s.checks(),
            AnyStep::Exec(s) => s.checks(),
        }
    }

    #[inline]
    fn on_failure(&self) -> onrush_plan::OnFailure {
        match self {
            AnyStep::Http(s) => s.on_failure(),
            AnyStep::Tcp(s) => s.on_failure(),
            AnyStep::Udp(s) => s.on_failure(),
            AnyStep::Ws(s) => s.on_failure(),
            AnyStep::Thrift(s) => s.on_failure(),
            AnyStep::Grpc(s) => s.on_failure(),
            AnyStep::Exec(s) => s.on_failure(),
        }
    }
}

impl Protocol for Protocols {
    type Plan = PlanState;
    type Step = AnyStep;
    type Worker = Workers;
    type Session = Sessions;

    /// onrush-plan holds the grammars of onrush's own steps: what they add is how loading a
    /// plan fetches a gRPC server's descriptors by reflection (onrush-plan does no I/O).
    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        Http::register(grammars)?;
        Tcp::register(grammars)?;
        Udp::register(grammars)?;
        Ws::register(grammars)?;
        Thrift::register(grammars)?;
        Grpc::register(grammars)?;
        Exec::register(grammars)
    }

    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<PlanState> {
        Ok(PlanState {
            http: Arc::new(Http::prepare(plan, builtin)?),
            tcp: Arc::new(Tcp::prepare(plan, builtin)?),
            udp: Arc::new(Udp::prepare(plan, builtin)?),
            ws: Arc::new(Ws::prepare(plan, builtin)?),
            thrift: Arc::new(Thrift::prepare(plan, builtin)?),
            grpc: Arc::new(Grpc::prepare(plan, builtin)?),
            exec: Arc::new(Exec::prepare(plan, builtin)?),
        })
    }

    fn compile(
        state: &mut PlanState,
        plan: &Plan,
        scenario: usize,
        step: &Step,
    ) -> anyhow::Result<Option<AnyStep>> {
        if let Some(s) = Http::compile(unique(&mut state.http), plan, scenario, step)? {
            return Ok(Some(AnyStep::Http(s)));
        }
        if let Some(s) = Tcp::compile(unique(&mut state.tcp), plan, scenario, step)? {
            return Ok(Some(AnyStep::Tcp(s)));
        }
        if let Some(s) = Udp::compile(unique(&mut state.udp), plan, scenario, step)? {
            return Ok(Some(AnyStep::Udp(s)));
        }
        if let Some(s) = Ws::compile(unique(&mut state.ws), plan, scenario, step)? {
            return Ok(Some(AnyStep::Ws(s)));
        }
        if let Some(s) = Thrift::compile(unique(&mut state.thrift), plan, scenario, step)? {
            return Ok(Some(AnyStep::Thrift(s)));
        }
        if let Some(s) = Grpc::compile(unique(&mut state.grpc), plan, scenario, step)? {
            return Ok(Some(AnyStep::Grpc(s)));
        }
        if let Some(s) = Exec::compile(unique(&mut state.exec), plan, scenario, step)? {
            return Ok(Some(AnyStep::Exec(s)));
        }
        Ok(None)
    }

    fn targets(state: &PlanState) -> Vec<SocketAddr> {
        let mut all = Http::targets(&state.http);
        all.extend(Tcp::targets(&state.tcp));
        all.extend(Udp::targets(&state.udp));
        all.extend(Ws::targets(&state.ws));
        all.extend(Thrift::targets(&state.thrift));
        all.extend(Grpc::targets(&state.grpc));
        all.extend(Exec::targets(&state.exec));
        all
    }

    fn worker(state: &PlanState, scenario: usize) -> Workers {
        Workers {
            http: Http::worker(&state.http, scenario),
            tcp: Tcp::worker(&state.tcp, scenario),
            udp: Udp::worker(&state.udp, scenario),
            ws: Ws::worker(&state.ws, scenario),
            thrift: Thrift::worker(&state.thrift, scenario),
            grpc: Grpc::worker(&state.grpc, scenario),
            exec: Exec::worker(&state.exec, scenario),
        }
    }

    fn session(state: &Arc<PlanState>, scenario: usize, vu: u64, worker: &Workers) -> Sessions {
        Sessions {
            plan: state.clone(),
            scenario,
            vu,
            workers: worker.clone(),
            http: None,
            tcp: None,
            udp: None,
            ws: None,
            thrift: None,
            grpc: None,
            exec: None,
            last: Last::None,
            hooks: false,
        }
    }
}

impl Session for Sessions {
    type Step = AnyStep;

    /// Returns the protocol session's own future (no extra state machine around it): the
    /// dispatch is one `match` here and one per poll in [`Either`].
    #[inline]
    fn execute(
        &mut self,
        step: &AnyStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> impl Future<Output = Exchange> {
        match step {
            AnyStep::Http(step) => {
                self.last = Last::Http;
                let session = self.http.get_or_insert_with(|| {
                    made(
                        &mut self.hooks,
                        Http::session(&self.plan.http, self.scenario, self.vu, &self.workers.http),
                    )
                });
                Either::Http {
                    future: session.execute(step, ctx, start),
                }
            }
            AnyStep::Tcp(step) => {
                self.last = Last::Tcp;
                let session = self.tcp.get_or_insert_with(|| {
                    made(
                        &mut self.hooks,
                        Tcp::session(&self.plan.tcp, self.scenario, self.vu, &self.workers.tcp),
                    )
                });
                Either::Tcp {
                    future: session.execute(step, ctx, start),
                }
            }
            AnyStep::Ws(step) => {
                self.last = Last::Ws;
                let session = self.ws.get_or_insert_with(|| {
                    made(
                        &mut self.hooks,
                        Ws::session(&self.plan.ws, self.scenario, self.vu, &self.workers.ws),
                    )
                });
                // The upgrade is an HTTP request: it carries the VU's cookies, kept by its
                // HTTP session (a browser's one jar), and stores those it is given.
                let cookies = self.http.as_deref_mut().and_then(|h| h.cookie_jar_mut());
                Either::Ws {
                    future: session.execute_with_cookies(step, ctx, start, cookies),
                }
            }
            AnyStep::Udp(step) => {
                self.last = Last::Udp;
                let session = self.udp.get_or_insert_with(|| {
                    made(
                        &mut self.hooks,
                        Udp::session(&self.plan.udp, self.scenario, self.vu, &self.workers.udp),
                    )
                });
                Either::Udp {
                    future: session.execute(step, ctx, start),
                }
            }
            AnyStep::Thrift(step) => {
                self.last = Last::Thrift;
                let session = self.thrift.get_or_insert_with(|| {
                    made(
                        &mut self.hooks,
                        Thrift::session(
                            &self.plan.thrift,
                            self.scenario,
                            self.vu,
                            &self.workers.thrift,
                        ),
                    )
                });
                Either::Thrift {
                    future: session.execute(step, ctx, start),
                }
            }
            AnyStep::Grpc(step) => {
                self.last = Last::Grpc;
                let session = self.grpc.get_or_insert_with(|| {
                    made(
                        &mut self.hooks,
                        Grpc::session(&self.plan.grpc, self.scenario, self.vu, &self.workers.grpc),
                    )
                });
                Either::Grpc {
                    future: session.execute(step, ctx, start),
                }
            }
            AnyStep::Exec(step) => {
                self.last = Last::Exec;
                let session = self.exec.get_or_insert_with(|| {
                    made(
                        &mut self.hooks,
                        Exec::session(&self.plan.exec, self.scenario, self.vu, &self.workers.exec),
                    )
                });
                Either::Exec {
                    future: session.execute(step, ctx, start),
                }
            }
        }
    }

    #[inline]
    fn response(&self) -> ResponseView<'_> {
        match self.last {
            Last::Http => self.http.as_ref().map(|s| s.response()),
            Last::Tcp => self.tcp.as_ref().map(|s| s.response()),
            Last::Udp => self.udp.as_ref().map(|s| s.response()),
            Last::Ws => self.ws.as_ref().map(|s| s.response()),
            Last::Thrift => self.thrift.as_ref().map(|s| s.response()),
            Last::Grpc => self.grpc.as_ref().map(|s| s.response()),
            Last::Exec => self.exec.as_ref().map(|s| s.response()),
            Last::None => None,
        }
        .unwrap_or_default()
    }

    fn request(&self) -> Option<onrush_protocol::RequestView<'_>> {
        match self.last {
            Last::Http => self.http.as_ref().and_then(|s| s.request()),
            Last::Grpc => self.grpc.as_ref().and_then(|s| s.request()),
            _ => None,
        }
    }

    #[inline]
    fn take_unset(&mut self) -> Option<usize> {
        match self.last {
            Last::Http => self.http.as_mut().and_then(|s| s.take_unset()),
            Last::Tcp => self.tcp.as_mut().and_then(|s| s.take_unset()),
            Last::Udp => self.udp.as_mut().and_then(|s| s.take_unset()),
            Last::Ws => self.ws.as_mut().and_then(|s| s.take_unset()),
            Last::Thrift => self.thrift.as_mut().and_then(|s| s.take_unset()),
            Last::Grpc => self.grpc.as_mut().and_then(|s| s.take_unset()),
            Last::Exec => self.exec.as_mut().and_then(|s| s.take_unset()),
            Last::None => None,
        }
    }

    #[inline]
    fn begin_iteration(&mut self) {
        // The check inline, the calls out of line: a function that saved its registers before
        // the check cost ~17 instructions an iteration for nothing.
        if self.hooks {
            self.begin_iteration_of_each();
        }
    }

    /// Cold (before the run): the session of the step's protocol is created here, as a
    /// step's first execution would.
    async fn warm_up(&mut self, step: &AnyStep) -> Warmed {
        let (plan, scenario, vu, workers) = (&self.plan, self.scenario, self.vu, &self.workers);
        match step {
            AnyStep::Http(step) => {
                self.http
                    .get_or_insert_with(|| {
                        made(
                            &mut self.hooks,
                            Http::session(&plan.http, scenario, vu, &workers.http),
                        )
                    })
                    .warm_up(step)
                    .await
            }
            AnyStep::Tcp(step) => {
                self.tcp
                    .get_or_insert_with(|| {
                        made(
                            &mut self.hooks,
                            Tcp::session(&plan.tcp, scenario, vu, &workers.tcp),
                        )
                    })
                    .warm_up(step)
                    .await
            }
            AnyStep::Udp(step) => {
                self.udp
                    .get_or_insert_with(|| {
                        made(
                            &mut self.hooks,
                            Udp::session(&plan.udp, scenario, vu, &workers.udp),
                        )
                    })
                    .warm_up(step)
                    .await
            }
            AnyStep::Ws(step) => {
                self.ws
                    .get_or_insert_with(|| {
                        made(
                            &mut self.hooks,
                            Ws::session(&plan.ws, scenario, vu, &workers.ws),
                        )
                    })
                    .warm_up(step)
                    .await
            }
            AnyStep::Thrift(step) => {
                self.thrift
                    .get_or_insert_with(|| {
                        made(
                            &mut self.hooks,
                            Thrift::session(&plan.thrift, scenario, vu, &workers.thrift),
                        )
                    })
                    .warm_up(step)
                    .await
            }
            AnyStep::Grpc(step) => {
                self.grpc
                    .get_or_insert_with(|| {
                        made(
                            &mut self.hooks,
                            Grpc::session(&plan.grpc, scenario, vu, &workers.grpc),
                        )
                    })
                    .warm_up(step)
                    .await
            }
            AnyStep::Exec(step) => {
                self.exec
                    .get_or_insert_with(|| {
                        made(
                            &mut self.hooks,
                            Exec::session(&plan.exec, scenario, vu, &workers.exec),
                        )
                    })
                    .warm_up(step)
                    .await
            }
        }
    }

    #[inline]
    fn end_iteration(&mut self) {
        // As in `begin_iteration`.
        if self.hooks {
            self.end_iteration_of_each();
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of whichever protocol's session executes a step.
    #[project = EitherProjection]
    pub enum Either<H, T, U, W, R, G, E> {
        Http { #[pin] future: H },
        Tcp { #[pin] future: T },
        Udp { #[pin] future: U },
        Ws { #[pin] future: W },
        Thrift { #[pin] future: R },
        Grpc { #[pin] future: G },
        Exec { #[pin] future: E },
    }
}

impl<H, T, U, W, R, G, E> Future for Either<H, T, U, W, R, G, E>
where
    H: Future<Output = Exchange>,
    T: Future<Output = Exchange>,
    U: Future<Output = Exchange>,
    W: Future<Output = Exchange>,
    R: Future<Output = Exchange>,
    G: Future<Output = Exchange>,
    E: Future<Output = Exchange>,
{
    type Output = Exchange;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Exchange> {
        match self.project() {
            EitherProjection::Http { future } => future.poll(cx),
            EitherProjection::Tcp { future } => future.poll(cx),
            EitherProjection::Udp { future } => future.poll(cx),
            EitherProjection::Ws { future } => future.poll(cx),
            EitherProjection::Thrift { future } => future.poll(cx),
            EitherProjection::Grpc { future } => future.poll(cx),
            EitherProjection::Exec { future } => future.poll(cx),
        }
    }
}
