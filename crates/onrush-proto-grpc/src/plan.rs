//! What gRPC resolves once per run: each target's address (a slot per distinct `host:port`),
//! each scenario's connection scope, timeout and TLS client, each step's fixed request headers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use onrush_http::{SessionMode, TlsClient};
use onrush_plan::{Check, ConnectionScope, CustomStep, Extract, OnFailure, Plan};
use onrush_protocol::{StepSpec, Target, Targets};

use crate::codec::timeout_value;
use crate::GrpcSpec;

/// The gRPC part of a prepared plan, shared read-only by all workers.
#[derive(Default)]
pub struct GrpcPlan {
    pub(crate) targets: Targets,
    /// Per scenario: `http.connections` (`shared`: the worker's pool of HTTP/2 connections
    /// per target, their streams shared by the worker's VUs).
    pub(crate) scopes: Vec<ConnectionScope>,
    /// Per scenario: `http.max_streams`, the calls at once on one pooled connection (`shared`).
    pub(crate) max_streams: Vec<u32>,
    /// Per scenario: the default timeout of a step (`http.timeout`).
    pub(crate) timeouts: Vec<Duration>,
    /// Per scenario: the TLS client of `http.tls` (ALPN `h2`), built when a step is `grpcs://`.
    pub(crate) tls: Vec<Option<(Arc<TlsClient>, SessionMode)>>,
}

/// A gRPC step ready to run.
pub struct GrpcStep {
    /// What the grammar read.
    pub plan: GrpcSpec,
    /// What every request step has (metric, timeout, extractors, checks).
    pub common: CustomStep,
    pub(crate) target: Target,
    /// The `:authority`: `host:port` as written.
    pub(crate) authority: Vec<u8>,
    /// The step's time limit (its `timeout`, else `http.timeout`), also sent as `grpc-timeout`.
    pub(crate) timeout: Duration,
    /// The headers every call of the step sends, as `name: value\r\n` lines.
    pub(crate) fixed_headers: Vec<u8>,
    /// Extractors or checks read the response message(s): decode them to JSON.
    pub(crate) needs_json: bool,
    /// The method streams its responses: the body is a JSON array of all messages.
    pub(crate) streams_out: bool,
}

impl GrpcPlan {
    pub fn new(plan: &Plan, builtin: Option<SocketAddr>) -> Self {
        GrpcPlan {
            targets: Targets::with_builtin(builtin),
            scopes: plan.scenarios.iter().map(|s| s.http.connections).collect(),
            max_streams: plan.scenarios.iter().map(|s| s.http.max_streams).collect(),
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
            tls: plan.scenarios.iter().map(|_| None).collect(),
        }
    }

    pub fn compile(
        &mut self,
        plan: &Plan,
        scenario: usize,
        step: &CustomStep,
        spec: &GrpcSpec,
    ) -> anyhow::Result<GrpcStep> {
        let target = self.targets.resolve("grpc", &spec.host, spec.port)?;
        if spec.tls && self.tls[scenario].is_none() {
            let scenario_plan = &plan.scenarios[scenario];
            let mut options = onrush_proto_http::tls_options(&scenario_plan.http.tls);
            // gRPC is HTTP/2 only.
            options.alpn = vec![b"h2".to_vec()];
            let client = TlsClient::new(&options)
                .map_err(|e| anyhow::anyhow!("scenario {}: http.tls: {e}", scenario_plan.name))?;
            self.tls[scenario] = Some((
                Arc::new(client),
                onrush_proto_http::session_mode(scenario_plan.http.tls.session),
            ));
        }
        let timeout = step.timeout.unwrap_or(self.timeouts[scenario]);
        let mut fixed_headers = Vec::new();
        let mut header = |name: &str, value: &str| {
            fixed_headers.extend_from_slice(name.as_bytes());
            fixed_headers.extend_from_slice(b": ");
            fixed_headers.extend_from_slice(value.as_bytes());
            fixed_headers.extend_from_slice(b"\r\n");
        };
        header("content-type", "application/grpc");
        header("te", "trailers");
        header("grpc-timeout", &timeout_value(timeout));
        if spec.gzip {
            header("grpc-encoding", "gzip");
            header("grpc-accept-encoding", "gzip");
        }
        header("user-agent", "onrush-grpc");
        let needs_json =
            !step.extract.is_empty() || step.checks.iter().any(|c| c.kind.needs_body());
        Ok(GrpcStep {
            authority: target.label.clone().into_bytes(),
            target,
            timeout,
            fixed_headers,
            needs_json,
            streams_out: spec.method.is_server_streaming(),
            plan: spec.clone(),
            common: step.clone(),
        })
    }
}

impl StepSpec for GrpcStep {
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
