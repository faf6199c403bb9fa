//! A compiled scenario: its load, HTTP settings and steps, the metrics and checks results count
//! for it, its runtime variables and feeders, and the [`Shared`] handle its compiled values use.

use std::time::Duration;

use crate::{HttpSettings, LoadModel, Step, Threshold};

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub load: LoadModel,
    /// `load.graceful_stop` (default 30s): when a load with a duration ends, VUs start no new
    /// request, and the requests in flight may finish for this long before they are cut
    /// (counted as `interrupted`). Meaningless without a duration (the loader refuses it).
    pub graceful_stop: Duration,
    /// Plan-level merged with scenario-level `http:`.
    pub http: HttpSettings,
    pub steps: Vec<Step>,
    /// One per distinct metric name in this scenario, in first-appearance order;
    /// [`RequestStep::metric`](crate::RequestStep::metric) indexes this.
    pub metrics: Vec<StepInfo>,
    /// The scenario's own `thresholds:`; without a scope prefix their scope is this scenario.
    pub thresholds: Vec<Threshold>,
    /// Every named check of the scenario (response checks, and extractions without a default),
    /// in first-appearance order; a check's id indexes this.
    pub checks: Vec<CheckInfo>,
    /// Runtime variables (feeder columns, extractor results, loop items): slot i is named
    /// `vars[i]`; templates refer to slots.
    pub vars: Vec<String>,
    /// How many per-VU counters (`${counter(name)}`) templates use.
    pub counters: usize,
    /// How many `once:` blocks the steps have.
    pub onces: usize,
    /// `feeders:`: test data picked at the start of every iteration.
    pub feeders: Vec<FeederUse>,
    /// `pacing`: the target duration of one iteration; a VU that finishes early waits.
    pub pacing: Option<Duration>,
}

/// A feeder of a scenario: which slots its columns fill.
#[derive(Debug, Clone, PartialEq)]
pub struct FeederUse {
    /// The file as written in the plan.
    pub file: String,
    pub feeder: Shared<onrush_data::Feeder>,
    /// Slot of each column, in column order.
    pub slots: Vec<usize>,
}

/// A value loaded once and shared by all threads; equal when it is the same value.
pub struct Shared<T>(pub std::sync::Arc<T>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shared<{}>", std::any::type_name::<T>())
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// One metric of a scenario: a request step or a group (transaction) of steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepInfo {
    pub name: String,
    pub kind: MetricKind,
}

/// What a metric measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricKind {
    /// One request per sample (counted in the request totals).
    #[default]
    Request,
    /// A `group:` of steps, one sample per run of the group: its whole duration (JMeter's
    /// Transaction Controller). Not counted as requests.
    Group,
}

/// A check as counted in results: its name and the metric (step) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckInfo {
    pub name: String,
    /// Index into [`Scenario::metrics`].
    pub metric: usize,
}
