//! A request's timeout without a timer operation per request: for any protocol's session
//! (onrush-proto-http's first, a protocol built outside onrush too).
//!
//! `tokio::time::timeout` around each request inserts a timer entry into tokio's wheel and
//! removes it again, and moves the request's future into its own (~1,000 user instructions
//! per keep-alive request, callgrind: docs/benchmarks.md, "Keep-alive instructions per request
//! against wrk"). A session keeps one timer instead, armed at some request's deadline and left
//! armed: a later request whose deadline is not earlier keeps it as it is (an earlier one moves
//! it), and when it fires before the current request's deadline it is moved to that deadline.
//! With one timeout for every request, the timer fires and is moved once per timeout period,
//! whatever the number of requests in between.
//!
//! A timer left armed may fire while the session is not in a request (between requests, in a
//! think time): that is one spurious wake-up of the VU's task per timeout period, which its
//! futures ignore as every future must.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::Moment;
use tokio::time::{sleep_until, Sleep};

/// One session's request timer.
#[derive(Default)]
pub struct RequestTimer {
    /// The timer, boxed so that a session stays small (allocated at its first request), and
    /// the moment it is armed for (its tokio deadline is this moment as an `Instant`): compared
    /// with each request's deadline as one integer, not as tokio's `Instant`.
    armed: Option<(Pin<Box<Sleep>>, Moment)>,
    /// The waker the armed timer will wake (it keeps the last one it was polled with until it
    /// fires or is moved): while it is the caller's, polling it again would only register the
    /// same waker again (a coop budget check and an atomic swap, ~130 instructions per request).
    registered: Option<Waker>,
}

impl RequestTimer {
    /// Ready once `at` has passed (to tokio's timer precision, as `tokio::time::timeout`).
    /// Registers `cx`'s waker to be woken then, or earlier (spuriously) by a timer armed for an
    /// earlier request.
    pub fn poll_expired(&mut self, at: Moment, cx: &mut Context<'_>) -> Poll<()> {
        let (sleep, armed) = match &mut self.armed {
            Some((sleep, armed)) if *armed <= at => (sleep, armed),
            slot => {
                // Not armed yet, or for a later deadline than this request's: moved to it.
                self.registered = None;
                let deadline = at.to_instant().into();
                match slot {
                    Some((sleep, armed)) => {
                        sleep.as_mut().reset(deadline);
                        *armed = at;
                    }
                    None => *slot = Some((Box::pin(sleep_until(deadline)), at)),
                }
                let (sleep, armed) = slot.as_mut().expect("armed just above");
                (sleep, armed)
            }
        };
        if !sleep.is_elapsed()
            && self
                .registered
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                self.registered = Some(cx.waker().clone());
                return Poll::Pending;
            }
            self.registered = None;
            if *armed >= at {
                return Poll::Ready(());
            }
            // An earlier request's deadline: this request still has time.
            sleep.as_mut().reset(at.to_instant().into());
            *armed = at;
        }
    }
}

/// Polls `fut` until it completes (`Some`) or `at` passes first (`None`). The future is polled
/// first, so one that is ready is never timed out, as with `tokio::time::timeout`; it is
/// borrowed pinned, not moved. A `poll_fn` returned as it is, not awaited in an `async fn` of
/// its own: a layer less on every request.
pub fn within<'a, F: Future>(
    timer: &'a mut RequestTimer,
    at: Moment,
    mut fut: Pin<&'a mut F>,
) -> impl Future<Output = Option<F::Output>> + 'a {
    std::future::poll_fn(move |cx| match fut.as_mut().poll(cx) {
        Poll::Ready(out) => Poll::Ready(Some(out)),
        Poll::Pending => timer.poll_expired(at, cx).map(|()| None),
    })
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::time::Duration;

    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// A request that takes `took`, timed out at `timeout`: its outcome and how long it ran.
    async fn request(
        timer: &mut RequestTimer,
        took: Duration,
        timeout: Duration,
    ) -> (bool, Duration) {
        let started = Moment::now();
        let fut = pin!(tokio::time::sleep(took));
        let done = within(timer, started + timeout, fut).await.is_some();
        (done, started.elapsed())
    }

    #[test]
    fn a_slow_request_times_out_at_its_deadline() {
        rt().block_on(async {
            let mut timer = RequestTimer::default();
            let (done, took) = request(
                &mut timer,
                Duration::from_secs(5),
                Duration::from_millis(50),
            )
            .await;
            assert!(!done);
            assert!(
                took >= Duration::from_millis(50) && took < Duration::from_secs(2),
                "{took:?}"
            );
        });
    }

    #[test]
    fn a_timer_armed_by_an_earlier_request_does_not_cut_a_later_one_short() {
        rt().block_on(async {
            let mut timer = RequestTimer::default();
            // Fast requests for longer than one timeout: the timer armed by the first fires
            // during the later ones and must move to their deadlines, not end them.
            let started = std::time::Instant::now();
            while started.elapsed() < Duration::from_millis(300) {
                let (done, _) = request(
                    &mut timer,
                    Duration::from_millis(5),
                    Duration::from_millis(100),
                )
                .await;
                assert!(done);
            }
            // The timer is left armed for a deadline before this request's: it still gets
            // its whole timeout.
            tokio::time::sleep(Duration::from_millis(60)).await;
            let (done, took) = request(
                &mut timer,
                Duration::from_secs(5),
                Duration::from_millis(100),
            )
            .await;
            assert!(!done);
            assert!(took >= Duration::from_millis(100), "cut short: {took:?}");
            assert!(took < Duration::from_secs(2), "{took:?}");
        });
    }

    #[test]
    fn a_shorter_timeout_after_a_longer_one_still_fires() {
        rt().block_on(async {
            let mut timer = RequestTimer::default();
            let (done, _) = request(
                &mut timer,
                Duration::from_millis(1),
                Duration::from_secs(60),
            )
            .await;
            assert!(done);
            let (done, took) = request(
                &mut timer,
                Duration::from_secs(5),
                Duration::from_millis(50),
            )
            .await;
            assert!(!done);
            assert!(
                took < Duration::from_secs(2),
                "waited for the earlier request's deadline: {took:?}"
            );
        });
    }

    #[test]
    fn a_request_polled_by_another_task_is_still_woken_at_its_deadline() {
        rt().block_on(async {
            let local = tokio::task::LocalSet::new();
            local
                .run_until(async {
                    // A first task leaves the timer registered with its waker...
                    let timer = tokio::task::spawn_local(async {
                        let mut timer = RequestTimer::default();
                        let fast = Duration::from_millis(1);
                        let (done, _) = request(&mut timer, fast, Duration::from_millis(80)).await;
                        assert!(done);
                        timer
                    })
                    .await
                    .unwrap();
                    // ...and the next request, in another task, must register its own.
                    let (done, took) = tokio::task::spawn_local(async move {
                        let mut timer = timer;
                        let slow = Duration::from_secs(5);
                        request(&mut timer, slow, Duration::from_millis(100)).await
                    })
                    .await
                    .unwrap();
                    assert!(!done);
                    assert!(took >= Duration::from_millis(100), "cut short: {took:?}");
                    assert!(took < Duration::from_secs(2), "not woken: {took:?}");
                })
                .await;
        });
    }

    #[test]
    fn a_ready_request_is_not_timed_out() {
        rt().block_on(async {
            let mut timer = RequestTimer::default();
            let past = Moment::now() - Duration::from_secs(1);
            let fut = pin!(async { 7 });
            assert_eq!(within(&mut timer, past, fut).await, Some(7));
        });
    }
}
