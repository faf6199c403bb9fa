//! What the Redis protocol resolves once per run: each server's address, the commands a new
//! connection sends first, and each step's commands (pre-encoded when nothing in them changes
//! per request, as onrush's HTTP/1.1 encodes a constant request once).

use std::net::SocketAddr;
use std::time::Duration;

use onrush_plan::{Check, CustomStep, Extract, OnFailure, Plan, Template};
use onrush_proto_tcp::stream::TlsClients;
use onrush_protocol::{StepSpec, Targets};

use crate::grammar::{ConnectSettings, RedisSpec};
use crate::resp;

/// One server and the settings of its connections: steps that agree on both share them.
pub struct Endpoint {
    pub addr: SocketAddr,
    pub tls: bool,
    pub host: String,
    /// `host:port` as written, shown to `url` extractors.
    pub label: Vec<u8>,
    /// HELLO / AUTH / SELECT, encoded, and how many replies they bring.
    pub hello: Vec<u8>,
    pub hello_replies: usize,
    settings: ConnectSettings,
    slot: usize,
}

/// The Redis part of a prepared plan, shared read-only by all workers.
pub struct RedisPlan {
    targets: Targets,
    pub endpoints: Vec<Endpoint>,
    pub tls: TlsClients,
    /// Per scenario: a step's timeout when it has none (`http.timeout`).
    timeouts: Vec<Duration>,
}

/// A Redis step ready to run.
pub struct RedisStep {
    pub(crate) metric: usize,
    pub(crate) extract: Vec<Extract>,
    pub(crate) checks: Vec<Check>,
    pub(crate) on_failure: OnFailure,
    pub(crate) endpoint: usize,
    pub(crate) timeout: Duration,
    pub(crate) shared: bool,
    pub(crate) pipeline: bool,
    /// The commands, encoded once when every argument is constant.
    pub(crate) encoded: Option<Vec<u8>>,
    pub(crate) commands: Vec<Vec<Template>>,
    /// Extractors or checks read the reply: only then is it written as JSON.
    pub(crate) needs_body: bool,
}

impl RedisPlan {
    pub fn new(plan: &Plan, builtin: Option<SocketAddr>) -> Self {
        RedisPlan {
            targets: Targets::with_builtin(builtin),
            endpoints: Vec::new(),
            tls: TlsClients::new(plan),
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
        }
    }

    pub fn compile(
        &mut self,
        plan: &Plan,
        scenario: usize,
        step: &CustomStep,
        spec: &RedisSpec,
    ) -> anyhow::Result<RedisStep> {
        let scheme = if spec.tls { "tls://" } else { "" };
        let target = self
            .targets
            .resolve_scheme("redis", scheme, &spec.host, spec.port)?;
        if spec.tls {
            self.tls.require(plan, scenario)?;
        }
        let endpoint = match self
            .endpoints
            .iter()
            .position(|e| e.slot == target.slot && e.settings == spec.connect)
        {
            Some(i) => i,
            None => {
                let (hello, hello_replies) = hello(&spec.connect);
                self.endpoints.push(Endpoint {
                    addr: target.addr,
                    tls: spec.tls,
                    host: spec.host.clone(),
                    label: target.label.into_bytes(),
                    hello,
                    hello_replies,
                    settings: spec.connect.clone(),
                    slot: target.slot,
                });
                self.endpoints.len() - 1
            }
        };
        let encoded = spec
            .commands
            .iter()
            .all(|c| c.iter().all(Template::is_constant))
            .then(|| {
                let mut out = Vec::new();
                for command in &spec.commands {
                    let args = command
                        .iter()
                        .map(|t| t.constant_bytes().expect("constant"));
                    resp::encode_command_iter(&mut out, args);
                }
                out
            });
        Ok(RedisStep {
            metric: step.metric,
            needs_body: !step.extract.is_empty() || !step.checks.is_empty(),
            extract: step.extract.clone(),
            checks: step.checks.clone(),
            on_failure: step.on_failure,
            endpoint,
            timeout: step.timeout.unwrap_or(self.timeouts[scenario]),
            shared: spec.shared,
            pipeline: spec.pipeline,
            encoded,
            commands: spec.commands.clone(),
        })
    }

    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.targets.addresses()
    }
}

/// What a new connection says first: HELLO 3 (with AUTH in it), or AUTH; then SELECT.
fn hello(settings: &ConnectSettings) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut replies = 0;
    let user = settings.username.as_deref().unwrap_or("default");
    if settings.resp3 {
        match &settings.password {
            Some(password) => resp::encode_command(
                &mut out,
                &[
                    b"HELLO",
                    b"3",
                    b"AUTH",
                    user.as_bytes(),
                    password.as_bytes(),
                ],
            ),
            None => resp::encode_command(&mut out, &[b"HELLO", b"3"]),
        }
        replies += 1;
    } else if let Some(password) = &settings.password {
        match &settings.username {
            Some(user) => {
                resp::encode_command(&mut out, &[b"AUTH", user.as_bytes(), password.as_bytes()])
            }
            None => resp::encode_command(&mut out, &[b"AUTH", password.as_bytes()]),
        }
        replies += 1;
    }
    if let Some(db) = settings.database {
        resp::encode_command(&mut out, &[b"SELECT", db.to_string().as_bytes()]);
        replies += 1;
    }
    (out, replies)
}

impl StepSpec for RedisStep {
    #[inline]
    fn metric(&self) -> usize {
        self.metric
    }

    #[inline]
    fn extract(&self) -> &[Extract] {
        &self.extract
    }

    #[inline]
    fn checks(&self) -> &[Check] {
        &self.checks
    }

    #[inline]
    fn on_failure(&self) -> OnFailure {
        self.on_failure
    }
}
