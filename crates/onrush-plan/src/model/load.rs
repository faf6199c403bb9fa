//! The load models: how many VUs run, or how many iterations start per second, over time, and
//! how the open model warms up before its schedule starts.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub enum LoadModel {
    /// `vus` + `iterations` (per VU), optional `ramp_up`: VU k (0-based) starts at k*ramp_up/vus.
    ClosedIterations {
        vus: u32,
        iterations: u64,
        ramp_up: Duration,
    },
    /// `vus` + `shared_iterations` (+ `ramp_up`): `iterations` in total, each taken by whichever
    /// VU is free next (k6's shared-iterations executor; what `onrush quick -n` uses).
    SharedIterations {
        vus: u32,
        iterations: u64,
        ramp_up: Duration,
    },
    /// `vus` + `duration` (+ `ramp_up`), or `stages: [{vus, over}]`: the VU count follows linear ramps
    /// starting from `start_vus`. vus+duration+ramp_up normalises to start_vus 0,
    /// stages [{vus, ramp_up}, {vus, duration - ramp_up}]; without ramp_up: start_vus = vus, [{vus, duration}].
    ClosedStages {
        start_vus: u32,
        stages: Vec<VuStage>,
    },
    /// `rate` + `duration`, or `stages: [{rate, over}]` (optional `start_rate`, default 0; with `rate`
    /// and no stages, start_rate = rate and stages = [{rate, duration}]). Always `max_vus`.
    Open {
        start_rate: f64,
        stages: Vec<RateStage>,
        max_vus: u32,
        /// `arrival_slack` (default [`DEFAULT_ARRIVAL_SLACK`]): an arrival may start up to this
        /// long before its scheduled time, so that one wake-up of the worker starts every
        /// arrival due within it. Latency is then timed from the actual start; a late arrival
        /// is timed from its scheduled start, as always.
        slack: Duration,
        /// `warm_up` (default [`WarmUp::Auto`]): how many VUs are created, and their
        /// connections opened, before the schedule starts.
        warm_up: WarmUp,
    },
}

/// The open model's default `arrival_slack`.
pub const DEFAULT_ARRIVAL_SLACK: Duration = Duration::from_millis(1);

/// The open model's `warm_up`: VUs created before the schedule's origin, each having opened
/// what its first request step would (an HTTP keep-alive connection), so that the first
/// arrivals do not pay for thousands of connects (like wrk, which connects before it
/// measures, or k6's `preAllocatedVUs`). The time it takes is not part of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WarmUp {
    /// `warm_up: true` (the default): enough VUs for the first second's arrivals if each
    /// took 50 ms ([`WarmUp::vus`]), at most `max_vus`.
    #[default]
    Auto,
    /// `warm_up: false`: every VU is created (and connects) when an arrival first needs it.
    Off,
    /// `warm_up: N`: N VUs (at most `max_vus`; 0 is `false`).
    Vus(u32),
}

impl WarmUp {
    /// How long [`WarmUp::Auto`] assumes an iteration takes: it warms up as many VUs as the
    /// first second's arrivals keep busy at that latency.
    pub const AUTO_LATENCY: Duration = Duration::from_millis(50);

    /// How many VUs to warm up for a load whose first second has `first_second` arrivals.
    pub fn vus(self, first_second: u64, max_vus: u32) -> u32 {
        let n = match self {
            WarmUp::Off => 0,
            WarmUp::Vus(n) => n as u64,
            WarmUp::Auto => {
                let per_ms = Self::AUTO_LATENCY.as_millis() as u64;
                (first_second * per_ms).div_ceil(1000)
            }
        };
        n.min(max_vus as u64) as u32
    }
}

impl LoadModel {
    /// The most VUs this model can use at once.
    pub fn max_vus(&self) -> u32 {
        match self {
            LoadModel::ClosedIterations { vus, .. } | LoadModel::SharedIterations { vus, .. } => {
                *vus
            }
            LoadModel::ClosedStages { start_vus, stages } => {
                stages.iter().map(|s| s.vus).fold(*start_vus, u32::max)
            }
            LoadModel::Open { max_vus, .. } => *max_vus,
        }
    }

    /// Planned duration, when the model has one (`ClosedIterations` runs until the iterations are done).
    pub fn duration(&self) -> Option<Duration> {
        match self {
            LoadModel::ClosedIterations { .. } | LoadModel::SharedIterations { .. } => None,
            LoadModel::ClosedStages { stages, .. } => Some(stages.iter().map(|s| s.over).sum()),
            LoadModel::Open { stages, .. } => Some(stages.iter().map(|s| s.over).sum()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VuStage {
    pub vus: u32,
    pub over: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStage {
    pub per_second: f64,
    pub over: Duration,
}
