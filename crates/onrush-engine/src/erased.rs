//! A prepared run whose protocol type is out of sight: how a command-line front end that is
//! handed its list of protocols once, at start, prepares and runs plans without being generic
//! over them. Only preparing and starting a run go through a virtual call; the run itself is
//! [`run`](crate::run) monomorphised for the protocols the binary linked.

use std::net::SocketAddr;

use onrush_plan::{Plan, VarValue};
use onrush_protocol::Protocol;

use crate::{FinishError, Prepared, RunOptions, RunOutcome};

/// A [`Prepared`] run of some protocol.
pub trait PreparedRun {
    /// See [`Prepared::seed_vars`].
    fn seed_vars(&mut self, values: &[(String, VarValue)]);
    /// The addresses the plan talks to.
    fn targets(&self) -> &[SocketAddr];
    /// Keeps the variables of the first scenario's VU when it ends (a `setup:` phase).
    fn keep_first_scenario_vars(&mut self);
    /// Runs it ([`run`](crate::run)).
    fn run(self: Box<Self>, options: RunOptions) -> Result<RunOutcome, FinishError>;
}

impl<P: Protocol> PreparedRun for Prepared<P> {
    fn seed_vars(&mut self, values: &[(String, VarValue)]) {
        Prepared::seed_vars(self, values)
    }

    fn targets(&self) -> &[SocketAddr] {
        &self.targets
    }

    fn keep_first_scenario_vars(&mut self) {
        if let Some(first) = self.scenarios.first_mut() {
            first.keep_vars = true;
        }
    }

    fn run(self: Box<Self>, options: RunOptions) -> Result<RunOutcome, FinishError> {
        crate::run(*self, options)
    }
}

/// How a front end prepares a plan with the protocols it was given.
pub type PrepareFn = fn(&Plan, Option<SocketAddr>) -> anyhow::Result<Box<dyn PreparedRun>>;

/// [`prepare`](crate::prepare) for `P`, boxed: a [`PrepareFn`].
pub fn prepare_boxed<P: Protocol>(
    plan: &Plan,
    builtin: Option<SocketAddr>,
) -> anyhow::Result<Box<dyn PreparedRun>> {
    Ok(Box::new(crate::prepare::<P>(plan, builtin)?))
}
