//! When the workers start: after they have warmed up (open-model VUs connected ahead of the
//! load, worker/warm_up.rs), so that the warm-up is not part of the run's time or lag.
//!
//! A run on its own waits for every worker to be warm (at most [`WARM_UP_LIMIT`]), then starts
//! them all a few milliseconds later. A distributed run starts at the instant its controller
//! set (`RunOptions::start_at`): there the warm-up has until shortly before that instant, and
//! what is not warm by then connects when an arrival needs it, as without warm-up.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a run on its own waits for its workers' warm-up.
pub const WARM_UP_LIMIT: Duration = Duration::from_secs(10);

/// How long before an agreed start the warm-up stops: the time a worker needs to turn its
/// warm sessions into parked VUs and reach its start.
const AGREED_START_MARGIN: Duration = Duration::from_millis(20);

/// After the last worker is warm, the start is this far ahead (every thread is up by then; a
/// worker only has to wake up).
const START_LEAD: Duration = Duration::from_millis(10);

pub struct StartGate {
    /// When the warm-up must end, whatever it has done.
    pub warm_up_until: Instant,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    ready: usize,
    /// Connections the ready workers' warm-ups opened.
    warm_connections: u64,
    start: Option<Instant>,
}

impl StartGate {
    /// The workers start at `start`, agreed beforehand: they warm up until shortly before it
    /// and do not wait for each other.
    pub fn at(start: Instant) -> StartGate {
        StartGate {
            warm_up_until: start
                .checked_sub(AGREED_START_MARGIN)
                .unwrap_or(start)
                .max(Instant::now()),
            state: Mutex::new(State {
                ready: 0,
                warm_connections: 0,
                start: Some(start),
            }),
            changed: Condvar::new(),
        }
    }

    /// The workers start once all are warm ([`StartGate::open_when_ready`]).
    pub fn after_warm_up() -> StartGate {
        StartGate {
            warm_up_until: Instant::now() + WARM_UP_LIMIT,
            state: Mutex::new(State {
                ready: 0,
                warm_connections: 0,
                start: None,
            }),
            changed: Condvar::new(),
        }
    }

    /// A worker is warm, its warm-up having opened `warm_connections`: waits for the start and
    /// returns it.
    pub fn ready(&self, warm_connections: u64) -> Instant {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.ready += 1;
        state.warm_connections += warm_connections;
        self.changed.notify_all();
        loop {
            if let Some(start) = state.start {
                return start;
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until `workers` workers are warm (or the warm-up's limit, or `give_up` says so:
    /// a signal), calls `before_start` with the connections their warm-ups opened, then sets
    /// the start a little ahead and returns it. With an agreed start, returns it at once
    /// (`before_start` is not called: the workers may still be warming up, and the start
    /// will not wait for it).
    ///
    /// `before_start` runs while the warm workers wait, so its cost is in no second of the run:
    /// the monitor counts the warm-up's sockets there (run.rs).
    pub fn open_when_ready(
        &self,
        workers: usize,
        give_up: impl Fn() -> bool,
        before_start: impl FnOnce(u64),
    ) -> Instant {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.start.is_none()
            && state.ready < workers
            && Instant::now() < self.warm_up_until + START_LEAD
            && !give_up()
        {
            state = self
                .changed
                .wait_timeout(state, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if state.start.is_none() {
            let warm_connections = state.warm_connections;
            drop(state);
            before_start(warm_connections);
            state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        }
        let start = *state.start.get_or_insert(Instant::now() + START_LEAD);
        self.changed.notify_all();
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn workers_start_together_once_all_are_ready() {
        let gate = Arc::new(StartGate::after_warm_up());
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let gate = gate.clone();
                std::thread::spawn(move || gate.ready(2))
            })
            .collect();
        let mut warm = None;
        let start = gate.open_when_ready(3, || false, |n| warm = Some((n, Instant::now())));
        let (warm, called_at) = warm.expect("called before the start");
        assert_eq!(warm, 6, "the three workers' warm connections");
        assert!(called_at < start);
        for w in workers {
            assert_eq!(w.join().unwrap(), start);
        }
    }

    #[test]
    fn an_agreed_start_does_not_wait() {
        let at = Instant::now() + Duration::from_millis(100);
        let gate = StartGate::at(at);
        assert!(gate.warm_up_until <= at);
        assert_eq!(gate.ready(1), at);
        let mut called = false;
        assert_eq!(gate.open_when_ready(5, || false, |_| called = true), at);
        assert!(!called, "an agreed start waits for nothing");
    }
}
