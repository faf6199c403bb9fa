//! Turns a loaded plan into what workers run: targets resolved once, steps flattened.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use anyhow::Context;
use onrush_http1::{ClientIdentity, SessionMode, TlsClient, TlsOptions, TlsVersion};
use onrush_metrics::{Layout, ScenarioLayout, StepKind};
use onrush_plan::{
    CloseMode, ConnectionScope, CookieMode, FeederUse, HttpSettings, HttpVersion, LoadModel,
    MetricKind, Plan, Scheme, Step, Target, TargetUrl, TlsSessionMode, TlsSettings,
    TlsVersionSetting,
};
use std::sync::atomic::AtomicBool;

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
    /// Early stops asked for by VUs (`on_failure: stop_test`, test data run out).
    pub stops: Arc<Stops>,
}

/// Why a run, or a scenario, stopped before its plan said: written down by the VU that saw it
/// (a cold path: at most once per scenario), read by the collector.
#[derive(Default)]
pub struct Stops {
    /// Set by a VU whose step says `on_failure: stop_test`: the collector stops the run.
    pub stop_test: AtomicBool,
    /// `(scenario, reason)` of every early stop, in the order they happened.
    pub notes: std::sync::Mutex<Vec<(String, String)>>,
}

impl Stops {
    /// Records an early stop and prints it once.
    pub fn note(&self, scenario: &str, reason: String) {
        eprintln!("scenario {scenario:?}: {reason}");
        if let Ok(mut notes) = self.notes.lock() {
            notes.push((scenario.to_string(), reason));
        }
    }
}

pub struct ScenarioRun {
    pub load: LoadModel,
    pub scope: ConnectionScope,
    /// `http.version`: HTTP/1.1, HTTP/2 or what ALPN chooses.
    pub version: HttpVersion,
    /// `http.max_streams`: requests at once on one HTTP/2 connection of the shared pool.
    pub max_streams: u32,
    /// Source addresses new connections are spread over (empty: the kernel chooses).
    pub source_addresses: Arc<[IpAddr]>,
    /// Close connections with a reset (SO_LINGER 0): no TIME_WAIT on this side.
    pub close_reset: bool,
    /// For https targets: the scenario's TLS configuration and how VUs reuse sessions.
    pub tls: Option<(Arc<TlsClient>, SessionMode)>,
    pub program: Vec<Op>,
    /// `http.throttle`: a bandwidth cap per connection, bytes/s.
    pub throttle: Option<u64>,
    pub name: String,
    /// Runtime variable names (slot order), counters and `once` blocks, for each VU's state.
    pub vars: Vec<String>,
    pub counters: usize,
    pub onces: usize,
    pub feeders: Vec<FeederUse>,
    pub pacing: Option<std::time::Duration>,
    pub cookies: CookieMode,
    /// Metric names, for messages.
    pub metric_names: Vec<String>,
    /// Per variable slot: a warning naming the variable was printed (once per run) when a
    /// request needed it unset.
    pub unset_warned: Box<[AtomicBool]>,
    /// Set when a `unique` feeder with `on_exhausted: stop` ran out of rows: no new iteration
    /// of the scenario starts.
    pub stopped: AtomicBool,
    /// The run's early stops, shared by all scenarios.
    pub stops: Arc<Stops>,
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
    let stops = Arc::new(Stops::default());
    for scenario in &plan.scenarios {
        let mut program = Vec::new();
        flatten(
            &scenario.steps,
            &mut program,
            &mut targets,
            default_target,
            &scenario.http,
        )?;
        let tls = if targets.list.iter().any(|(_, t)| t.tls) {
            let mut options = tls_options(&scenario.http.tls);
            options.alpn = crate::protocol::connect::alpn_for(scenario.http.version);
            let client = TlsClient::new(&options)
                .map_err(|e| anyhow::anyhow!("scenario {}: http.tls: {e}", scenario.name))?;
            Some((Arc::new(client), session_mode(scenario.http.tls.session)))
        } else {
            None
        };
        scenarios.push(ScenarioRun {
            load: scenario.load.clone(),
            scope: scenario.http.connections,
            version: scenario.http.version,
            max_streams: scenario.http.max_streams,
            source_addresses: scenario.http.source_addresses.clone().into(),
            close_reset: scenario.http.close == CloseMode::Reset,
            tls,
            program,
            throttle: scenario.http.throttle,
            name: scenario.name.clone(),
            vars: scenario.vars.clone(),
            counters: scenario.counters,
            onces: scenario.onces,
            feeders: scenario.feeders.clone(),
            pacing: scenario.pacing,
            cookies: scenario.http.cookies,
            metric_names: scenario.metrics.iter().map(|m| m.name.clone()).collect(),
            unset_warned: scenario
                .vars
                .iter()
                .map(|_| AtomicBool::new(false))
                .collect(),
            stopped: AtomicBool::new(false),
            stops: stops.clone(),
        });
        layout.push(scenario_layout(scenario));
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
        stops,
    })
}

fn flatten(
    steps: &[Step],
    program: &mut Vec<Op>,
    targets: &mut Targets,
    default_target: usize,
    http: &HttpSettings,
) -> anyhow::Result<()> {
    for step in steps {
        match step {
            Step::Request(request) => {
                let slot = match &request.target {
                    Some(url) => targets.slot_for_url(url)?,
                    None => default_target,
                };
                let metric = request.metric;
                let step = HttpStep::new(request.clone(), slot, targets.list[slot].1.clone(), http)
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
                program.push(Op::Jump { to: 0 });
                flatten(steps, program, targets, default_target, http)?;
                let end = program.len();
                program.push(Op::LoopEnd { start });
                program[start] = Op::LoopStart { count: *count, end };
            }
            Step::While {
                condition,
                max,
                steps,
            } => {
                let start = program.len();
                program.push(Op::Jump { to: 0 });
                flatten(steps, program, targets, default_target, http)?;
                let end = program.len();
                program.push(Op::LoopEnd { start });
                program[start] = Op::WhileStart {
                    condition: condition.clone(),
                    max: *max,
                    end,
                };
            }
            Step::ForEach { list, item, steps } => {
                let start = program.len();
                program.push(Op::Jump { to: 0 });
                flatten(steps, program, targets, default_target, http)?;
                let end = program.len();
                program.push(Op::LoopEnd { start });
                program[start] = Op::ForEachStart {
                    list: *list,
                    item: *item,
                    end,
                };
            }
            Step::Group { metric, steps } => {
                program.push(Op::GroupStart { metric: *metric });
                flatten(steps, program, targets, default_target, http)?;
                program.push(Op::GroupEnd);
            }
            Step::If {
                condition,
                then,
                otherwise,
            } => {
                let at = program.len();
                program.push(Op::Jump { to: 0 });
                flatten(then, program, targets, default_target, http)?;
                if otherwise.is_empty() {
                    let end = program.len();
                    program[at] = Op::If {
                        condition: condition.clone(),
                        otherwise: end,
                    };
                } else {
                    let jump = program.len();
                    program.push(Op::Jump { to: 0 });
                    let else_start = program.len();
                    flatten(otherwise, program, targets, default_target, http)?;
                    let end = program.len();
                    program[jump] = Op::Jump { to: end };
                    program[at] = Op::If {
                        condition: condition.clone(),
                        otherwise: else_start,
                    };
                }
            }
            Step::Once { id, steps } => {
                let at = program.len();
                program.push(Op::Jump { to: 0 });
                flatten(steps, program, targets, default_target, http)?;
                program[at] = Op::Once {
                    id: *id,
                    end: program.len(),
                };
            }
            Step::Random { branches } => {
                let at = program.len();
                program.push(Op::Jump { to: 0 });
                let mut starts = Vec::new();
                let mut jumps = Vec::new();
                let mut total = 0u64;
                for (weight, steps) in branches {
                    total += u64::from(*weight);
                    starts.push((total, program.len()));
                    flatten(steps, program, targets, default_target, http)?;
                    jumps.push(program.len());
                    program.push(Op::Jump { to: 0 });
                }
                let end = program.len();
                for j in jumps {
                    program[j] = Op::Jump { to: end };
                }
                program[at] = Op::Random { branches: starts };
            }
        }
    }
    Ok(())
}

/// The metrics layout of one scenario: its steps and groups, and its checks.
fn scenario_layout(scenario: &onrush_plan::Scenario) -> ScenarioLayout {
    ScenarioLayout {
        name: scenario.name.clone(),
        steps: scenario.metrics.iter().map(|m| m.name.clone()).collect(),
        kinds: scenario
            .metrics
            .iter()
            .map(|m| match m.kind {
                MetricKind::Request => StepKind::Request,
                MetricKind::Group => StepKind::Group,
            })
            .collect(),
        checks: scenario
            .checks
            .iter()
            .map(|c| (c.name.clone(), c.metric))
            .collect(),
    }
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
        identities: tls
            .identities
            .iter()
            .map(|identity| match identity {
                onrush_plan::ClientIdentity::Pem { cert, key } => ClientIdentity::Pem {
                    cert: cert.clone(),
                    key: key.clone(),
                },
                onrush_plan::ClientIdentity::Pkcs12 { file, password, .. } => {
                    ClientIdentity::Pkcs12 {
                        file: file.clone(),
                        password: password.clone(),
                    }
                }
            })
            .collect(),
        cipher_suites: tls.ciphers.clone(),
        server_name: tls.server_name.clone(),
        ..Default::default()
    }
}

fn session_mode(mode: TlsSessionMode) -> SessionMode {
    match mode {
        TlsSessionMode::Resume => SessionMode::Resume,
        TlsSessionMode::Shared => SessionMode::Shared,
        TlsSessionMode::Full => SessionMode::Full,
    }
}
