//! `setup: { steps }` and `teardown: { steps }` → a [`Scenario`] of one VU and one iteration,
//! run by the CLI before and after the load.

use std::cell::RefCell;
use std::time::Duration;

use super::Ctx;
use crate::error::PlanError;
use crate::yaml::Node;
use crate::{HttpSettings, LoadModel, OnFailure, Scenario};

const PHASE_KEYS: [&str; 2] = ["steps", "on_failure"];

impl Ctx<'_> {
    /// Compiles the phase `name` (`setup` or `teardown`); `inherited` are setup's variables
    /// (teardown may use them). Setup's steps stop at their first failure by default (the
    /// load would not run anyway); teardown's go on, to clean up all they can.
    pub(super) fn phase(
        &mut self,
        node: &Node,
        name: &str,
        http: &HttpSettings,
        base_path: &str,
        inherited: &[String],
    ) -> Result<Scenario, PlanError> {
        let f = self.map(node, name, &PHASE_KEYS)?;
        let steps_node = self.required(
            &f,
            "steps",
            &format!("the steps to run once, e.g. `{name}: {{ steps: [ {{ post: /login }} ] }}`"),
        )?;
        let mut first = inherited.to_vec();
        for name in self.script_var_names() {
            if !first.contains(&name) {
                first.push(name);
            }
        }
        self.runtime = self.runtime_names(steps_node, first)?;
        self.counters = RefCell::new(Vec::new());
        self.on_failure_default.set(match f.get("on_failure") {
            Some(o) => self.on_failure(o, &f.child("on_failure"))?,
            None if name == "setup" => OnFailure::StopVu,
            None => OnFailure::Continue,
        });
        let (steps, build) = self.scenario_steps(steps_node, &f.child("steps"), base_path)?;
        self.on_failure_default.set(OnFailure::Continue);
        Ok(Scenario {
            name: name.to_string(),
            load: LoadModel::ClosedIterations {
                vus: 1,
                iterations: 1,
                ramp_up: Duration::ZERO,
            },
            graceful_stop: Duration::from_secs(30),
            http: http.clone(),
            steps,
            metrics: build.infos,
            thresholds: Vec::new(),
            checks: build.checks,
            vars: std::mem::take(&mut self.runtime),
            counters: self.counters.borrow().len(),
            onces: build.onces,
            feeders: Vec::new(),
            pacing: None,
        })
    }
}
