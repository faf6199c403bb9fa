//! The open model's warm-up (`load.warm_up`): before the schedule's origin, each worker
//! creates the sessions of its first VUs of every open-model scenario and has each open what
//! the scenario's first request step would ([`Session::warm_up`]: an HTTP keep-alive
//! connection). The open driver then starts with these VUs parked and connected.
//!
//! Why: at 60,000/s on one worker the first second used to start ~3,000 VUs that each opened
//! their connection inside it; the worker fell ~60 ms behind and dropped arrivals, while from
//! the second second on the lag was nil. wrk connects before it measures; k6 has
//! `preAllocatedVUs`. The warm-up's time is not the run's (see start.rs): the run's clock,
//! its seconds and its schedule lag start after it.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use onrush_metrics::WorkerMetrics;
use onrush_plan::LoadModel;
use onrush_protocol::{Protocol, Session, Warmed};

use super::open::{share, vu_id};
use crate::prepare::Prepared;
use crate::program::Op;
use crate::schedule::Arrivals;

/// Connections being opened at once by one worker: enough to overlap the connects' round
/// trips, few enough not to overflow a server's accept backlog (a SYN dropped there is retried
/// after a second).
const CONCURRENCY: usize = 64;

/// How many VUs of an open-model load are warmed up, over every worker.
pub(super) fn planned(load: &LoadModel) -> u32 {
    match load {
        LoadModel::Open {
            start_rate,
            stages,
            max_vus,
            warm_up,
            ..
        } => {
            let first_second =
                Arrivals::new(*start_rate, stages).first_at_or_after(Duration::from_secs(1));
            warm_up.vus(first_second, *max_vus)
        }
        _ => 0,
    }
}

/// Per scenario: the sessions of this worker's warmed-up VUs (VU ids in the open driver's
/// order), each having opened what the scenario's first request opens, as far as `until`
/// allowed; and how many connections they opened. Connections opened are counted in the
/// scenario's connections opened (in the run's first second).
pub(super) async fn warm_up<P: Protocol>(
    prepared: &Prepared<P>,
    protocol: &[P::Worker],
    worker: usize,
    workers: usize,
    until: Instant,
    metrics: &RefCell<WorkerMetrics>,
) -> (Vec<Vec<P::Session>>, u64) {
    let mut all = Vec::with_capacity(prepared.scenarios.len());
    let mut opened = 0;
    for (s, scenario) in prepared.scenarios.iter().enumerate() {
        let LoadModel::Open { max_vus, .. } = scenario.load else {
            all.push(Vec::new());
            continue;
        };
        let (used, n) = share(planned(&scenario.load), max_vus, worker, workers);
        let mut sessions: Vec<P::Session> = (0..n)
            .map(|k| P::session(&prepared.protocol, s, vu_id(k, used, worker), &protocol[s]))
            .collect();
        let first = scenario.program.iter().find_map(|op| match op {
            Op::Request { step, .. } => Some(&**step),
            _ => None,
        });
        if let Some(step) = first {
            let connect = open_all(&mut sessions, step, |warmed| {
                if warmed == Warmed::Opened {
                    opened += 1;
                    metrics.borrow_mut().record_connection_opened(s);
                }
            });
            let _ = tokio::time::timeout_at(until.into(), connect).await;
        }
        all.push(sessions);
    }
    (all, opened)
}

/// Warms up `sessions` for `step`, [`CONCURRENCY`] at a time, until all are done or one
/// fails (then the target refuses or is slow, and the run's own requests will say so).
async fn open_all<S: Session>(sessions: &mut [S], step: &S::Step, mut done: impl FnMut(Warmed)) {
    let mut waiting = sessions.iter_mut();
    let mut running: Vec<Pin<Box<_>>> = Vec::with_capacity(CONCURRENCY);
    let mut failed = false;
    poll_fn(|cx| loop {
        while !failed && running.len() < CONCURRENCY {
            match waiting.next() {
                Some(session) => running.push(Box::pin(session.warm_up(step))),
                None => break,
            }
        }
        let before = running.len();
        running.retain_mut(|f| match f.as_mut().poll(cx) {
            Poll::Ready(warmed) => {
                failed |= warmed == Warmed::Failed;
                done(warmed);
                false
            }
            Poll::Pending => true,
        });
        if running.is_empty() && (failed || waiting.len() == 0) {
            return Poll::Ready(());
        }
        if running.len() == before {
            return Poll::Pending;
        }
    })
    .await
}
