//! What an exec step resolves once per run: its timeout and the name shown as its `url`.

use std::time::Duration;

use onrush_plan::{Check, ExecCommand, Extract, OnFailure, Plan};
use onrush_protocol::StepSpec;

/// The exec part of a prepared plan: per scenario, the default timeout of a step.
#[derive(Default)]
pub struct ExecPlan {
    timeouts: Vec<Duration>,
}

/// An exec step ready to run.
pub struct ExecStep {
    pub plan: onrush_plan::ExecStep,
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

    pub fn compile(&mut self, scenario: usize, step: &onrush_plan::ExecStep) -> ExecStep {
        let label = match &step.command {
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
            plan: step.clone(),
            label,
        }
    }
}

impl StepSpec for ExecStep {
    fn metric(&self) -> usize {
        self.plan.metric
    }

    fn extract(&self) -> &[Extract] {
        &self.plan.extract
    }

    fn checks(&self) -> &[Check] {
        &self.plan.checks
    }

    fn on_failure(&self) -> OnFailure {
        self.plan.on_failure
    }
}
