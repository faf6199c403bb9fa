//! The open model's driver: arrivals follow the schedule whatever the target does.
//!
//! An arrival must be cheap, because at 5,000/s the worker sleeps between arrivals and every
//! one of them pays for its own wake-up. So:
//! - **VUs wait for their next arrival.** Each VU is one long-lived task parked on its
//!   [`Slot`]; an arrival hands the intended start to an idle VU and wakes it (a push on the
//!   worker's run queue), instead of spawning a task per arrival (an allocation and a copy of
//!   the whole iteration future, several KiB).
//! - **Every due arrival starts in one wake-up.** After a wake-up the driver starts all
//!   arrivals whose time has come, up to [`BATCH`], before it sleeps again; when it is behind
//!   it sleeps not at all, and yields only between batches so that the VUs and the ticker run.
//! - **Arrivals due within the slack start with them** (`load.arrival_slack`, default 1 ms):
//!   a wake-up also starts the arrivals scheduled up to the slack later, so that at 5,000/s one
//!   wake-up (and one wake-up for their responses) serves five arrivals instead of one. On this
//!   project's VMs a sleep and wake-up of the worker costs ~40 µs of CPU, more than a request.
//!   Such an arrival is timed from its actual start, so no latency is inflated; the load keeps
//!   its rate and count, its arrivals moved earlier by less than the slack.
//! - **The timer is armed only for a deadline in the future** (pacer.rs: a timerfd, no read).
//!
//! What makes the model right is kept: latency is measured from the intended start (the VU
//! gets it with the arrival), the arrival count is exact, an arrival that finds every VU of the
//! worker busy is counted as dropped, never delayed, and the schedule lag of each started
//! arrival is recorded.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::task::{Poll, Waker};
use std::time::Duration;

use onrush_protocol::turn::in_turns;
use onrush_protocol::{Moment, Protocol, RequestStart};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::sleep_until;

use super::Shared;
use crate::pacer::PreciseTimer;
use crate::schedule::Arrivals;
use crate::steer::POLL;
use crate::vu::{Vu, VuState};

/// Arrivals started per wake-up before the driver yields to the VUs. Large enough that a worker
/// behind schedule catches up in few passes, small enough that the requests just started (and
/// the ticker's snapshot) are not held back by a long batch: 64 starts take ~10-20 µs.
const BATCH: u32 = 64;

/// Where a parked VU waits for its next arrival.
#[derive(Default)]
struct Slot {
    /// The intended start of the arrival handed to this VU.
    next: Cell<Option<Moment>>,
    waker: Cell<Option<Waker>>,
}

impl Slot {
    fn hand(&self, intended: Moment) {
        self.next.set(Some(intended));
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// This worker's VUs of one open-model scenario.
struct Pool {
    idle: RefCell<Vec<Rc<Slot>>>,
    in_flight: Cell<u32>,
    /// The schedule has ended: parked VUs leave instead of waiting.
    closing: Cell<bool>,
    all_idle: Notify,
}

impl Pool {
    /// Waits for the next arrival of `slot`; None when the schedule has ended.
    async fn next_arrival(&self, slot: &Slot) -> Option<Moment> {
        poll_fn(|cx| {
            if let Some(intended) = slot.next.take() {
                return Poll::Ready(Some(intended));
            }
            if self.closing.get() {
                return Poll::Ready(None);
            }
            slot.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }

    fn set_in_flight<P: Protocol>(&self, shared: &Shared<P>, s: usize, n: u32) {
        self.in_flight.set(n);
        shared.metrics.borrow_mut().set_active_vus(s, n);
    }
}

/// This worker's share of an open-model scenario made ready before the start: its pool, and
/// the VUs warmed up (`load.warm_up`, worker/warm_up.rs) spawned and parked, connected, so
/// that the schedule's first instants pay neither for their connects nor for their tasks.
pub(super) struct Ready {
    pool: Rc<Pool>,
    vus: JoinSet<()>,
    created: u32,
}

/// This worker's share of `total` of an open-model scenario's VUs, split as its `max_vus`
/// are: only as many workers are used as there are VUs, so no used worker has a share of zero.
/// `(workers used, share)`; a share of 0: the worker has none.
pub(super) fn share(total: u32, max_vus: u32, worker: usize, workers: usize) -> (usize, u32) {
    let used = workers.min(max_vus.max(1) as usize);
    if worker >= used {
        return (used, 0);
    }
    let n = total / used as u32 + u32::from((worker as u32) < total % used as u32);
    (used, n)
}

/// The id of a worker's `k`-th VU (from 0) of a scenario spread over `used` workers: the
/// workers' VUs interleave, 1, 2, 3, ... over the whole run.
pub(super) fn vu_id(k: u32, used: usize, worker: usize) -> u64 {
    k as u64 * used as u64 + worker as u64 + 1
}

/// This worker's share of `max_vus`.
fn my_share<P: Protocol>(shared: &Shared<P>, max_vus: u32) -> (usize, u32) {
    share(max_vus, max_vus, shared.worker, shared.workers)
}

/// Called before the start: the VUs of the `warm` sessions (ids first, in the order of the
/// VUs the driver creates later) spawned, parked on the pool.
pub(super) fn ready<P: Protocol>(
    shared: &Rc<Shared<P>>,
    s: usize,
    max_vus: u32,
    warm: Vec<P::Session>,
) -> Ready {
    let (workers, my_max) = my_share(shared, max_vus);
    let pool = Rc::new(Pool {
        idle: RefCell::new(Vec::new()),
        in_flight: Cell::new(0),
        closing: Cell::new(false),
        all_idle: Notify::new(),
    });
    let mut vus = JoinSet::new();
    let mut created = 0u32;
    for session in warm.into_iter().take(my_max as usize) {
        let vu = shared.vu_with(vu_id(created, workers, shared.worker), s, session);
        created += 1;
        let slot = Rc::new(Slot::default());
        pool.idle.borrow_mut().push(slot.clone());
        vus.spawn_local(in_turns(run_vu(
            shared.clone(),
            pool.clone(),
            s,
            vu,
            slot,
            None,
        )));
    }
    Ready { pool, vus, created }
}

/// An iteration in flight when the graceful stop ends is cut then, not when the whole run ends
/// (another scenario may go on).
pub(super) async fn open<P: Protocol>(
    shared: &Rc<Shared<P>>,
    s: usize,
    mut arrivals: Arrivals,
    max_vus: u32,
    slack: Duration,
    ready: Ready,
) {
    let (workers, my_max) = my_share(shared, max_vus);
    if my_max == 0 {
        return;
    }
    let scenario = &shared.prepared.scenarios[s];
    let Ready {
        pool,
        mut vus,
        mut created,
    } = ready;
    let mut timer = PreciseTimer::new().ok();
    let mut cursor = 0;
    // This worker's arrivals are i = worker, worker + workers, ...; a worker that joins late
    // starts with the first of them due at or after the time it joins.
    let first = arrivals.first_at_or_after(shared.join_at);
    let mut i =
        first + (shared.worker as u64 + workers as u64 - first % workers as u64) % workers as u64;
    let end = shared.start + arrivals.duration();
    // The schedule as moments, the clock requests are timed with; the timers take instants.
    let start_at = Moment::from_instant(shared.start);
    let end_at = start_at + arrivals.duration();
    let mut total = arrivals.count();
    let mut next = arrivals.time_of(i, &mut cursor);
    let steering = shared.steering.clone();
    let mut seen = steering.as_ref().map_or(0, |st| st.generation());
    'schedule: while let Some(offset) = next {
        if let Some(st) = steering.as_ref().filter(|st| st.generation() != seen) {
            // Paused, resumed or a new rate (steer.rs): the schedule goes on from now.
            seen = st.generation();
            while st.paused() {
                if Moment::now() >= end_at {
                    break 'schedule;
                }
                tokio::time::sleep(POLL).await;
                seen = st.generation();
            }
            let now = Moment::now();
            if let Some(rate) = st.rate(s) {
                arrivals = arrivals.switched(rate, now.saturating_duration_since(start_at));
                total = arrivals.count();
            }
            // Arrivals due while paused are not made up: this worker's first at or after now.
            cursor = 0;
            let first = arrivals.first_at_or_after(now.saturating_duration_since(start_at));
            i = first
                + (shared.worker as u64 + workers as u64 - first % workers as u64) % workers as u64;
            next = arrivals.time_of(i, &mut cursor);
            continue 'schedule;
        }
        let intended = start_at + offset;
        let mut now = Moment::now();
        if intended > now {
            let mut wake = shared.start + offset;
            if steering.is_some() {
                // A change must not wait for a far-off arrival (a low rate).
                wake = wake.min(now.to_instant() + POLL);
            }
            match timer.as_mut() {
                Some(timer) => {
                    if timer.sleep_until(wake).await.is_err() {
                        sleep_until(wake.into()).await;
                    }
                }
                None => sleep_until(wake.into()).await,
            }
            now = Moment::now();
        }
        // Every arrival due by now (or within the slack), oldest first.
        let mut started = 0;
        let horizon = now + slack;
        while let Some(offset) = next {
            let intended = start_at + offset;
            if intended > horizon || started == BATCH {
                break;
            }
            if scenario.stopped.load(Ordering::Relaxed) {
                // Its unique test data ran out: the scenario is over.
                break 'schedule;
            }
            if now >= end_at {
                // The scenario's time is up with arrivals still unstarted (the worker fell
                // behind): they are dropped and counted, not run after the end.
                let left = total.saturating_sub(i).div_ceil(workers as u64);
                shared
                    .metrics
                    .borrow_mut()
                    .record_dropped_iterations(s, left);
                break 'schedule;
            }
            started += 1;
            i += workers as u64;
            next = arrivals.time_of(i, &mut cursor);
            // An arrival started early (within the slack) is timed from now, a late one from its
            // scheduled start.
            let start = intended.min(now);
            let idle = pool.idle.borrow_mut().pop();
            if idle.is_none() && created == my_max {
                shared.metrics.borrow_mut().record_dropped_iteration(s);
                continue;
            }
            shared
                .metrics
                .borrow_mut()
                .record_schedule_lag(s, now.micros_since(intended));
            pool.set_in_flight(shared, s, pool.in_flight.get() + 1);
            match idle {
                Some(slot) => slot.hand(start),
                None => {
                    let vu = shared.vu(vu_id(created, workers, shared.worker), s);
                    created += 1;
                    let slot = Rc::new(Slot::default());
                    vus.spawn_local(in_turns(run_vu(
                        shared.clone(),
                        pool.clone(),
                        s,
                        vu,
                        slot,
                        Some(start),
                    )));
                }
            }
        }
        if started == BATCH {
            // Behind schedule: let the VUs just handed an arrival (and the ticker) run before
            // the next batch.
            tokio::task::yield_now().await;
        }
    }
    pool.closing.set(true);
    for slot in pool.idle.borrow_mut().drain(..) {
        if let Some(waker) = slot.waker.take() {
            waker.wake();
        }
    }
    let deadline = end + scenario.graceful_stop;
    while pool.in_flight.get() > 0 {
        if tokio::time::timeout_at(deadline.into(), pool.all_idle.notified())
            .await
            .is_err()
        {
            break;
        }
    }
    vus.abort_all();
    shared.metrics.borrow_mut().set_active_vus(s, 0);
}

/// One VU: runs the arrivals it is handed (from `first`, or from the first handed to its
/// `slot` when it starts parked) until the schedule ends or the VU stops.
async fn run_vu<P: Protocol>(
    shared: Rc<Shared<P>>,
    pool: Rc<Pool>,
    s: usize,
    mut vu: Vu<P>,
    slot: Rc<Slot>,
    mut first: Option<Moment>,
) {
    let scenario = &shared.prepared.scenarios[s];
    loop {
        let intended = match first.take() {
            Some(intended) => intended,
            None => match pool.next_arrival(&slot).await {
                Some(next) => next,
                None => return,
            },
        };
        vu.run_iteration(
            s,
            scenario,
            RequestStart::scheduled(intended),
            &shared.metrics,
        )
        .await;
        let running = vu.state == VuState::Running;
        if running {
            pool.idle.borrow_mut().push(slot.clone());
        }
        pool.set_in_flight(&shared, s, pool.in_flight.get() - 1);
        if pool.in_flight.get() == 0 {
            pool.all_idle.notify_one();
        }
        if !running {
            return;
        }
    }
}
