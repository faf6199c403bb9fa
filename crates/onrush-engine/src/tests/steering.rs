//! Steering a run while it runs (steer.rs): pause and resume, stop, a new rate for an open
//! model, more VUs for a closed one; each change in `events.jsonl` and in the seconds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use onrush_results::{read_events, IntervalsReader, Line};

use super::{load, Fake};
use crate::{prepare, run, RunOptions, RunOutcome, Steering};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("onrush-steer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `yaml` on 2 workers with steering, calling `steer` on another thread meanwhile.
fn run_steered(
    yaml: &str,
    dir: &Path,
    steer: impl FnOnce(&Steering) + Send + 'static,
) -> (RunOutcome, Vec<(usize, u64, String)>) {
    let plan = load(yaml);
    let steering = Arc::new(Steering::new(
        plan.scenarios.iter().map(|s| (s.name.as_str(), &s.load)),
    ));
    let prepared = prepare::<Fake>(&plan, None).expect("the plan prepares");
    let log = prepared.protocol.log.clone();
    let mut options = RunOptions::quiet(2, "test");
    options.out_dir = Some(dir.to_path_buf());
    options.steering = Some(steering.clone());
    let steerer = thread::spawn(move || steer(&steering));
    let outcome = run(prepared, options).expect("the results directory is writable");
    steerer.join().unwrap();
    let mut log = log.lock().unwrap().clone();
    log.retain(|(_, _, p)| p != "warm_up");
    (outcome, log)
}

/// Requests per second (`t`) over every step, from `intervals.jsonl`.
fn requests_per_second(dir: &Path) -> Vec<u64> {
    let mut reader = IntervalsReader::open(&dir.join("intervals.jsonl")).unwrap();
    let mut per_second = Vec::new();
    while let Some(line) = reader.next_line().unwrap() {
        if let Line::Step(l) = line {
            let t = l.t as usize;
            if per_second.len() <= t {
                per_second.resize(t + 1, 0);
            }
            per_second[t] += l.requests;
        }
    }
    per_second
}

/// Waits until the run has started (steering says so), then `after` more.
fn once_running(st: &Steering, after: Duration) {
    while st.state() == crate::RunState::Starting {
        thread::sleep(Duration::from_millis(5));
    }
    thread::sleep(after);
}

#[test]
fn a_paused_run_starts_nothing_until_resumed_and_says_when() {
    let dir = temp_dir("pause");
    let (outcome, _) = run_steered(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: closed\n    load: { vus: 2, duration: 4s }\n    steps:\n      - get: /slow/10\n  - name: open\n    load: { rate: 100/s, duration: 4s, max_vus: 10 }\n    steps:\n      - get: /slow/5\n",
        &dir,
        |st| {
            once_running(st, Duration::from_millis(700));
            assert!(st.pause("test").unwrap());
            thread::sleep(Duration::from_millis(2_500));
            assert!(st.resume("test").unwrap());
        },
    );
    let seconds = requests_per_second(&dir);
    assert!(seconds[0] > 50, "ran before the pause: {seconds:?}");
    assert_eq!(seconds[2], 0, "second 2 was paused throughout: {seconds:?}");
    assert!(seconds[3] > 0, "ran again after the resume: {seconds:?}");
    assert!(!outcome.interrupted);
    let events = read_events(&dir).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["pause", "resume"]);
    assert!(
        (0.6..1.5).contains(&events[0].t) && (3.0..4.0).contains(&events[1].t),
        "{events:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_new_rate_holds_from_the_change_to_the_end() {
    let dir = temp_dir("rate");
    let (outcome, log) = run_steered(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: open\n    load: { rate: 50/s, duration: 3s, max_vus: 50 }\n    steps:\n      - get: /a\n",
        &dir,
        |st| {
            once_running(st, Duration::from_millis(1_000));
            st.set_rate("open", 400.0, "test").unwrap();
        },
    );
    let t = &outcome.collector.summary().totals;
    // 50 in the first second, then 400/s for 2 s: ~850 (150 without the change).
    let made = t.iterations + t.dropped_iterations;
    assert!((700..=900).contains(&made), "{t:?}");
    assert_eq!(log.len() as u64, t.iterations);
    let seconds = requests_per_second(&dir);
    assert!(seconds[0] <= 60 && seconds[2] >= 350, "{seconds:?}");
    let events = read_events(&dir).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (
            events[0].kind.as_str(),
            events[0].scenario.as_deref(),
            events[0].rate
        ),
        ("load", Some("open"), Some(400.0))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn more_vus_than_the_plan_had_join_a_closed_model_live() {
    let dir = temp_dir("vus");
    let (outcome, log) = run_steered(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: closed\n    load: { vus: 1, duration: 2s }\n    steps:\n      - get: /slow/20\n",
        &dir,
        |st| {
            once_running(st, Duration::from_millis(500));
            st.set_vus("closed", 5, "test").unwrap();
        },
    );
    let mut vus: Vec<u64> = log.iter().map(|(_, vu, _)| *vu).collect();
    vus.sort_unstable();
    vus.dedup();
    assert_eq!(vus, [1, 2, 3, 4, 5], "every VU asked for ran");
    let summary = outcome.collector.summary();
    assert_eq!(summary.totals.active_vus_max, 5, "{:?}", summary.totals);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stop_asked_live_ends_the_run_as_ctrl_c_does_and_says_who() {
    let dir = temp_dir("stop");
    let (outcome, _) = run_steered(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: closed\n    load: { vus: 2, duration: 30s }\n    steps:\n      - get: /slow/10\n",
        &dir,
        |st| {
            once_running(st, Duration::from_millis(500));
            assert!(st.stop("test"));
        },
    );
    assert!(outcome.interrupted);
    assert!(
        outcome.elapsed < Duration::from_secs(5),
        "{:?}",
        outcome.elapsed
    );
    assert!(
        outcome
            .stops
            .iter()
            .any(|(_, why)| why.contains("/api/stop")),
        "{:?}",
        outcome.stops
    );
    assert_eq!(read_events(&dir).unwrap()[0].kind, "stop");
    std::fs::remove_dir_all(&dir).unwrap();
}
