//! What an exec step resolves once per run: its timeout and the name shown as its `url`.

use std::time::Duration;

use onrush_plan::{Check, CustomStep, ExecCommand, Extract, OnFailure, Plan};

use crate::ExecSpec;
use onrush_protocol::StepSpec;

/// The exec part of a prepared plan: per scenario, the default timeout of a step.
#[derive(Default)]
pub struct ExecPlan {
    timeouts: Vec<Duration>,
}

/// An exec step ready to run.
pub struct ExecStep {
    /// What the grammar read.
    pub plan: ExecSpec,
    /// What every request step has (metric, extractors, checks).
    pub common: CustomStep,
    /// After this the command's process group is killed.
    pub(crate) timeout: Duration,
    /// The program (or `sh`), shown to `url` extractors and in failure messages.
    pub(crate) label: Vec<u8>,
}

impl ExecPlan {
    pub fn new(plan: &Plan) -> Self {
        ExecPlan {
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
        }
    }

    pub fn compile(&mut self, scenario: usize, step: &CustomStep, spec: &ExecSpec) -> ExecStep {
        let label = match &spec.command {
            ExecCommand::Shell(_) => b"sh".to_vec(),
            ExecCommand::Argv(argv) => argv
                .first()
                .map(|t| t.source().as_bytes().to_vec())
                .unwrap_or_default(),
        };
        ExecStep {
            timeout: step.timeout.unwrap_or_else(|| {
                self.timeouts
                    .get(scenario)
                    .copied()
                    .unwrap_or(Duration::from_secs(60))
            }),
            plan: spec.clone(),
            common: step.clone(),
            label,
        }
    }
}

impl StepSpec for ExecStep {
    fn metric(&self) -> usize {
        self.common.metric
    }

    fn extract(&self) -> &[Extract] {
        &self.common.extract
    }

    fn checks(&self) -> &[Check] {
        &self.common.checks
    }

    fn on_failure(&self) -> OnFailure {
        self.common.on_failure
    }
}
