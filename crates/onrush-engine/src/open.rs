//! The open model's driver: arrivals follow the schedule whatever the target does.
//!
//! An arrival used to cost a timerfd arm, an epoll wake-up, a task spawn and a VU checkout of
//! its own. Here a VU is a task that lives as long as its scenario and waits for its next
//! arrival, and one pacer per scenario and worker hands arrivals out:
//! - every arrival already due when the pacer runs is handed out in the same pass, so a
//!   worker that is busy starts several arrivals per wake-up instead of yielding between them;
//! - the timer is armed only when the next arrival is further away than a wake-up costs
//!   ([`SPIN`]); a shorter gap is waited by yielding to the runtime, which runs the VUs' I/O
//!   meanwhile;
//! - a VU that finishes its iteration takes the next arrival itself when it is already due,
//!   with no wake-up of the pacer nor of a parked VU.
//!
//! What makes it right is unchanged: an arrival that finds every VU of this worker busy is
//! counted as dropped, never delayed; each start's lag behind its intended time is recorded;
//! the first request of an iteration is timed from the intended start.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use onrush_protocol::Protocol;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::pacer::PreciseTimer;
use super::schedule::Arrivals;
use super::vu::{Vu, VuState};
use super::worker::Shared;

/// Gaps shorter than this are waited by yielding instead of arming the timer: a timerfd
/// wake-up costs a `timerfd_settime`, an epoll return and a `read`, and on these machines
/// arrives tens of microseconds late, so for shorter gaps the timer is both dearer and later.
const SPIN: Duration = Duration::from_micros(30);

/// When the scenario's time is up, an arrival still unstarted is started only if it is at most
/// this late; later ones are dropped and counted (a worker far behind does not run past the
/// end). Without the slack, the last arrival (intended a few µs before the end) would be
/// dropped whenever the wake-up for it came those few µs late.
const END_SLACK: Duration = Duration::from_millis(50);

/// This worker's share of a scenario's arrivals (indices w, w+W, w+2W…), in order.
pub(crate) struct Queue {
    arrivals: Arrivals,
    cursor: usize,
    index: u64,
    step: u64,
    start: Instant,
    /// The intended start of arrival `index`, None when the schedule has no more for us.
    next: Option<Instant>,
}

impl Queue {
    pub(crate) fn new(arrivals: Arrivals, first: u64, step: u64, start: Instant) -> Self {
        let mut q = Queue {
            arrivals,
            cursor: 0,
            index: first,
            step,
            start,
            next: None,
        };
        q.next = q.time(first);
        q
    }

    fn time(&mut self, i: u64) -> Option<Instant> {
        self.arrivals
            .time_of(i, &mut self.cursor)
            .map(|offset| self.start + offset)
    }

    /// The intended start of the next arrival.
    pub(crate) fn peek(&self) -> Option<Instant> {
        self.next
    }

    /// Takes the next arrival.
    pub(crate) fn pop(&mut self) -> Option<Instant> {
        let at = self.next?;
        self.index += self.step;
        self.next = self.time(self.index);
        Some(at)
    }

    /// Takes the next arrival if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Instant> {
        match self.next {
            Some(at) if at <= now => self.pop(),
            _ => None,
        }
    }
}

/// A VU task waiting for its next arrival: the pacer puts the intended start in `at` and wakes
/// it.
#[derive(Default)]
struct Parked {
    at: Cell<Option<Instant>>,
    waker: Cell<Option<Waker>>,
}

impl Parked {
    fn hand(&self, at: Instant) {
        self.at.set(Some(at));
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// Resolves to the intended start the pacer handed to a parked VU.
struct NextArrival<'a>(&'a Parked);

impl Future for NextArrival<'_> {
    type Output = Instant;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Instant> {
        match self.0.at.take() {
            Some(at) => Poll::Ready(at),
            None => {
                self.0.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        }
    }
}

/// What the pacer and the VU tasks of one open scenario on one worker share.
struct Open<P: Protocol> {
    shared: Rc<Shared<P>>,
    s: usize,
    queue: RefCell<Queue>,
    /// Parked VUs, the most recently parked on top (its connection and caches are warm).
    idle: RefCell<Vec<Rc<Parked>>>,
    in_flight: Cell<u32>,
    all_idle: Notify,
    /// When the scenario's time is up.
    end: Instant,
}

impl<P: Protocol> Open<P> {
    fn stopped(&self) -> bool {
        self.shared.prepared.scenarios[self.s]
            .stopped
            .load(Ordering::Relaxed)
    }

    /// An arrival is given to a VU: it counts as in flight from now, not from when the VU
    /// task next runs, so that the end does not take a VU woken but not yet polled for idle.
    fn claim(&self) {
        let n = self.in_flight.get() + 1;
        self.in_flight.set(n);
        self.shared.metrics.borrow_mut().set_active_vus(self.s, n);
    }

    /// The VU starts the iteration intended at `at`: its lag, measured when it really starts.
    fn begin(&self, at: Instant) {
        let lag = Instant::now().saturating_duration_since(at);
        self.shared
            .metrics
            .borrow_mut()
            .record_schedule_lag(self.s, lag.as_micros() as u64);
    }

    fn end_iteration(&self) {
        let n = self.in_flight.get() - 1;
        self.in_flight.set(n);
        self.shared.metrics.borrow_mut().set_active_vus(self.s, n);
        if n == 0 {
            self.all_idle.notify_one();
        }
    }

    /// The next arrival, if it is due, for a VU that has just finished an iteration. Past the
    /// end (or once the scenario stopped) the pacer decides alone what is started or dropped.
    fn take_due(&self) -> Option<Instant> {
        let now = Instant::now();
        if now >= self.end || self.stopped() {
            return None;
        }
        let at = self.queue.borrow_mut().pop_due(now)?;
        self.claim();
        Some(at)
    }
}

/// One VU: runs the arrival it was created for, then each one handed to it or found due.
async fn vu_task<P: Protocol>(open: Rc<Open<P>>, mut vu: Vu<P>, first: Instant) {
    let parked = Rc::new(Parked::default());
    let scenario = &open.shared.prepared.scenarios[open.s];
    let mut at = first;
    loop {
        open.begin(at);
        vu.run_iteration(open.s, scenario, at, &open.shared.metrics)
            .await;
        open.end_iteration();
        if vu.state != VuState::Running {
            return;
        }
        at = match open.take_due() {
            Some(due) => due,
            None => {
                open.idle.borrow_mut().push(parked.clone());
                NextArrival(&parked).await
            }
        };
    }
}

/// Open model: arrivals follow the schedule whatever the target does. An arrival that finds all
/// of this worker's VUs busy is counted as dropped, never delayed. At the end, iterations in
/// flight start no new request; their requests in flight may finish for `graceful_stop`.
pub(crate) async fn open<P: Protocol>(
    shared: &Rc<Shared<P>>,
    s: usize,
    arrivals: Arrivals,
    max_vus: u32,
) {
    // Use only as many workers as there are VUs, so no worker has a share of zero VUs.
    let workers = shared.workers.min(max_vus.max(1) as usize);
    if shared.worker >= workers {
        return;
    }
    let my_max =
        max_vus / workers as u32 + u32::from((shared.worker as u32) < max_vus % workers as u32);
    let scenario_len = arrivals.duration();
    let open = Rc::new(Open {
        shared: shared.clone(),
        s,
        queue: RefCell::new(Queue::new(
            arrivals,
            shared.worker as u64,
            workers as u64,
            shared.start,
        )),
        idle: RefCell::new(Vec::new()),
        in_flight: Cell::new(0),
        all_idle: Notify::new(),
        end: shared.start + scenario_len,
    });
    // The VU tasks, so that those still running when the graceful stop ends are cut then,
    // not when the whole run ends (another scenario may go on).
    let mut vus = JoinSet::new();
    let mut timer = PreciseTimer::new().ok();
    let mut created = 0u32;
    // The arrival the pacer yielded once for, finding no free VU: after that yield it gets a new
    // VU, or is dropped when there are max_vus already.
    let mut waited_for: Option<Instant> = None;
    'pace: loop {
        if open.stopped() {
            // Its unique test data ran out: the scenario is over.
            break;
        }
        let now = Instant::now();
        let late_end = now >= open.end;
        let mut dropped = 0u64;
        // Every arrival due by now, in one pass.
        loop {
            // (Read into a local first: a borrow in the `while let` head would last the body.)
            let head = open.queue.borrow().peek();
            let Some(at) = head.filter(|at| *at <= now) else {
                break;
            };
            if late_end && now - at > END_SLACK {
                // The scenario's time is up and the worker is far behind: not run after the end.
                open.queue.borrow_mut().pop();
                dropped += 1;
                continue;
            }
            let parked = open.idle.borrow_mut().pop();
            if let Some(parked) = parked {
                open.queue.borrow_mut().pop();
                open.claim();
                parked.hand(at);
                waited_for = None;
            } else if waited_for != Some(at) && open.in_flight.get() > 0 {
                // Every VU is busy, but some may have finished in I/O not yet polled: one
                // yield lets them, and one that frees up takes the arrival itself. Without it,
                // a worker that fell behind would meet a whole batch of due arrivals with new
                // VUs (each a new connection, which puts it further behind) or drops, where
                // VUs finishing a few µs later could have run them.
                waited_for = Some(at);
                break;
            } else if created < my_max {
                open.queue.borrow_mut().pop();
                open.claim();
                created += 1;
                let id = (created as u64 - 1) * workers as u64 + shared.worker as u64 + 1;
                let vu = shared.vu(id, s);
                vus.spawn_local(vu_task(open.clone(), vu, at));
                waited_for = None;
            } else {
                open.queue.borrow_mut().pop();
                dropped += 1;
                waited_for = None;
            }
        }
        if dropped > 0 {
            shared
                .metrics
                .borrow_mut()
                .record_dropped_iterations(s, dropped);
        }
        // Finished VU tasks (stopped VUs) are reaped so that the set holds only live ones.
        while vus.try_join_next().is_some() {}
        let Some(next) = open.queue.borrow().peek() else {
            break 'pace;
        };
        if next <= Instant::now() + SPIN {
            tokio::task::yield_now().await;
            continue;
        }
        match timer.as_mut() {
            Some(timer) => {
                if timer.sleep_until(next).await.is_err() {
                    tokio::time::sleep_until(next.into()).await;
                }
            }
            None => tokio::time::sleep_until(next.into()).await,
        }
    }
    let deadline = open.end + shared.prepared.scenarios[s].graceful_stop;
    while open.in_flight.get() > 0 {
        if tokio::time::timeout_at(deadline.into(), open.all_idle.notified())
            .await
            .is_err()
        {
            break;
        }
    }
    vus.abort_all();
    // Dropping the parked VUs' futures ends them; the last of them drops `open`.
    shared.metrics.borrow_mut().set_active_vus(s, 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use onrush_plan::RateStage;

    #[test]
    fn a_queue_hands_out_its_workers_share_in_order_and_only_when_due() {
        let start = Instant::now();
        let stage = RateStage {
            per_second: 1000.0,
            over: Duration::from_millis(10),
        };
        // Worker 1 of 3: arrivals 1, 4, 7 of the ten at 0, 1, ... 9 ms.
        let mut q = Queue::new(Arrivals::new(1000.0, &[stage]), 1, 3, start);
        let ms = |n: u64| start + Duration::from_millis(n);
        assert_eq!(q.peek(), Some(ms(1)));
        assert_eq!(q.pop_due(start), None, "not due yet");
        assert_eq!(q.pop_due(ms(5)), Some(ms(1)));
        assert_eq!(q.pop_due(ms(5)), Some(ms(4)));
        assert_eq!(q.pop_due(ms(5)), None);
        assert_eq!(q.pop(), Some(ms(7)));
        assert_eq!(q.peek(), None, "arrival 10 is past the schedule");
        assert_eq!(q.pop(), None);
    }
}
