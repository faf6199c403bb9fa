//! A closed model's VUs on one worker, run as futures of the one task that awaits
//! [`VuSet::run`] rather than as a task each.
//!
//! Why: a keep-alive VU waits on its connection between requests, so each request is one
//! wake-up and one poll of the VU. As a task of the worker's `LocalSet`, that wake-up and poll
//! went through tokio's task machinery (the task's state word, the run queue, the owner
//! check). futures-util's `FuturesUnordered` did it for ~130 user instructions less per
//! keep-alive request, but unlinks and relinks each future from its list of all futures around
//! every poll; here it is a flag, a push on a shared list and a poll with a waker made once per
//! VU, ~130 less again (callgrind, worker thread: ~3,590 as tasks, ~3,460 with
//! `FuturesUnordered`, ~3,330 here; docs/benchmarks.md, "VUs as futures of one task").
//!
//! What a task gave and the set keeps:
//! - **A VU that panics ends alone**: its panic is caught, as tokio catches a task's, and the
//!   other VUs go on.
//! - **Dropping the set cancels every VU still running**, as dropping the `LocalSet` cancels
//!   its tasks (a request cut in flight records itself as `interrupted`: vu.rs, `InFlight`).
//! - **tokio's co-operative budget still bounds a poll**: the VUs share their task's budget,
//!   and once it is spent the VUs still ready wait for the task's next poll, the task having
//!   yielded to the rest of the worker (the ticker, the other scenarios' tasks), as tasks
//!   preempted by their budget would.

use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use onrush_protocol::turn::Turn;

/// The VUs of one scenario on this worker.
pub(super) struct VuSet<F> {
    /// Indexed by the VU's place in the set (`VuWake::index`).
    vus: Vec<Slot<F>>,
    ready: Arc<Ready>,
    /// VUs not ended yet.
    running: usize,
    /// The VUs taken from `ready`, polled in order; those from `next` on were left when the
    /// budget ran out, and go first at the next poll, the VUs woken since after them (no copy
    /// of the rest: with 100,000 VUs started at once, moving it back to `ready` at every poll
    /// was quadratic). A VU is in it at most twice (polled, and woken again since).
    batch: Vec<u32>,
    next: usize,
}

/// One VU of the set.
struct Slot<F> {
    /// `None` once the VU has ended.
    future: Option<Pin<Box<F>>>,
    wake: Arc<VuWake>,
    /// Made once from `wake`: tokio's readiness keeps it while it `will_wake` the one it is
    /// given, so no clone per request.
    waker: Waker,
}

/// The VUs woken since the set last took them, and the task to wake when there are some.
#[derive(Default)]
struct Ready {
    inner: Mutex<ReadyInner>,
}

#[derive(Default)]
struct ReadyInner {
    vus: Vec<u32>,
    task: Option<Waker>,
}

impl Ready {
    fn lock(&self) -> MutexGuard<'_, ReadyInner> {
        // A panic while the lock is held cannot leave the list inconsistent (a push).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One VU's waker: wakes the set's task with the VU on its list (once until it is polled).
struct VuWake {
    index: u32,
    queued: AtomicBool,
    ready: Arc<Ready>,
}

impl Wake for VuWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut ready = self.ready.lock();
        ready.vus.push(self.index);
        // The first VU since the set last looked: the task is not woken yet.
        if ready.vus.len() == 1 {
            if let Some(task) = &ready.task {
                task.wake_by_ref();
            }
        }
    }
}

impl<F: Future<Output = ()>> VuSet<F> {
    pub(super) fn new() -> Self {
        VuSet {
            vus: Vec::new(),
            ready: Arc::default(),
            running: 0,
            batch: Vec::new(),
            next: 0,
        }
    }

    /// Adds a VU, to be polled first when the set runs.
    pub(super) fn push(&mut self, vu: F) {
        let index = u32::try_from(self.vus.len()).expect("fewer than 2^32 VUs per worker");
        let wake = Arc::new(VuWake {
            index,
            queued: AtomicBool::new(true),
            ready: self.ready.clone(),
        });
        let waker = Waker::from(wake.clone());
        self.vus.push(Slot {
            future: Some(Box::pin(vu)),
            wake,
            waker,
        });
        self.ready.lock().vus.push(index);
        self.running += 1;
    }

    /// Runs every VU to its end.
    pub(super) async fn run(&mut self) {
        poll_fn(|cx| self.poll_ready_vus(cx)).await
    }

    fn poll_ready_vus(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        {
            let mut ready = self.ready.lock();
            if !ready.task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
                ready.task = Some(cx.waker().clone());
            }
            // The list is left empty, so that the next VU woken wakes the task.
            if self.next == self.batch.len() {
                self.batch.clear();
                self.next = 0;
                std::mem::swap(&mut ready.vus, &mut self.batch);
            } else {
                self.batch.extend_from_slice(&ready.vus);
                ready.vus.clear();
            }
        }
        let first = self.next;
        while let Some(&index) = self.batch.get(self.next) {
            if self.next > first && !tokio::task::coop::has_budget_remaining() {
                // The rest first at the next poll, which comes after the worker's other
                // tasks had theirs.
                cx.waker().wake_by_ref();
                break;
            }
            self.next += 1;
            let slot = &mut self.vus[index as usize];
            // Cleared before the poll: a wake-up during it queues the VU again.
            slot.wake.queued.store(false, Ordering::Release);
            let Some(vu) = &mut slot.future else {
                continue;
            };
            let mut vu_cx = Context::from_waker(&slot.waker);
            // The VU's turn: sessions may trust what they learned earlier in it.
            let _turn = Turn::enter();
            let ended = match catch_unwind(AssertUnwindSafe(|| vu.as_mut().poll(&mut vu_cx))) {
                Ok(Poll::Pending) => false,
                // Ended, or panicked (the panic was reported by the hook): the VU is done.
                Ok(Poll::Ready(())) | Err(_) => true,
            };
            if ended {
                slot.future = None;
                self.running -= 1;
            }
        }
        if self.running == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::Duration;

    use super::*;

    fn run_local<T>(f: impl Future<Output = T>) -> T {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    /// Each VU runs to its end, woken by timers, I/O and each other; the set ends with the last.
    #[test]
    fn every_vu_runs_to_its_end() {
        let done = Rc::new(Cell::new(0));
        run_local(async {
            let mut set = VuSet::new();
            for k in 0..100u64 {
                let done = done.clone();
                set.push(async move {
                    for _ in 0..3 {
                        tokio::time::sleep(Duration::from_millis(k % 7)).await;
                        tokio::task::yield_now().await;
                    }
                    done.set(done.get() + 1);
                });
            }
            set.run().await;
        });
        assert_eq!(done.get(), 100);
    }

    /// Each poll of a VU is a turn of its own (`onrush_protocol::turn`): the same number all
    /// through a poll, a new one after a suspension, none outside the set's polls.
    #[test]
    fn each_poll_of_a_vu_is_a_turn() {
        use onrush_protocol::turn;
        let seen = Rc::new(Cell::new((turn::NONE, turn::NONE, turn::NONE)));
        run_local(async {
            let mut set = VuSet::new();
            let record = seen.clone();
            set.push(async move {
                let first = turn::current();
                let same = turn::current();
                tokio::task::yield_now().await;
                record.set((first, same, turn::current()));
            });
            assert_eq!(turn::current(), turn::NONE);
            set.run().await;
            assert_eq!(turn::current(), turn::NONE);
        });
        let (first, same, after) = seen.get();
        assert_ne!(first, turn::NONE);
        assert_eq!(first, same);
        assert_ne!(after, turn::NONE);
        assert_ne!(after, first, "a new turn after the VU was suspended");
    }

    /// An open-model VU's task gets the same (`in_turns`), and a turn inside another gives
    /// the outer one back when it ends.
    #[test]
    fn a_vu_run_as_a_task_has_its_turns_too() {
        use onrush_protocol::turn::{self, in_turns, Turn};
        let (first, after) = run_local(in_turns(async {
            let first = turn::current();
            {
                let _inner = Turn::enter();
                assert_ne!(turn::current(), first);
            }
            assert_eq!(turn::current(), first, "the outer turn back");
            tokio::task::yield_now().await;
            (first, turn::current())
        }));
        assert_ne!(first, turn::NONE);
        assert_ne!(after, turn::NONE);
        assert_ne!(after, first);
        assert_eq!(turn::current(), turn::NONE);
    }

    /// A VU that panics ends alone; the others finish.
    #[test]
    fn a_panicking_vu_ends_alone() {
        let done = Rc::new(Cell::new(0));
        run_local(async {
            let mut set = VuSet::new();
            for k in 0..10 {
                let done = done.clone();
                set.push(async move {
                    tokio::task::yield_now().await;
                    if k == 3 {
                        panic!("VU {k} panics (on purpose, in a test)");
                    }
                    tokio::task::yield_now().await;
                    done.set(done.get() + 1);
                });
            }
            set.run().await;
        });
        assert_eq!(done.get(), 9);
    }

    /// VUs that are always ready do not keep the worker to themselves: once tokio's budget
    /// is spent, the set polls no more VUs (each would find its I/O refused) and yields, and
    /// the worker's other tasks get their turn.
    #[test]
    fn the_set_yields_when_the_budget_is_spent() {
        let late = Rc::new(Cell::new(0u32));
        let done = Rc::new(Cell::new(0u32));
        let other_ran_at = Rc::new(Cell::new(None));
        run_local(async {
            let other = {
                let (done, other_ran_at) = (done.clone(), other_ran_at.clone());
                tokio::task::spawn_local(async move { other_ran_at.set(Some(done.get())) })
            };
            let mut set = VuSet::new();
            for _ in 0..500 {
                let (late, done) = (late.clone(), done.clone());
                let mut work = Box::pin(async move {
                    for _ in 0..3 {
                        tokio::task::coop::consume_budget().await;
                    }
                    done.set(done.get() + 1);
                });
                // Counts the polls that start with the budget already spent.
                set.push(poll_fn(move |cx| {
                    if !tokio::task::coop::has_budget_remaining() {
                        late.set(late.get() + 1);
                    }
                    work.as_mut().poll(cx)
                }));
            }
            set.run().await;
            other.await.unwrap();
        });
        assert_eq!(done.get(), 500);
        assert_eq!(late.get(), 0, "VUs polled after the budget was spent");
        let other_ran_at = other_ran_at.get().expect("the other task ran");
        assert!(
            other_ran_at < 500,
            "the other task waited for every VU to end"
        );
    }

    /// Dropping the set drops the VUs still running (what cancels them at a run's end).
    #[test]
    fn dropping_the_set_drops_its_vus() {
        struct Dropped(Rc<Cell<u32>>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let dropped = Rc::new(Cell::new(0));
        run_local(async {
            let mut set = VuSet::new();
            for _ in 0..5 {
                let guard = Dropped(dropped.clone());
                set.push(async move {
                    let _guard = guard;
                    std::future::pending::<()>().await;
                });
            }
            let _ = tokio::time::timeout(Duration::from_millis(20), set.run()).await;
            assert_eq!(dropped.get(), 0);
        });
        assert_eq!(dropped.get(), 5);
    }
}
