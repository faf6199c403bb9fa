//! Turns a loaded plan into what workers run: targets resolved once, steps flattened.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use anyhow::Context;
use onrush_http1::{SessionMode, TlsClient, TlsOptions, TlsVersion};
use onrush_metrics::{Layout, ScenarioLayout};
use onrush_plan::{
    CloseMode, ConnectionScope, LoadModel, Plan, Scheme, Step, Target, TargetUrl, TlsSessionMode,
    TlsSettings, TlsVersionSetting,
};

use super::program::Op;
use crate::protocol::http::{HttpStep, HttpTarget};

/// A plan ready to run. Shared read-only by all workers.
pub struct Prepared {
    pub scenarios: Vec<ScenarioRun>,
    /// Distinct targets the plan talks to; a VU keeps one connection slot per target.
    pub target_slots: usize,
    /// Addresses of those targets (for the generator's own socket accounting).
    pub targets: Vec<SocketAddr>,
    /// The most source addresses any scenario spreads its connections over (0: the kernel's).
    pub max_source_addresses: usize,
    pub layout: Layout,
}

pub struct ScenarioRun {
    pub load: LoadModel,
    pub scope: ConnectionScope,
    /// Source addresses new connections are spread over (empty: the kernel chooses).
    pub source_addresses: Arc<[IpAddr]>,
    /// Close connections with a reset (SO_LINGER 0): no TIME_WAIT on this side.
    pub close_reset: bool,
    /// For https targets: the scenario's TLS configuration and how VUs reuse sessions.
    pub tls: Option<(Arc<TlsClient>, SessionMode)>,
    pub program: Vec<Op>,
}

/// Resolves targets (`builtin` → `builtin_addr`) and flattens every scenario's steps.
pub fn prepare(plan: &Plan, builtin_addr: Option<SocketAddr>) -> anyhow::Result<Prepared> {
    let mut targets = Targets::default();
    let default_target = match &plan.target {
        Target::Builtin => {
            let addr =
                builtin_addr.context("the plan's target is builtin but no built-in server runs")?;
            targets.slot_for_addr("builtin".to_string(), addr, addr.to_string())
        }
        Target::Url(url) => targets.slot_for_url(url)?,
    };
    let mut scenarios = Vec::new();
    let mut layout = Vec::new();
    for scenario in &plan.scenarios {
        let mut program = Vec::new();
        flatten(
            &scenario.steps,
            &mut program,
            &mut targets,
            default_target,
            scenario.http.timeout,
        )?;
        let tls = if targets.list.iter().any(|(_, t)| t.tls) {
            let client = TlsClient::new(&tls_options(&scenario.http.tls))
                .map_err(|e| anyhow::anyhow!("scenario {}: http.tls: {e}", scenario.name))?;
            Some((Arc::new(client), session_mode(scenario.http.tls.session)))
        } else {
            None
        };
        scenarios.push(ScenarioRun {
            load: scenario.load.clone(),
            scope: scenario.http.connections,
            source_addresses: scenario.http.source_addresses.clone().into(),
            close_reset: scenario.http.close == CloseMode::Reset,
            tls,
            program,
        });
        layout.push(ScenarioLayout {
            name: scenario.name.clone(),
            steps: scenario.metrics.iter().map(|m| m.name.clone()).collect(),
        });
    }
    Ok(Prepared {
        scenarios,
        target_slots: targets.list.len(),
        targets: targets.list.iter().map(|(_, t)| t.addr).collect(),
        max_source_addresses: plan
            .scenarios
            .iter()
            .map(|s| s.http.source_addresses.len())
            .max()
            .unwrap_or(0),
        layout: Layout { scenarios: layout },
    })
}

fn flatten(
    steps: &[Step],
    program: &mut Vec<Op>,
    targets: &mut Targets,
    default_target: usize,
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    for step in steps {
        match step {
            Step::Request(request) => {
                let slot = match &request.target {
                    Some(url) => targets.slot_for_url(url)?,
                    None => default_target,
                };
                let metric = request.metric;
                let step =
                    HttpStep::new(request.clone(), slot, targets.list[slot].1.clone(), timeout)
                        .map_err(anyhow::Error::msg)?;
                program.push(Op::Request {
                    metric,
                    step: Box::new(step),
                });
            }
            Step::Think { min, max } => program.push(Op::Think {
                min: *min,
                max: *max,
            }),
            Step::Loop { count, steps } => {
                let start = program.len();
                program.push(Op::LoopStart {
                    count: *count,
                    end: 0,
                });
                flatten(steps, program, targets, default_target, timeout)?;
                let end = program.len();
                program.push(Op::LoopEnd { start });
                program[start] = Op::LoopStart { count: *count, end };
            }
        }
    }
    Ok(())
}

#[derive(Default)]
struct Targets {
    list: Vec<(String, Arc<HttpTarget>)>,
}

impl Targets {
    fn slot_for_url(&mut self, url: &TargetUrl) -> anyhow::Result<usize> {
        let key = format!("{}:{}", url.host, url.port);
        if let Some(i) = self.list.iter().position(|(k, _)| *k == key) {
            return Ok(i);
        }
        let addr = (url.host.as_str(), url.port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve target host {:?}", url.host))?
            .next()
            .with_context(|| format!("target host {:?} has no address", url.host))?;
        let tls = url.scheme == Scheme::Https;
        let host_header = if url.port == url.scheme.default_port() {
            url.host.clone()
        } else if url.host.contains(':') {
            format!("[{}]:{}", url.host, url.port)
        } else {
            key.clone()
        };
        let slot = self.slot_for_addr(key, addr, host_header);
        let target = Arc::get_mut(&mut self.list[slot].1).expect("just created");
        target.tls = tls;
        target.server_name = url.host.clone();
        Ok(slot)
    }

    fn slot_for_addr(&mut self, key: String, addr: SocketAddr, host_header: String) -> usize {
        self.list.push((
            key,
            Arc::new(HttpTarget {
                addr,
                host_header: host_header.into_bytes(),
                tls: false,
                server_name: addr.ip().to_string(),
            }),
        ));
        self.list.len() - 1
    }
}

fn tls_options(tls: &TlsSettings) -> TlsOptions {
    TlsOptions {
        ca_file: tls.ca_file.clone(),
        insecure: tls.insecure,
        versions: tls
            .versions
            .iter()
            .map(|v| match v {
                TlsVersionSetting::V1_2 => TlsVersion::Tls12,
                TlsVersionSetting::V1_3 => TlsVersion::Tls13,
            })
            .collect(),
        client_cert: tls.client_cert.clone(),
        server_name: tls.server_name.clone(),
    }
}

fn session_mode(mode: TlsSessionMode) -> SessionMode {
    match mode {
        TlsSessionMode::Resume => SessionMode::Resume,
        TlsSessionMode::Shared => SessionMode::Shared,
        TlsSessionMode::Full => SessionMode::Full,
    }
}
