//! Turns a loaded plan into what workers run: the protocol's part compiled once, steps
//! flattened into a program.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use onrush_metrics::{Layout, ScenarioLayout, StepKind};
use onrush_plan::{FeederUse, LoadModel, MetricKind, Plan, Step};
use onrush_protocol::{Protocol, StepSpec};

use super::program::Op;

/// A plan ready to run. Shared read-only by all workers.
pub struct Prepared<P: Protocol> {
    pub scenarios: Vec<ScenarioRun<P>>,
    /// What the protocols resolved once for the whole run (targets, TLS configurations).
    pub protocol: Arc<P::Plan>,
    /// Addresses of the targets (for the generator's own socket accounting).
    pub targets: Vec<std::net::SocketAddr>,
    /// The most source addresses any scenario spreads its connections over (0: the kernel's).
    pub max_source_addresses: usize,
    pub layout: Layout,
    /// Early stops asked for by VUs (`on_failure: stop_test`, test data run out).
    pub stops: Arc<Stops>,
    /// The plan's JavaScript: each worker makes its engine from it (none without scripts).
    pub scripts: Option<Arc<onrush_script::Scripts>>,
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

/// One scenario as the workers run it: its load model, its program and what each VU keeps.
pub struct ScenarioRun<P: Protocol> {
    pub load: LoadModel,
    pub program: Vec<Op<P::Step>>,
    pub name: String,
    /// Runtime variable names (slot order), counters and `once` blocks, for each VU's state.
    pub vars: Vec<String>,
    pub counters: usize,
    pub onces: usize,
    pub feeders: Vec<FeederUse>,
    pub pacing: Option<std::time::Duration>,
    /// `load.graceful_stop`: how long requests in flight at the end of the load's duration may
    /// finish before they are cut.
    pub graceful_stop: std::time::Duration,
    /// Metric names, for messages.
    pub metric_names: Vec<String>,
    /// Check names (`jsonpath $.ok equals true`), by check id: what a failing exchange says
    /// failed.
    pub check_names: Vec<String>,
    /// Per variable slot: a warning naming the variable was printed (once per run) when a
    /// request needed it unset.
    pub unset_warned: Box<[AtomicBool]>,
    /// Set when a `unique` feeder with `on_exhausted: stop` ran out of rows: no new iteration
    /// of the scenario starts.
    pub stopped: AtomicBool,
    /// Closed models: VUs of [`ScenarioRun::vus_expected`] that started (each counts once, on a
    /// cold path), so that VUs the run never reached are counted, not invisible.
    pub vus_started: std::sync::atomic::AtomicU64,
    /// The run's early stops, shared by all scenarios.
    pub stops: Arc<Stops>,
    /// Values every VU starts with (`slot`, value): setup's variables ([`Prepared::seed_vars`]).
    pub seed: Vec<(usize, onrush_plan::VarValue)>,
    /// Keep the variables of the VU that ends an iteration last, for [`RunOutcome::vars`]
    /// (a setup phase's; a cold path: one VU, one iteration).
    ///
    /// [`RunOutcome::vars`]: crate::RunOutcome::vars
    pub keep_vars: bool,
    pub kept_vars: std::sync::Mutex<Vec<(String, onrush_plan::VarValue)>>,
}

/// Compiles the plan's protocol steps (`builtin` is the built-in server's address when the
/// plan's target is `builtin`) and flattens every scenario's steps into a program.
pub fn prepare<P: Protocol>(
    plan: &Plan,
    builtin_addr: Option<std::net::SocketAddr>,
) -> anyhow::Result<Prepared<P>> {
    let mut protocol = P::prepare(plan, builtin_addr)?;
    let mut scenarios = Vec::new();
    let mut layout = Vec::new();
    let stops = Arc::new(Stops::default());
    for (index, scenario) in plan.scenarios.iter().enumerate() {
        let mut program = Vec::new();
        let mut compile = |step: &Step| -> anyhow::Result<P::Step> {
            P::compile(&mut protocol, plan, index, step)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "scenario {}: a step of a protocol this build of onrush does not have",
                    scenario.name
                )
            })
        };
        flatten(&scenario.steps, &mut program, &mut compile)?;
        scenarios.push(ScenarioRun {
            load: scenario.load.clone(),
            program,
            name: scenario.name.clone(),
            vars: scenario.vars.clone(),
            counters: scenario.counters,
            onces: scenario.onces,
            feeders: scenario.feeders.clone(),
            pacing: scenario.pacing,
            graceful_stop: scenario.graceful_stop,
            metric_names: scenario.metrics.iter().map(|m| m.name.clone()).collect(),
            check_names: scenario.checks.iter().map(|c| c.name.clone()).collect(),
            unset_warned: scenario
                .vars
                .iter()
                .map(|_| AtomicBool::new(false))
                .collect(),
            stopped: AtomicBool::new(false),
            vus_started: Default::default(),
            stops: stops.clone(),
            seed: Vec::new(),
            keep_vars: false,
            kept_vars: Default::default(),
        });
        layout.push(scenario_layout(scenario));
    }
    Ok(Prepared {
        scenarios,
        scripts: plan.scripts.clone(),
        targets: P::targets(&protocol),
        protocol: Arc::new(protocol),
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

impl<P: Protocol> Prepared<P> {
    /// Gives every VU of every scenario these variables as it starts (setup's values), in the
    /// scenarios that have a runtime variable of that name.
    pub fn seed_vars(&mut self, values: &[(String, onrush_plan::VarValue)]) {
        for scenario in &mut self.scenarios {
            scenario.seed = values
                .iter()
                .filter_map(|(name, value)| {
                    let slot = scenario.vars.iter().position(|v| v == name)?;
                    Some((slot, value.clone()))
                })
                .collect();
        }
    }
}

/// Appends the program of `steps` to `program`; request steps of any protocol go through
/// `compile`.
pub(crate) fn flatten<S: StepSpec>(
    steps: &[Step],
    program: &mut Vec<Op<S>>,
    compile: &mut dyn FnMut(&Step) -> anyhow::Result<S>,
) -> anyhow::Result<()> {
    for step in steps {
        match step {
            Step::Think { min, max } => program.push(Op::Think {
                min: *min,
                max: *max,
            }),
            Step::Loop { count, steps } => {
                let start = program.len();
                program.push(Op::Jump { to: 0 });
                flatten(steps, program, compile)?;
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
                flatten(steps, program, compile)?;
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
                flatten(steps, program, compile)?;
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
                flatten(steps, program, compile)?;
                program.push(Op::GroupEnd);
            }
            Step::If {
                condition,
                then,
                otherwise,
            } => {
                let at = program.len();
                program.push(Op::Jump { to: 0 });
                flatten(then, program, compile)?;
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
                    flatten(otherwise, program, compile)?;
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
                flatten(steps, program, compile)?;
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
                    flatten(steps, program, compile)?;
                    jumps.push(program.len());
                    program.push(Op::Jump { to: 0 });
                }
                let end = program.len();
                for j in jumps {
                    program[j] = Op::Jump { to: end };
                }
                program[at] = Op::Random { branches: starts };
            }
            Step::Script { metric, func } => program.push(Op::Script {
                metric: *metric,
                func: *func,
            }),
            // A request of any protocol: the protocol compiles it.
            leaf => {
                let step = compile(leaf)?;
                let after = match leaf {
                    Step::Custom(c) => c.after,
                    _ => None,
                };
                program.push(Op::Request {
                    metric: step.metric(),
                    step: Box::new(step),
                    after,
                });
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

/// A VU of a ramp that first becomes due within this long of the ramp's end is not counted as
/// expected to start: its start is legitimately a matter of timing.
const LATE_START_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

impl<P: Protocol> ScenarioRun<P> {
    /// Closed models: whether VU `k` (0-based) is one the plan asks to run (and so must start,
    /// or be reported as not started). Open models start VUs on demand: none is expected.
    pub fn vu_expected(&self, k: u32) -> bool {
        match &self.load {
            LoadModel::ClosedIterations { vus, .. } | LoadModel::SharedIterations { vus, .. } => {
                k < *vus
            }
            LoadModel::ClosedStages { start_vus, stages } => {
                let ramp = crate::schedule::VuRamp::new(*start_vus, stages);
                let end = ramp.duration();
                ramp.next_active(k, std::time::Duration::ZERO)
                    .is_some_and(|first| first + LATE_START_GRACE < end)
            }
            LoadModel::Open { .. } => false,
        }
    }

    /// Closed models: how many of the VUs `segment` runs the plan asks to run (see
    /// [`ScenarioRun::vu_expected`]).
    pub fn vus_expected(&self, segment: &crate::Segment) -> u64 {
        let max = match &self.load {
            LoadModel::ClosedIterations { vus, .. } | LoadModel::SharedIterations { vus, .. } => {
                *vus
            }
            LoadModel::ClosedStages { start_vus, stages } => {
                crate::schedule::VuRamp::new(*start_vus, stages).max_vus()
            }
            LoadModel::Open { .. } => 0,
        };
        (0..max)
            .filter(|&k| segment.owns_vu(k) && self.vu_expected(k))
            .count() as u64
    }
}
