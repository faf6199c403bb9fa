//! Steering a run while it runs: pause, resume, stop, and a scenario's load changed live (the
//! arrival rate of an open model, the VUs of a closed one over a duration).
//!
//! The live page's server (onrush-live) calls [`Steering`]'s methods from its own thread; the
//! workers read what it set at points they pass anyway — a closed VU before each iteration,
//! an open model's driver at each wake-up — with one relaxed atomic load, and only when the run
//! has steering at all (`RunOptions::steering`): a run without it pays nothing. No message
//! crosses threads per request, and a worker that waits (paused, or for its next arrival)
//! looks again every [`POLL`], so a change takes effect within that time.
//!
//! Each change is queued as an [`Event`] the run loop writes to `events.jsonl` (the results'
//! one owner of files), with the time the change was asked.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use onrush_plan::LoadModel;
use onrush_results::Event;

/// How often a waiting worker looks at the steering again.
pub const POLL: Duration = Duration::from_millis(100);

/// What a scenario's load can be changed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steerable {
    /// An open model: its arrival rate.
    Rate,
    /// A closed model over a duration (`vus` + `duration`, `stages`): its VUs.
    Vus,
    /// A closed model bounded by iterations: its load cannot change.
    Fixed,
}

/// The run's state, as the live page shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Starting,
    Running,
    Paused,
    /// Stopping: the graceful stop of a stop asked for, a signal, or the end of the plan.
    Stopping,
    Finished,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Starting => "starting",
            RunState::Running => "running",
            RunState::Paused => "paused",
            RunState::Stopping => "stopping",
            RunState::Finished => "finished",
        }
    }
}

/// Why a change was refused, in words for the API's answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SteerError {
    #[error("no scenario {name:?}; the plan's scenarios: {known}")]
    NoScenario { name: String, known: String },
    #[error("scenario {name:?} is an open model: change its rate, e.g. {{\"rate\": \"200/s\"}}")]
    WantsRate { name: String },
    #[error("scenario {name:?} is a closed model: change its VUs, e.g. {{\"vus\": 20}}")]
    WantsVus { name: String },
    #[error(
        "scenario {name:?} runs a fixed number of iterations: its load cannot change mid-run \
         (give it `duration:` to steer its VUs)"
    )]
    Fixed { name: String },
    #[error("{0}")]
    Value(String),
    #[error("the run is {0}: nothing to change")]
    NotRunning(&'static str),
}

/// One scenario's live load.
struct ScenarioSteer {
    name: String,
    kind: Steerable,
    /// The rate set live, f64 bits (0: none set).
    rate: AtomicU64,
    /// The VUs set live (`u32::MAX`: none set).
    vus: AtomicU32,
}

/// The handle a run is steered through, shared by the live server and the workers.
pub struct Steering {
    /// Bumped at every change, so that a worker needs one load to know nothing changed.
    generation: AtomicU64,
    paused: AtomicBool,
    stop: AtomicBool,
    state: AtomicU8,
    scenarios: Vec<ScenarioSteer>,
    /// Changes not written yet, with when they were asked.
    pending: Mutex<Vec<(Instant, Event)>>,
    /// What the run loop judged of the last second closed, for the live page.
    published: Mutex<Published>,
}

/// What the run loop publishes each second for the live page (only a steered run does):
/// the plan's thresholds judged on the run so far, and the generator's own health.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Published {
    /// The thresholds `summary.json` alone can judge, on the run so far.
    pub thresholds: Vec<onrush_results::ThresholdOutcome>,
    /// The thresholds that need the run's histograms (judged at the end only).
    pub thresholds_at_end: Vec<String>,
    /// `healthy` or `saturated`, and why, on the seconds closed so far.
    pub generator_verdict: String,
    pub generator_message: String,
    /// The generator's last second (a line of `generator.jsonl`).
    pub generator: Option<onrush_results::GeneratorLine>,
}

/// Highest rate and VU count a live change may ask for: a typo (an extra zero or three) should
/// not open a million connections.
const MAX_RATE: f64 = 10_000_000.0;
const MAX_VUS: u32 = 1_000_000;

impl Steering {
    /// Steering for a plan's scenarios, by name and load model, in the plan's order.
    pub fn new<'a>(scenarios: impl IntoIterator<Item = (&'a str, &'a LoadModel)>) -> Steering {
        Steering {
            generation: AtomicU64::new(0),
            paused: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            state: AtomicU8::new(RunState::Starting as u8),
            scenarios: scenarios
                .into_iter()
                .map(|(name, load)| ScenarioSteer {
                    name: name.to_string(),
                    kind: match load {
                        LoadModel::Open { .. } => Steerable::Rate,
                        LoadModel::ClosedStages { .. } => Steerable::Vus,
                        LoadModel::ClosedIterations { .. } | LoadModel::SharedIterations { .. } => {
                            Steerable::Fixed
                        }
                    },
                    rate: AtomicU64::new(0),
                    vus: AtomicU32::new(u32::MAX),
                })
                .collect(),
            pending: Mutex::new(Vec::new()),
            published: Mutex::new(Published::default()),
        }
    }

    // ---- the workers' side ------------------------------------------------------------------

    /// Changes so far: a worker compares it with the last it saw.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    #[inline]
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// The rate set live for scenario `s`, per second.
    pub fn rate(&self, s: usize) -> Option<f64> {
        let bits = self.scenarios.get(s)?.rate.load(Ordering::Relaxed);
        (bits != 0).then(|| f64::from_bits(bits))
    }

    /// The VUs set live for scenario `s`.
    #[inline]
    pub fn vus(&self, s: usize) -> Option<u32> {
        let n = self.scenarios.get(s)?.vus.load(Ordering::Relaxed);
        (n != u32::MAX).then_some(n)
    }

    // ---- the run loop's side ----------------------------------------------------------------

    pub fn state(&self) -> RunState {
        match self.state.load(Ordering::Relaxed) {
            0 => RunState::Starting,
            1 => RunState::Running,
            2 => RunState::Paused,
            3 => RunState::Stopping,
            _ => RunState::Finished,
        }
    }

    /// Set by the run loop, and by the caller once the results are written (`Finished`).
    pub fn set_state(&self, state: RunState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    /// A stop was asked (the run loop stops the run as on Ctrl-C).
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// What the run loop published last.
    pub fn published(&self) -> Published {
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn publish(&self, published: Published) {
        *self.published.lock().unwrap_or_else(|e| e.into_inner()) = published;
    }

    /// The changes asked since the last call, with when.
    pub(crate) fn take_events(&self) -> Vec<(Instant, Event)> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }

    // ---- the controls -----------------------------------------------------------------------

    /// The scenarios: name and what can be changed.
    pub fn scenarios(&self) -> impl Iterator<Item = (&str, Steerable)> {
        self.scenarios.iter().map(|s| (s.name.as_str(), s.kind))
    }

    fn live(&self) -> Result<(), SteerError> {
        match self.state() {
            RunState::Stopping => Err(SteerError::NotRunning("stopping")),
            RunState::Finished => Err(SteerError::NotRunning("finished")),
            _ => Ok(()),
        }
    }

    fn record(&self, event: Event) {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((Instant::now(), Event { unix_ms, ..event }));
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Pauses: VUs finish the iteration they are in and start no other, open models start no
    /// arrival (those due while paused are not made up later). `false` if it was paused already.
    pub fn pause(&self, by: &str) -> Result<bool, SteerError> {
        self.live()?;
        if self.paused.swap(true, Ordering::Relaxed) {
            return Ok(false);
        }
        self.set_state(RunState::Paused);
        self.record(Event {
            kind: "pause".into(),
            by: by.into(),
            detail: "paused: no new iteration or arrival until resumed".into(),
            ..Event::default()
        });
        Ok(true)
    }

    /// Resumes a paused run where its schedule is now. `false` if it was not paused.
    pub fn resume(&self, by: &str) -> Result<bool, SteerError> {
        self.live()?;
        if !self.paused.swap(false, Ordering::Relaxed) {
            return Ok(false);
        }
        self.set_state(RunState::Running);
        self.record(Event {
            kind: "resume".into(),
            by: by.into(),
            detail: "resumed".into(),
            ..Event::default()
        });
        Ok(true)
    }

    /// Stops the run as Ctrl-C does: requests in flight are cut and counted, results written.
    /// `false` if a stop was asked already.
    pub fn stop(&self, by: &str) -> bool {
        if self.stop.swap(true, Ordering::Relaxed) {
            return false;
        }
        // A paused run's VUs wait for a resume: let them see the stop.
        self.paused.store(false, Ordering::Relaxed);
        self.set_state(RunState::Stopping);
        self.record(Event {
            kind: "stop".into(),
            by: by.into(),
            detail: "stop asked: requests in flight cut, results written".into(),
            ..Event::default()
        });
        true
    }

    fn find(&self, name: &str) -> Result<(usize, &ScenarioSteer), SteerError> {
        self.scenarios
            .iter()
            .enumerate()
            .find(|(_, s)| s.name == name)
            .ok_or_else(|| SteerError::NoScenario {
                name: name.to_string(),
                known: self
                    .scenarios
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Sets an open-model scenario's arrival rate from now until its planned end (the stages
    /// left are replaced by this constant rate).
    pub fn set_rate(&self, scenario: &str, per_second: f64, by: &str) -> Result<(), SteerError> {
        self.live()?;
        let (_, s) = self.find(scenario)?;
        match s.kind {
            Steerable::Rate => {}
            Steerable::Vus => {
                return Err(SteerError::WantsVus {
                    name: s.name.clone(),
                })
            }
            Steerable::Fixed => {
                return Err(SteerError::Fixed {
                    name: s.name.clone(),
                })
            }
        }
        if !(per_second.is_finite() && per_second > 0.0 && per_second <= MAX_RATE) {
            return Err(SteerError::Value(format!(
                "a rate must be above 0 and at most {MAX_RATE}/s (to stop arrivals for a while, pause)"
            )));
        }
        s.rate.store(per_second.to_bits(), Ordering::Relaxed);
        self.record(Event {
            kind: "load".into(),
            scenario: Some(s.name.clone()),
            rate: Some(per_second),
            by: by.into(),
            detail: format!("{}: rate set to {per_second}/s", s.name),
            ..Event::default()
        });
        Ok(())
    }

    /// Sets a closed-model scenario's VUs from now until its planned end (the stages left are
    /// replaced by this constant count). VUs above it finish their iteration and wait.
    pub fn set_vus(&self, scenario: &str, vus: u32, by: &str) -> Result<(), SteerError> {
        self.live()?;
        let (_, s) = self.find(scenario)?;
        match s.kind {
            Steerable::Vus => {}
            Steerable::Rate => {
                return Err(SteerError::WantsRate {
                    name: s.name.clone(),
                })
            }
            Steerable::Fixed => {
                return Err(SteerError::Fixed {
                    name: s.name.clone(),
                })
            }
        }
        if vus > MAX_VUS {
            return Err(SteerError::Value(format!("at most {MAX_VUS} VUs")));
        }
        s.vus.store(vus, Ordering::Relaxed);
        self.record(Event {
            kind: "load".into(),
            scenario: Some(s.name.clone()),
            vus: Some(vus),
            by: by.into(),
            detail: format!("{}: VUs set to {vus}", s.name),
            ..Event::default()
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use onrush_plan::{RateStage, VuStage};

    fn steering() -> Steering {
        let open = LoadModel::Open {
            start_rate: 10.0,
            stages: vec![RateStage {
                per_second: 10.0,
                over: Duration::from_secs(5),
            }],
            max_vus: 10,
            slack: Duration::ZERO,
            warm_up: Default::default(),
        };
        let closed = LoadModel::ClosedStages {
            start_vus: 2,
            stages: vec![VuStage {
                vus: 2,
                over: Duration::from_secs(5),
            }],
        };
        let fixed = LoadModel::ClosedIterations {
            vus: 1,
            iterations: 3,
            ramp_up: Duration::ZERO,
        };
        Steering::new([("open", &open), ("closed", &closed), ("fixed", &fixed)])
    }

    #[test]
    fn each_model_takes_its_own_change_and_refuses_the_others_with_the_fix() {
        let st = steering();
        let g = st.generation();
        st.set_rate("open", 200.0, "api").unwrap();
        assert_eq!(st.rate(0), Some(200.0));
        assert!(st.generation() > g);
        st.set_vus("closed", 7, "api").unwrap();
        assert_eq!(st.vus(1), Some(7));
        assert_eq!(st.vus(0), None);
        let e = st.set_vus("open", 3, "api").unwrap_err().to_string();
        assert!(e.contains("change its rate"), "{e}");
        let e = st.set_rate("closed", 3.0, "api").unwrap_err().to_string();
        assert!(e.contains("change its VUs"), "{e}");
        let e = st.set_vus("fixed", 3, "api").unwrap_err().to_string();
        assert!(e.contains("fixed number of iterations"), "{e}");
        let e = st.set_rate("nope", 3.0, "api").unwrap_err().to_string();
        assert!(e.contains("open, closed, fixed"), "{e}");
        assert!(st.set_rate("open", 0.0, "api").is_err());
        assert!(st.set_rate("open", f64::NAN, "api").is_err());
        let events = st.take_events();
        assert_eq!(events.len(), 2, "refused changes are not events");
        assert_eq!(events[0].1.kind, "load");
        assert_eq!(events[1].1.vus, Some(7));
    }

    #[test]
    fn pause_resume_and_stop_are_recorded_once_each() {
        let st = steering();
        st.set_state(RunState::Running);
        assert!(st.pause("page").unwrap());
        assert!(!st.pause("page").unwrap(), "paused already");
        assert_eq!(st.state(), RunState::Paused);
        assert!(st.resume("api").unwrap());
        assert!(!st.resume("api").unwrap());
        assert!(st.pause("api").unwrap());
        assert!(st.stop("api"));
        assert!(!st.stop("api"));
        assert!(!st.paused(), "a stop releases paused VUs");
        assert!(st.stop_requested());
        assert!(matches!(
            st.set_rate("open", 5.0, "api"),
            Err(SteerError::NotRunning("stopping"))
        ));
        let kinds: Vec<String> = st.take_events().into_iter().map(|e| e.1.kind).collect();
        assert_eq!(kinds, ["pause", "resume", "pause", "stop"]);
    }
}
