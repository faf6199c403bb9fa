//! One worker thread: a `current_thread` runtime running this worker's share of every scenario.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use onrush_metrics::{Snapshot, WorkerMetrics};
use onrush_plan::LoadModel;
use onrush_protocol::{Moment, Protocol, RequestStart};
use tokio::sync::watch;
use tokio::task::{spawn_local, JoinHandle, LocalSet};
use tokio::time::sleep_until;

use super::prepare::Prepared;
use super::schedule::{Arrivals, VuRamp};
use super::vu::{Vu, VuState};
use crate::monitor::{current_tid, WorkerTids};
use crate::start::StartGate;
use crate::steer::{Steering, POLL};
use open::open;
use vu_set::VuSet;

mod open;
mod vu_set;
mod warm_up;

/// The snapshot of `second` from `worker`.
pub struct Message {
    pub worker: usize,
    pub second: u64,
    pub snapshot: Snapshot,
    /// The worker's last snapshot (its `second` is partial); nothing follows from it.
    pub last: bool,
    /// With the last snapshot: the first message of each failure class on this worker.
    pub failure_examples: Vec<(onrush_protocol::FailureClass, String)>,
}

pub struct Worker<P: Protocol> {
    /// This worker among every worker of the run (of every process of a distributed run):
    /// which VUs and arrivals are its.
    pub index: usize,
    /// This worker among this process's workers (its messages, its thread id slot).
    pub local_index: usize,
    /// Every worker of the run.
    pub count: usize,
    /// When the workers start, once warm (start.rs). The schedule's origin, the instant its
    /// time reads zero, is `join_at` before it (for a process that joins a run late, see
    /// `RunOptions::join_at`).
    pub gate: Arc<StartGate>,
    /// Where in the schedule this worker joins (`RunOptions::join_at`): it starts at
    /// `origin + join_at`, and its first second is the run's second it joined in.
    pub join_at: Duration,
    pub prepared: Arc<Prepared<P>>,
    pub messages: Sender<Message>,
    pub stop: watch::Receiver<bool>,
    pub tids: WorkerTids,
    /// `RunOptions::samples`.
    pub samples: Option<std::path::PathBuf>,
    /// `RunOptions::steering`.
    pub steering: Option<Arc<Steering>>,
}

/// Shared state of the scenario drivers of one worker.
struct Shared<P: Protocol> {
    worker: usize,
    workers: usize,
    start: Instant,
    /// Where in the schedule this worker joined (zero: at its start).
    join_at: Duration,
    prepared: Arc<Prepared<P>>,
    metrics: Rc<RefCell<WorkerMetrics>>,
    /// Per scenario: what its VUs on this worker share (the protocol's connection pools).
    protocol: Vec<P::Worker>,
    /// Per open-model scenario: its pool and warmed-up VUs, made ready before the start
    /// (worker/warm_up.rs, open.rs), taken by its driver.
    ready: RefCell<Vec<Option<open::Ready>>>,
    /// `RunOptions::steering`: looked at between iterations and arrivals, never per request.
    steering: Option<Arc<Steering>>,
}

impl<P: Protocol> Shared<P> {
    fn vu(&self, id: u64, s: usize) -> Vu<P> {
        let session = P::session(&self.prepared.protocol, s, id, &self.protocol[s]);
        self.vu_with(id, s, session)
    }

    /// VU `id` of scenario `s` with a session made already (warmed up).
    fn vu_with(&self, id: u64, s: usize, session: P::Session) -> Vu<P> {
        let scenario = &self.prepared.scenarios[s];
        let ends_at = scenario.load.duration().map(|d| self.start + d);
        Vu::new(id, scenario, session, ends_at)
    }
}

impl<P: Protocol> Worker<P> {
    pub fn run(mut self) {
        self.tids[self.local_index].store(current_tid(), std::sync::atomic::Ordering::Relaxed);
        // One JavaScript engine for all of this worker's VUs, when the plan has scripts.
        let engine = self.prepared.scripts.as_ref().and_then(|scripts| {
            let scenarios: Vec<(String, Vec<String>)> = self
                .prepared
                .scenarios
                .iter()
                .map(|s| (s.name.clone(), s.vars.clone()))
                .collect();
            match onrush_script::Engine::new(scripts, &scenarios) {
                Ok(engine) => Some(engine),
                Err(e) => {
                    eprintln!("error: worker {}: the plan's scripts did not start: {e}; its script steps, hooks and js checks fail", self.index);
                    None
                }
            }
        });
        onrush_script::worker::install(engine);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current_thread runtime builds");
        let metrics = Rc::new(RefCell::new(WorkerMetrics::new(&self.prepared.layout)));
        if let Some(path) = &self.samples {
            match onrush_metrics::SampleWriter::open(path, &self.prepared.layout) {
                Ok(w) => metrics.borrow_mut().set_samples(w),
                Err(e) => eprintln!(
                    "warning: worker {} cannot append samples to {}: {e}; its requests are not in it",
                    self.index,
                    path.display()
                ),
            }
        }
        let next_second = Rc::new(Cell::new(self.join_at.as_secs()));
        let protocol: Vec<P::Worker> = (0..self.prepared.scenarios.len())
            .map(|s| P::worker(&self.prepared.protocol, s))
            .collect();
        let local = LocalSet::new();
        local.block_on(&runtime, async {
            let (warm, warm_connections) = warm_up::warm_up(
                &self.prepared,
                &protocol,
                self.index,
                self.count,
                self.gate.warm_up_until,
                &metrics,
            )
            .await;
            // Blocks this thread until every worker is warm: nothing else runs on it yet.
            let start = self.gate.ready(warm_connections);
            let origin = start.checked_sub(self.join_at).unwrap_or(start);
            let shared = Rc::new(Shared {
                worker: self.index,
                workers: self.count,
                start: origin,
                join_at: self.join_at,
                prepared: self.prepared.clone(),
                metrics: metrics.clone(),
                protocol,
                ready: RefCell::new(Vec::new()),
                steering: self.steering.clone(),
            });
            // The warm VUs spawned (and parked, while this sleeps) before the start.
            let ready = warm
                .into_iter()
                .enumerate()
                .map(|(s, warm)| match self.prepared.scenarios[s].load {
                    LoadModel::Open { max_vus, .. } => Some(open::ready(&shared, s, max_vus, warm)),
                    _ => None,
                })
                .collect();
            *shared.ready.borrow_mut() = ready;
            sleep_until(start.into()).await;
            let ticker = spawn_local(ticker(
                self.local_index,
                origin,
                metrics.clone(),
                next_second.clone(),
                self.messages.clone(),
            ));
            // An open model's driver is polled in this future, not spawned (see
            // `all_drivers`); the closed models' drivers, which only start VUs and wait for
            // them, are tasks: polled here too, they would cost ~18 instructions per request.
            let mut open_drivers = Vec::new();
            let mut tasks: Vec<JoinHandle<()>> = Vec::new();
            for (s, scenario) in self.prepared.scenarios.iter().enumerate() {
                if matches!(scenario.load, LoadModel::Open { .. }) {
                    open_drivers.push(Box::pin(drive(shared.clone(), s)));
                } else {
                    tasks.push(spawn_local(drive(shared.clone(), s)));
                }
            }
            let all_done = async {
                tokio::join!(all_drivers(open_drivers), async {
                    for t in tasks {
                        let _ = t.await;
                    }
                });
            };
            let stop = self.stop.wait_for(|stop| *stop);
            tokio::select! {
                _ = all_done => {}
                _ = stop => {}
            }
            ticker.abort();
        });
        // Dropping the LocalSet cancels every VU still running; a request cut in flight
        // records itself as `interrupted` as it is dropped (vu.rs, InFlight), before the last
        // snapshot below.
        drop(local);
        let snapshot = metrics.borrow_mut().take_snapshot();
        let _ = self.messages.send(Message {
            worker: self.local_index,
            second: next_second.get(),
            snapshot,
            last: true,
            failure_examples: onrush_protocol::failure_examples::take(),
        });
    }
}

/// Runs open models' drivers to their end, polling each one in the caller's own future.
///
/// Why not one task per driver: the worker's future (the one its `LocalSet` runs until) is
/// polled before each batch of at most 61 of the set's tasks, whereas a task woken joins the
/// back of the run queue. When a burst of responses arrives (the target held them, then sent
/// them together), one epoll turn wakes up to 1,024 VU tasks; an open model's driver woken by
/// its timer in the same turn waited behind all of them, and each batch of arrivals it then
/// started sent it to the back again. Measured at 60,000/s against nginx on one worker: the
/// schedule lag's p99 was 20-60 ms in half of the seconds while the worker's CPU was 40% idle.
/// Polled here, a due arrival waits for at most one batch of tasks.
///
/// Each driver is polled whenever this future is, woken or not (allowed by `Future`'s
/// contract): a pending driver's poll is a check of its timer's readiness, once per batch.
async fn all_drivers<F: Future<Output = ()>>(mut drivers: Vec<Pin<Box<F>>>) {
    poll_fn(|cx| {
        drivers.retain_mut(|d| d.as_mut().poll(cx).is_pending());
        if drivers.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Sends a snapshot at every whole second since the start.
async fn ticker(
    worker: usize,
    start: Instant,
    metrics: Rc<RefCell<WorkerMetrics>>,
    next_second: Rc<Cell<u64>>,
    messages: Sender<Message>,
) {
    loop {
        let second = next_second.get();
        sleep_until((start + Duration::from_secs(second + 1)).into()).await;
        let snapshot = metrics.borrow_mut().take_snapshot();
        next_second.set(second + 1);
        if messages
            .send(Message {
                worker,
                second,
                snapshot,
                last: false,
                failure_examples: Vec::new(),
            })
            .is_err()
        {
            return;
        }
    }
}

async fn drive<P: Protocol>(shared: Rc<Shared<P>>, s: usize) {
    let scenario = &shared.prepared.scenarios[s];
    let bounded_by_iterations = matches!(
        scenario.load,
        LoadModel::ClosedIterations { .. } | LoadModel::SharedIterations { .. }
    );
    if bounded_by_iterations && !shared.join_at.is_zero() {
        // Joined late (a spare taking over a lost segment): how many of these iterations
        // are left is not known here, and running them all again would count them twice.
        return;
    }
    match &scenario.load {
        LoadModel::ClosedIterations {
            vus,
            iterations,
            ramp_up,
        } => closed_iterations(&shared, s, *vus, Iterations::PerVu(*iterations), *ramp_up).await,
        LoadModel::SharedIterations {
            vus,
            iterations,
            ramp_up,
        } => {
            // Split the total between the workers that have VUs, so VUs share a worker-local
            // budget and no counter crosses threads.
            let workers = shared.workers.min(*vus as usize) as u64;
            let w = shared.worker as u64;
            if w >= workers {
                return;
            }
            let share = iterations / workers + u64::from(w < iterations % workers);
            let budget = Rc::new(Cell::new(share));
            closed_iterations(&shared, s, *vus, Iterations::Shared(budget), *ramp_up).await
        }
        LoadModel::ClosedStages { start_vus, stages } => {
            closed_stages(&shared, s, VuRamp::new(*start_vus, stages)).await
        }
        LoadModel::Open {
            start_rate,
            stages,
            max_vus,
            slack,
            ..
        } => {
            let arrivals = Arrivals::new(*start_rate, stages);
            let ready = shared.ready.borrow_mut()[s]
                .take()
                .expect("an open scenario is made ready before the start");
            open(&shared, s, arrivals, *max_vus, *slack, ready).await
        }
    }
}

/// Counts this worker's active VUs of one scenario and reports the gauge on change.
struct ActiveVus {
    count: Cell<u32>,
}

impl ActiveVus {
    fn change<P: Protocol>(&self, shared: &Shared<P>, s: usize, up: bool) {
        let n = if up {
            self.count.get() + 1
        } else {
            self.count.get() - 1
        };
        self.count.set(n);
        shared.metrics.borrow_mut().set_active_vus(s, n);
    }
}

/// How many iterations the VUs of `closed_iterations` run.
#[derive(Clone)]
enum Iterations {
    PerVu(u64),
    /// A budget this worker's VUs take from until it is empty.
    Shared(Rc<Cell<u64>>),
}

impl Iterations {
    /// Takes one iteration; `done` is how many this VU ran already.
    fn take(&self, done: u64) -> bool {
        match self {
            Iterations::PerVu(n) => done < *n,
            Iterations::Shared(left) => {
                let n = left.get();
                left.set(n.saturating_sub(1));
                n > 0
            }
        }
    }
}

/// Fixed VUs running a number of iterations; VU k starts at k × ramp_up / vus.
async fn closed_iterations<P: Protocol>(
    shared: &Rc<Shared<P>>,
    s: usize,
    vus: u32,
    iterations: Iterations,
    ramp_up: Duration,
) {
    let active = Rc::new(ActiveVus {
        count: Cell::new(0),
    });
    let mut set = VuSet::new();
    for k in (shared.worker as u32..vus).step_by(shared.workers) {
        let shared = shared.clone();
        let active = active.clone();
        let iterations = iterations.clone();
        set.push(async move {
            let delay = ramp_up.mul_f64(k as f64 / vus as f64);
            sleep_until((shared.start + delay).into()).await;
            let scenario = &shared.prepared.scenarios[s];
            let mut vu = shared.vu(k as u64 + 1, s);
            active.change(&shared, s, true);
            scenario.vus_started.fetch_add(1, Ordering::Relaxed);
            while vu.state == VuState::Running
                && !scenario.stopped.load(Ordering::Relaxed)
                && iterations.take(vu.iteration)
            {
                if let Some(steering) = &shared.steering {
                    while steering.paused() {
                        tokio::time::sleep(POLL).await;
                    }
                }
                vu.run_iteration(
                    s,
                    scenario,
                    RequestStart::now(Moment::now()),
                    &shared.metrics,
                )
                .await;
            }
            active.change(&shared, s, false);
        });
    }
    set.run().await;
}

/// The VU count follows a ramp; VU k runs while the ramp is above k and finishes its iteration
/// when the ramp drops below it. At the end of the stages VUs start no new request (vu.rs);
/// requests in flight may finish for `graceful_stop`, then they are cut.
///
/// A run with steering may set the scenario's VUs live (steer.rs): the ramp is then replaced
/// by that count, and VUs above the ramp's highest are added to the set as they are asked for.
async fn closed_stages<P: Protocol>(shared: &Rc<Shared<P>>, s: usize, ramp: VuRamp) {
    let active = Rc::new(ActiveVus {
        count: Cell::new(0),
    });
    let mut set = VuSet::new();
    let workers = shared.workers as u32;
    // The next VU this worker would add (its VUs are k = worker, worker + workers, ...).
    let mut next_k = shared.worker as u32;
    let mut add_up_to = |set: &mut VuSet<_>, vus: u32| {
        while next_k < vus {
            set.push(closed_stage_vu(
                shared.clone(),
                active.clone(),
                ramp.clone(),
                s,
                next_k,
            ));
            next_k += workers;
        }
    };
    add_up_to(&mut set, ramp.max_vus());
    let graceful_stop = shared.prepared.scenarios[s].graceful_stop;
    // Those still running at the deadline are cancelled as the set is dropped: a request cut
    // in flight records itself as `interrupted` (vu.rs, `InFlight`).
    let deadline = shared.start + ramp.duration() + graceful_stop;
    let run = async {
        let Some(steering) = shared.steering.clone() else {
            return set.run().await;
        };
        let scenario = &shared.prepared.scenarios[s];
        let end = shared.start + ramp.duration();
        loop {
            // `VuSet::run` keeps its state in the set: leaving it to add VUs loses nothing.
            // Its VUs all ended (or this worker had none yet), VUs may still be asked for
            // until the scenario's end.
            tokio::select! {
                _ = set.run() => {
                    if scenario.stopped.load(Ordering::Relaxed) || Instant::now() >= end {
                        return;
                    }
                    tokio::time::sleep(POLL).await;
                }
                _ = tokio::time::sleep(POLL) => {}
            }
            if let Some(vus) = steering.vus(s) {
                add_up_to(&mut set, vus);
            }
        }
    };
    let _ = tokio::time::timeout_at(deadline.into(), run).await;
}

/// VU `k` of a closed model over stages (see [`closed_stages`]).
async fn closed_stage_vu<P: Protocol>(
    shared: Rc<Shared<P>>,
    active: Rc<ActiveVus>,
    ramp: VuRamp,
    s: usize,
    k: u32,
) {
    // The ramp's clock as moments: the VUs compare them with a request's start.
    let start = Moment::from_instant(shared.start);
    let end = start + ramp.duration();
    let scenario = &shared.prepared.scenarios[s];
    let steering = shared.steering.clone();
    let mut vu: Option<Vu<P>> = None;
    let mut count_start = scenario.vu_expected(k);
    // Until when the ramp is known to keep this VU running (a flat stage): no ramp
    // arithmetic per iteration then (`VuRamp::vus_steady`).
    let mut running_until: Option<Moment> = None;
    loop {
        let now = Moment::now();
        if now >= end
            || scenario.stopped.load(Ordering::Relaxed)
            || vu.as_ref().is_some_and(|v| v.state == VuState::Stopped)
        {
            break;
        }
        // The VUs set live, if any, replace the ramp.
        let live_vus = match &steering {
            Some(steering) => {
                if steering.paused() {
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                steering.vus(s)
            }
            None => None,
        };
        let running = match (live_vus, running_until) {
            (Some(vus), _) => k < vus,
            (None, Some(until)) if now < until => true,
            (None, _) => {
                let at = now - start;
                let (vus, steady) = ramp.vus_steady(at);
                running_until = (vus > k && steady > at).then(|| start + steady);
                vus > k
            }
        };
        if running {
            // A VU made just now: its making is in the latency (from `now`), as it was,
            // but not in the service time, so the session reads the clock itself.
            let request_start = if vu.is_some() {
                RequestStart::now(now)
            } else {
                RequestStart::scheduled(now)
            };
            let vu = vu.get_or_insert_with(|| {
                active.change(&shared, s, true);
                shared.vu(k as u64 + 1, s)
            });
            if count_start {
                count_start = false;
                scenario.vus_started.fetch_add(1, Ordering::Relaxed);
            }
            vu.run_iteration(s, scenario, request_start, &shared.metrics)
                .await;
        } else {
            if vu.take().is_some() {
                active.change(&shared, s, false);
            }
            let next = if live_vus.is_some() {
                None
            } else {
                ramp.next_active(k, now - start)
            };
            match (next, steering.is_some()) {
                (Some(next), false) => sleep_until((shared.start + next).into()).await,
                (None, false) => break,
                // Steered: the count may change any time; look again soon.
                (Some(next), true) => {
                    let wake = (shared.start + next).min(now.to_instant() + POLL);
                    sleep_until(wake.into()).await
                }
                (None, true) => tokio::time::sleep(POLL).await,
            }
        }
    }
    if vu.is_some() {
        active.change(&shared, s, false);
    }
}
