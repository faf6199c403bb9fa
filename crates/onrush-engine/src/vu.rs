//! A virtual user: its protocol session, its variables, and how it runs one iteration of a
//! scenario's program (requests, extractors and checks, loops, groups, branches).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use onrush_metrics::{FailureClass, RequestRecord, WorkerMetrics};
use onrush_plan::{OnFailure, RenderContext, VarValue, Vars};
use onrush_protocol::{micros, Exchange, Moment, Protocol, RequestStart, Session, StepSpec};

use super::checks;
use super::failing;
use super::prepare::ScenarioRun;
use super::program::{holds, Frame, GroupRun, Op};

/// How an iteration ended for the VU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VuState {
    /// Ready for the next iteration.
    Running,
    /// `on_failure: stop_vu` / `stop_test`, or its feeder ran out: no more iterations.
    Stopped,
}

pub struct Vu<P: Protocol> {
    /// 1-based, unique within a scenario.
    pub id: u64,
    /// Iterations this VU has started (0-based index of the next one).
    pub iteration: u64,
    pub state: VuState,
    /// When the scenario's duration ends (none for iteration counts): from then on the VU
    /// starts no request, cuts its think times and pacing short, and leaves the iteration.
    ends_at: Option<Moment>,
    session: P::Session,
    vars: Vars,
    frames: Vec<Frame>,
    once_done: Vec<bool>,
    scratch: Vec<u8>,
    values: Vec<Vec<u8>>,
}

/// What the program does after a step.
enum Next {
    Go,
    EndIteration,
    StopVu,
    /// The scenario's time is up: the iteration ends where it is, uncounted.
    TimeUp,
}

impl<P: Protocol> Vu<P> {
    /// A VU of `scenario` with its protocol session (`session` comes from
    /// [`Protocol::session`]).
    /// `ends_at`: when the scenario's duration ends, if it has one.
    pub fn new(
        id: u64,
        scenario: &ScenarioRun<P>,
        session: P::Session,
        ends_at: Option<Instant>,
    ) -> Self {
        let mut vars = Vars::new(scenario.vars.len(), scenario.counters, id);
        for (slot, value) in &scenario.seed {
            vars.set_value(*slot, value.clone());
        }
        Vu {
            id,
            iteration: 0,
            state: VuState::Running,
            ends_at: ends_at.map(Moment::from_instant),
            session,
            vars,
            frames: Vec::new(),
            once_done: vec![false; scenario.onces],
            scratch: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Runs one iteration. The first request's latency counts from `first.intended`.
    pub async fn run_iteration(
        &mut self,
        scenario_index: usize,
        scenario: &ScenarioRun<P>,
        first: RequestStart,
        metrics: &Rc<RefCell<WorkerMetrics>>,
    ) {
        // Read only for pacing: a clock read less per iteration otherwise.
        let iteration_started = scenario.pacing.map(|_| Moment::now());
        self.session.begin_iteration();
        if !self.feed(scenario) {
            // A `unique` feeder ran out (on_exhausted: stop): the scenario is over.
            if !scenario.stopped.swap(true, Ordering::Relaxed) {
                let file = scenario
                    .feeders
                    .iter()
                    .map(|f| f.file.as_str())
                    .next()
                    .unwrap_or("");
                scenario.stops.note(
                    &scenario.name,
                    format!("its unique test data ({file}) ran out (on_exhausted: stop): no new iteration starts"),
                );
            }
            self.state = VuState::Stopped;
            return;
        }
        let ops = &scenario.program;
        let mut first = Some(first);
        let mut pc = 0;
        self.frames.clear();
        let mut next = Next::Go;
        while pc < ops.len() {
            match &ops[pc] {
                Op::Request {
                    metric,
                    step,
                    after,
                } => {
                    let start = first
                        .take()
                        .unwrap_or_else(|| RequestStart::now(Moment::now()));
                    // Between requests, not only between iterations: a loop of many requests
                    // must not outlive the scenario's duration (the one `now` is the
                    // request's start anyway, so this costs a comparison).
                    if self.ends_at.is_some_and(|end| start.intended >= end) {
                        next = Next::TimeUp;
                        break;
                    }
                    // The request's future is awaited here, not in a function of its own:
                    // one `async fn` less to enter, resume and leave on every request.
                    let ctx = RenderContext::new(self.id, self.iteration, &self.vars);
                    let mut in_flight = InFlight {
                        metrics,
                        scenario: scenario_index,
                        metric: *metric,
                        start: start.intended,
                        vu: (self.id, self.iteration),
                        done: false,
                    };
                    let exchange = self.session.execute(step, &ctx, start).await;
                    in_flight.done = true;
                    let failed = self.record(
                        scenario_index,
                        scenario,
                        (*metric, *after),
                        step,
                        exchange,
                        metrics,
                    );
                    pc += 1;
                    if failed {
                        // A request that failed without waiting (no descriptor left, no local
                        // port, a refused plan value) touched no tokio resource, so it used
                        // none of the task's budget: a VU failing so in a loop would keep the
                        // worker to itself (its other VUs never started, its per-second
                        // snapshots never sent). One unit of the budget per failure: a yield
                        // every 128 such failures, nothing on the success path.
                        tokio::task::consume_budget().await;
                        for f in &mut self.frames {
                            if let Frame::Group(g) = f {
                                g.failed = true;
                            }
                        }
                        match step.on_failure() {
                            OnFailure::Continue => {}
                            OnFailure::NextIteration => {
                                next = Next::EndIteration;
                                break;
                            }
                            OnFailure::StopVu => {
                                next = Next::StopVu;
                                break;
                            }
                            OnFailure::StopTest => {
                                request_stop(scenario, *metric);
                                next = Next::StopVu;
                                break;
                            }
                        }
                    }
                }
                Op::Script { metric, func } => {
                    self.script_step(scenario_index, *metric, *func, metrics);
                    pc += 1;
                }
                Op::Think { min, max } => {
                    let pause = self.pick(*min, *max);
                    match self.ends_at {
                        // A think never runs past the end of the scenario's duration.
                        Some(end) => {
                            let until = (Moment::now() + pause).min(end);
                            tokio::time::sleep_until(until.to_instant().into()).await;
                            if Moment::now() >= end {
                                next = Next::TimeUp;
                                break;
                            }
                        }
                        None => tokio::time::sleep(pause).await,
                    }
                    pc += 1;
                }
                Op::LoopStart { count, end } => {
                    if *count == 0 {
                        pc = end + 1;
                    } else {
                        self.frames.push(Frame::Count { left: *count });
                        pc += 1;
                    }
                }
                Op::WhileStart { condition, end, .. } => {
                    let ctx = RenderContext::new(self.id, self.iteration, &self.vars);
                    let who = self.who(scenario_index);
                    if holds(condition, &self.vars, &ctx, &mut self.scratch, who) {
                        self.frames.push(Frame::While { done: 0 });
                        pc += 1;
                    } else {
                        pc = end + 1;
                    }
                }
                Op::ForEachStart { list, item, end } => {
                    let values = match self.vars.get(*list) {
                        VarValue::Unset => Vec::new(),
                        VarValue::One(v) => vec![v.clone()],
                        VarValue::Many(l) => l.clone(),
                    };
                    if values.is_empty() {
                        pc = end + 1;
                    } else {
                        self.vars.set(*item, &values[0]);
                        self.frames.push(Frame::ForEach { values, next: 1 });
                        pc += 1;
                    }
                }
                Op::LoopEnd { start } => {
                    pc = self.loop_end(ops, *start, pc, scenario_index);
                }
                Op::GroupStart { metric } => {
                    self.frames.push(Frame::Group(GroupRun {
                        metric: *metric,
                        started: Moment::now(),
                        failed: false,
                        bytes_in: 0,
                        bytes_out: 0,
                    }));
                    pc += 1;
                }
                Op::GroupEnd => {
                    if let Some(Frame::Group(g)) = self.frames.pop() {
                        record_group(scenario_index, &g, metrics);
                    }
                    pc += 1;
                }
                Op::If {
                    condition,
                    otherwise,
                } => {
                    let ctx = RenderContext::new(self.id, self.iteration, &self.vars);
                    let who = self.who(scenario_index);
                    pc = if holds(condition, &self.vars, &ctx, &mut self.scratch, who) {
                        pc + 1
                    } else {
                        *otherwise
                    };
                }
                Op::Jump { to } => pc = *to,
                Op::Once { id, end } => {
                    if self.once_done[*id] {
                        pc = *end;
                    } else {
                        self.once_done[*id] = true;
                        pc += 1;
                    }
                }
                Op::Random { branches } => {
                    let total = branches.last().map_or(1, |b| b.0);
                    let r = self.vars.random_below(total);
                    let branch = branches.iter().find(|(upto, _)| r < *upto);
                    pc = branch.map_or(pc + 1, |b| b.1);
                }
            }
        }
        if matches!(next, Next::TimeUp) {
            // Cut by the end of the duration: the iteration did not complete and is not
            // counted, nor are its open groups (they neither finished nor failed).
            self.frames.clear();
            self.session.end_iteration();
            self.iteration += 1;
            return;
        }
        // Groups left open by an early end are recorded (failed) with their time so far.
        while let Some(frame) = self.frames.pop() {
            if let Frame::Group(mut g) = frame {
                g.failed = true;
                record_group(scenario_index, &g, metrics);
            }
        }
        self.session.end_iteration();
        self.iteration += 1;
        metrics.borrow_mut().record_iteration(scenario_index);
        if scenario.keep_vars {
            self.keep_vars(scenario);
        }
        if matches!(next, Next::StopVu) {
            self.state = VuState::Stopped;
            return;
        }
        if let (Some(pacing), Some(iteration_started)) = (scenario.pacing, iteration_started) {
            let mut until = iteration_started + pacing;
            if let Some(end) = self.ends_at {
                until = until.min(end);
            }
            if until > Moment::now() {
                tokio::time::sleep_until(until.to_instant().into()).await;
            }
        }
    }

    /// Leaves this VU's variables that have a value where the run's outcome reads them.
    fn keep_vars(&self, scenario: &ScenarioRun<P>) {
        let kept = scenario
            .vars
            .iter()
            .enumerate()
            .filter(|(slot, _)| !matches!(self.vars.get(*slot), VarValue::Unset))
            .map(|(slot, name)| (name.clone(), self.vars.get(slot).clone()))
            .collect();
        if let Ok(mut out) = scenario.kept_vars.lock() {
            *out = kept;
        }
    }

    /// Picks this iteration's feeder rows into their variables; false when a feeder is out.
    fn feed(&mut self, scenario: &ScenarioRun<P>) -> bool {
        for f in &scenario.feeders {
            let rng = &self.vars;
            let Some(row) = f.feeder.pick(self.id, &mut || rng.random()) else {
                return false;
            };
            let vars = &mut self.vars;
            f.feeder
                .table()
                .row(row, &mut self.scratch, &mut |col, value| {
                    vars.set(f.slots[col], value);
                });
        }
        true
    }

    /// The end of a loop body at `pc` whose start op is at `start`: the next pc.
    fn loop_end(
        &mut self,
        ops: &[Op<P::Step>],
        start: usize,
        pc: usize,
        scenario_index: usize,
    ) -> usize {
        let who = self.who(scenario_index);
        let again = match (self.frames.last_mut(), &ops[start]) {
            (Some(Frame::Count { left }), _) => {
                *left -= 1;
                *left > 0
            }
            (Some(Frame::While { done }), Op::WhileStart { condition, max, .. }) => {
                *done += 1;
                let more = *done < *max;
                let ctx = RenderContext::new(self.id, self.iteration, &self.vars);
                more && holds(condition, &self.vars, &ctx, &mut self.scratch, who)
            }
            (Some(Frame::ForEach { values, next }), Op::ForEachStart { item, .. })
                if *next < values.len() =>
            {
                let value = std::mem::take(&mut values[*next]);
                *next += 1;
                self.vars.set(*item, &value);
                true
            }
            _ => false,
        };
        if again {
            start + 1
        } else {
            self.frames.pop();
            pc + 1
        }
    }

    /// Who calls into the plan's scripts: this VU, where it is.
    fn who(&self, scenario_index: usize) -> onrush_script::Caller {
        onrush_script::Caller {
            scenario: scenario_index as u32,
            vu: self.id,
            iteration: self.iteration,
        }
    }

    /// A `script:` step: the function run with the VU's `ctx`, timed as one sample of `metric`
    /// (a failure when it threw, timed out or failed the step).
    fn script_step(
        &mut self,
        scenario_index: usize,
        metric: usize,
        func: u32,
        metrics: &Rc<RefCell<WorkerMetrics>>,
    ) {
        let who = self.who(scenario_index);
        let started = Moment::now();
        let result = onrush_script::worker::with(|e| e.run_step(func, who, &mut self.vars));
        let took = micros(started.elapsed());
        let failure = match result {
            Some(Err(f)) => {
                onrush_script::worker::print(&f);
                Some(script_failure(f))
            }
            _ => None,
        };
        if failure.is_some() {
            for f in &mut self.frames {
                if let Frame::Group(g) = f {
                    g.failed = true;
                }
            }
        }
        let record = RequestRecord {
            latency_us: took,
            service_us: took,
            connect_us: None,
            ttfb_us: None,
            bytes_in: 0,
            bytes_out: 0,
            status: 0,
            failure,
            handshake: None,
        };
        metrics
            .borrow_mut()
            .record_request(scenario_index, metric, &record);
    }

    /// After a request: applies its extractors and checks, records it. True when it failed.
    fn record(
        &mut self,
        scenario_index: usize,
        scenario: &ScenarioRun<P>,
        (metric, after): (usize, Option<u32>),
        step: &P::Step,
        mut exchange: Exchange,
        metrics: &Rc<RefCell<WorkerMetrics>>,
    ) -> bool {
        if let Some(slot) = self.session.take_unset() {
            if slot == onrush_script::SCRIPT_FAILED {
                // A template's script function failed: the request was not sent.
                if let Some(f) = onrush_script::worker::take_failure() {
                    exchange.record.failure = Some(script_failure(f));
                }
            } else {
                warn_unset(scenario, slot, metric);
            }
        }
        if let (Some(func), true) = (after, exchange.responded) {
            let who = self.who(scenario_index);
            let view = self.session.response();
            let result = onrush_script::worker::with(|e| {
                e.after(func, who, &mut self.vars, &checks::reply_of(&view))
            });
            if let Some(Err(f)) = result {
                onrush_script::worker::print(&f);
                if exchange.record.failure.is_none() {
                    exchange.record.failure = Some(script_failure(f));
                }
            }
        }
        let mut m = metrics.borrow_mut();
        if exchange.opened_connection {
            m.record_connection_opened(scenario_index);
        }
        let record = &mut exchange.record;
        if exchange.responded && (!step.extract().is_empty() || !step.checks().is_empty()) {
            let view = self.session.response();
            let ok = checks::apply(
                step.extract(),
                step.checks(),
                &view,
                record,
                &mut self.vars,
                (self.id, self.iteration, scenario_index as u32),
                &mut self.scratch,
                &mut self.values,
                &mut |check, passed| m.record_check(scenario_index, check, passed),
            );
            if !ok && record.failure.is_none() {
                // A `js` check that threw is a script's failure, not the response's.
                record.failure = Some(match onrush_script::worker::take_failure() {
                    Some(f) => script_failure(f),
                    None => FailureClass::CheckFailed,
                });
            }
        }
        for f in &mut self.frames {
            if let Frame::Group(g) = f {
                g.bytes_in += record.bytes_in;
                g.bytes_out += record.bytes_out;
            }
        }
        m.record_request(scenario_index, metric, record);
        m.sample(scenario_index, metric, record, self.id, self.iteration);
        if crate::debug::wanted() {
            let shown = crate::debug::Shown {
                scenario: scenario_index,
                metric,
                record,
                responded: exchange.responded,
                vu: self.id,
                iteration: self.iteration,
            };
            crate::debug::show(scenario, step, &self.session, shown, &self.vars);
        }
        if record.failure.is_some() {
            // The first few failures of each step and class, as examples for the results.
            let view = exchange.responded.then(|| self.session.response());
            let failed = failing::Failed {
                scenario: scenario_index,
                metric,
                record,
                vu: self.id,
                iteration: self.iteration,
            };
            failing::note(&mut m, scenario, step, failed, view.as_ref(), &self.vars);
        }
        record.failure.is_some()
    }

    /// A uniformly random duration in [min, max].
    fn pick(&mut self, min: Duration, max: Duration) -> Duration {
        if max <= min {
            return min;
        }
        let span = (max - min).as_nanos() as u64;
        min + Duration::from_nanos(self.vars.random_below(span + 1))
    }
}

/// A request on its way. When the run stops (Ctrl-C, a threshold, `stop_test`, the end of
/// `graceful_stop`) the VU's future is dropped mid-request, and so is this: it then records
/// the request as `interrupted`, so that what was attempted shows in the results. Costs
/// nothing on the normal path but a flag.
struct InFlight<'a> {
    metrics: &'a Rc<RefCell<WorkerMetrics>>,
    scenario: usize,
    metric: usize,
    start: Moment,
    /// The VU and its iteration, for `--samples`.
    vu: (u64, u64),
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // How long it had waited: a lower bound of its latency. The actual send is not known
        // here; for the open model's first request it is later than `start`.
        let waited = micros(self.start.elapsed());
        let record = RequestRecord {
            latency_us: waited,
            service_us: waited,
            connect_us: None,
            ttfb_us: None,
            bytes_in: 0,
            bytes_out: 0,
            status: 0,
            failure: Some(FailureClass::Interrupted),
            handshake: None,
        };
        if let Ok(mut m) = self.metrics.try_borrow_mut() {
            m.record_request(self.scenario, self.metric, &record);
            m.sample(self.scenario, self.metric, &record, self.vu.0, self.vu.1);
        }
    }
}

/// A script's failure as a failure class, its message kept as the class's example.
fn script_failure(f: onrush_script::Failure) -> FailureClass {
    let class = match f.kind {
        onrush_script::FailureKind::Error => FailureClass::ScriptError,
        onrush_script::FailureKind::Timeout => FailureClass::ScriptTimeout,
        onrush_script::FailureKind::Failed => FailureClass::ScriptFailed,
    };
    onrush_metrics::failure_examples::note(class, || f.message);
    class
}

fn record_group(scenario: usize, g: &GroupRun, metrics: &Rc<RefCell<WorkerMetrics>>) {
    let took = micros(g.started.elapsed());
    let record = RequestRecord {
        latency_us: took,
        service_us: took,
        connect_us: None,
        ttfb_us: None,
        bytes_in: g.bytes_in,
        bytes_out: g.bytes_out,
        status: 0,
        failure: g.failed.then_some(FailureClass::GroupFailed),
        handshake: None,
    };
    metrics
        .borrow_mut()
        .record_request(scenario, g.metric, &record);
}

/// `on_failure: stop_test`: asks the collector to stop the run (once).
fn request_stop<P: Protocol>(scenario: &ScenarioRun<P>, metric: usize) {
    if !scenario.stops.stop_test.swap(true, Ordering::Relaxed) {
        scenario.stops.note(
            &scenario.name,
            format!(
                "step {:?} failed and says `on_failure: stop_test`: stopping the test",
                scenario.metric_names[metric]
            ),
        );
    }
}

/// Prints once per run and variable that a request needed a variable that had no value.
fn warn_unset<P: Protocol>(scenario: &ScenarioRun<P>, slot: usize, metric: usize) {
    if !scenario.unset_warned[slot].swap(true, Ordering::Relaxed) {
        eprintln!(
            "warning: scenario {:?}, step {:?}: variable ${{{}}} has no value (not extracted yet, or its extractor found nothing); the request was not sent and counts as a `variable_unset` failure",
            scenario.name, scenario.metric_names[metric], scenario.vars[slot]
        );
    }
}
