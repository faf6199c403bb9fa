//! What WebSocket resolves once per run: each target's address, each scenario's TLS client and
//! timeout, each step's settings.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use onrush_http::{SessionMode, TlsClient};
use onrush_plan::{Check, ConnectionScope, CustomStep, Extract, OnFailure, Plan};
use onrush_protocol::StepSpec;

use crate::{WsAction, WsPayload, WsSpec};

/// The WebSocket part of a prepared plan, shared read-only by all workers.
#[derive(Default)]
pub struct WsPlan {
    /// Distinct `host:port` targets and their addresses.
    targets: Vec<(String, SocketAddr)>,
    /// The built-in server, for `ws://builtin/...` (see `onrush_protocol::BUILTIN_HOST`).
    builtin: Option<SocketAddr>,
    /// Per scenario: how long sockets live (`http.connections`: `per_iteration` closes the
    /// socket at the iteration's end; the others keep it until `ws: close`).
    pub(crate) scopes: Vec<ConnectionScope>,
    /// Per scenario: the default timeout of a step (`http.timeout`).
    pub(crate) timeouts: Vec<Duration>,
    /// Per scenario: the TLS client of `http.tls`, built when the scenario has a `wss://` URL.
    pub(crate) tls: Vec<Option<(Arc<TlsClient>, SessionMode)>>,
}

/// Where a `ws: connect` goes.
pub(crate) struct Target {
    pub addr: SocketAddr,
    /// The host as written: the TLS server name.
    pub host: String,
    /// `host:port` (IPv6 in brackets): the `Host` header.
    pub authority: String,
    /// `ws://host:port` or `wss://host:port`, the start of the request URI.
    pub origin: String,
}

/// A WebSocket step ready to run.
pub struct WsStep {
    /// What the grammar read.
    pub plan: WsSpec,
    /// What every request step has (metric, extractors, checks).
    pub common: CustomStep,
    /// The step's time limit: its `timeout`, its `await`'s, or the scenario's `http.timeout`.
    pub(crate) timeout: Duration,
    /// For `ws: connect`.
    pub(crate) target: Option<Target>,
    /// A `binary_hex:` send's message, shared by every send of the step (empty otherwise).
    pub(crate) binary: Box<[u8]>,
}

impl WsPlan {
    pub fn new(plan: &Plan, builtin: Option<SocketAddr>) -> Self {
        WsPlan {
            targets: Vec::new(),
            builtin,
            scopes: plan.scenarios.iter().map(|s| s.http.connections).collect(),
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
            tls: plan.scenarios.iter().map(|_| None).collect(),
        }
    }

    /// Resolves a connect step's target (once per distinct `host:port`) and builds the
    /// scenario's TLS client for `wss://`, from `http.tls` as the HTTP client does.
    pub fn compile(
        &mut self,
        plan: &Plan,
        scenario: usize,
        step: &CustomStep,
        spec: &WsSpec,
    ) -> anyhow::Result<WsStep> {
        let mut timeout = step.timeout.unwrap_or(self.timeouts[scenario]);
        let target = match &spec.action {
            WsAction::Connect(connect) => {
                let label = if connect.host.contains(':') {
                    format!("[{}]:{}", connect.host, connect.port)
                } else {
                    format!("{}:{}", connect.host, connect.port)
                };
                let addr = match self.targets.iter().find(|(l, _)| *l == label) {
                    Some((_, addr)) => *addr,
                    None => {
                        let addr = onrush_protocol::resolve_host(
                            "WebSocket",
                            &connect.host,
                            connect.port,
                            self.builtin,
                        )?;
                        self.targets.push((label.clone(), addr));
                        addr
                    }
                };
                if connect.tls && self.tls[scenario].is_none() {
                    let scenario_plan = &plan.scenarios[scenario];
                    let options = onrush_proto_http::tls_options(&scenario_plan.http.tls);
                    let client = TlsClient::new(&options).map_err(|e| {
                        anyhow::anyhow!("scenario {}: http.tls: {e}", scenario_plan.name)
                    })?;
                    self.tls[scenario] = Some((
                        Arc::new(client),
                        onrush_proto_http::session_mode(scenario_plan.http.tls.session),
                    ));
                }
                let scheme = if connect.tls { "wss" } else { "ws" };
                Some(Target {
                    addr,
                    host: connect.host.clone(),
                    origin: format!("{scheme}://{label}"),
                    authority: label,
                })
            }
            WsAction::Send {
                until: Some(until), ..
            }
            | WsAction::Receive(until) => {
                if let Some(t) = until.timeout {
                    timeout = t;
                }
                None
            }
            _ => None,
        };
        let binary = match &spec.action {
            WsAction::Send {
                payload: WsPayload::Binary(bytes),
                ..
            } => bytes.clone().into_boxed_slice(),
            _ => Box::default(),
        };
        Ok(WsStep {
            plan: spec.clone(),
            common: step.clone(),
            timeout,
            target,
            binary,
        })
    }

    /// The addresses of the targets.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.targets.iter().map(|(_, a)| *a).collect()
    }
}

impl StepSpec for WsStep {
    fn metric(&self) -> usize {
        self.common.metric
    }

    fn extract(&self) -> &[Extract] {
        &self.common.extract
    }

    fn checks(&self) -> &[Check] {
        &self.common.checks
    }

    fn on_failure(&self) -> OnFailure {
        self.common.on_failure
    }
}
