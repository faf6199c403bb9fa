//! HTTP/1.1 and HTTP/2 (plain, TLS, mutual TLS) behind onrush's protocol seam
//! ([`onrush_protocol::Protocol`]).
//!
//! The wire is onrush-http1's and onrush-http2's; this crate is what a load test adds on top:
//!
//! | file | job |
//! |---|---|
//! | `grammar.rs` | how a request step is written in a plan (`- { post: /orders, body: ... }`): its keys, errors and hints; bodies and `auth` in `grammar_body.rs`, its JSON Schema in `schema.rs` |
//! | `request.rs` | the request step as the plan wrote it ([`HttpRequest`]) and as a session runs it ([`RequestStep`]) |
//! | `plan.rs` | what is resolved once per run: targets, each scenario's `http:` settings and TLS client |
//! | `target.rs` | a target (address, `Host`, TLS name) and the plan's list of them |
//! | `step.rs` | a request step compiled once (constant headers preformatted, a request that never changes encoded, what to keep decided) |
//! | `render.rs` | a step's templates rendered into reused buffers (target, headers, body) |
//! | `session.rs` | a VU's session: rendering, connections per scope, cookies, redirects, the exchange |
//! | `capture.rs` | what is kept of a response while it streams in (head, body up to a limit, digest) |
//! | `connect.rs` | opening a connection: HTTP/1.1, HTTP/2 or HTTP/3, plain or TLS, ALPN |
//! | `alt_svc.rs` | `version: auto`'s upgrade to HTTP/3 on `Alt-Svc`, and the per-version counts |
//! | `deadline.rs` | a request's timeout, one timer per session left armed between requests |
//! | `pool.rs` | `connections: shared`: a worker's pool per scenario and target |
//! | `redirect.rs` | following same-origin redirects |
//! | `classify.rs` | failure classes from statuses and client errors |

mod alt_svc;
mod before;
mod capture;
mod classify;
mod connect;
mod grammar;
mod grammar_body;
mod plan;
mod pool;
mod redirect;
mod render;
mod request;
mod schema;
mod session;
mod step;
mod target;
mod tls_stream;

use std::net::SocketAddr;
use std::rc::Rc;

use onrush_plan::Plan;

pub use alt_svc::{counts as version_counts, VersionCounts};
pub use classify::classify;
pub use connect::alpn_for;
pub use grammar::HttpGrammar;
pub use onrush_http1::cookies::CookieJar;
pub use plan::{builtin_speaks_h3, session_mode, tls_options, HttpPlan, ScenarioHttp};
pub use pool::{ConnectionPool, Lease};
pub use request::{Body, HttpRequest, MultipartField, RequestStep};
pub use session::HttpSession;
pub use step::HttpStep;
pub use target::{HttpTarget, Targets};
pub use tls_stream::connect_tls;

/// HTTP as a protocol of the engine.
pub struct Http;

impl Http {
    /// Compiles an HTTP request step (for a registry of protocols that has matched the plan's
    /// step itself).
    pub fn compile_request(
        state: &mut HttpPlan,
        plan: &Plan,
        scenario: usize,
        request: &RequestStep,
    ) -> anyhow::Result<HttpStep> {
        state.compile(plan, scenario, request)
    }
}

impl onrush_protocol::Protocol for Http {
    type Plan = HttpPlan;
    type Step = HttpStep;
    type Worker = Rc<ConnectionPool>;
    type Session = HttpSession;

    fn register(grammars: &mut onrush_plan::Grammars) -> Result<(), String> {
        // QUIC's classes (onrush-http3's), so that results naming them read back.
        onrush_http3::classes::registered();
        grammars.add(std::sync::Arc::new(HttpGrammar))
    }

    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<HttpPlan> {
        HttpPlan::new(plan, builtin)
    }

    fn compile(
        state: &mut HttpPlan,
        plan: &Plan,
        scenario: usize,
        step: &onrush_plan::Step,
    ) -> anyhow::Result<Option<HttpStep>> {
        match RequestStep::of(step) {
            Some(request) => state.compile(plan, scenario, &request).map(Some),
            None => Ok(None),
        }
    }

    fn targets(state: &HttpPlan) -> Vec<SocketAddr> {
        state.targets.addresses()
    }

    fn worker(state: &HttpPlan, scenario: usize) -> Rc<ConnectionPool> {
        Rc::new(ConnectionPool::new(
            state.targets.len(),
            state.scenarios[scenario].max_streams,
        ))
    }

    fn session(
        state: &std::sync::Arc<HttpPlan>,
        scenario: usize,
        vu: u64,
        worker: &Rc<ConnectionPool>,
    ) -> HttpSession {
        let mut session = HttpSession::new(
            &state.scenarios[scenario],
            state.targets.len(),
            vu,
            worker.clone(),
        );
        session.scenario = scenario as u32;
        session
    }
}
