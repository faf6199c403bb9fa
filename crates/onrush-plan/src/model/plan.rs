//! The compiled plan as a whole: its target, settings, scenarios, variables and thresholds, how
//! secret values are masked wherever they would be shown, and what a run across agents does
//! when one is lost.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::{HttpSettings, Scenario, Target, Threshold, UnsetVar};

/// A compiled plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Path as given.
    pub source: PathBuf,
    /// File stem, used for the default results dir.
    pub name: String,
    pub target: Target,
    /// Plan-level defaults.
    pub http: HttpSettings,
    pub scenarios: Vec<Scenario>,
    /// Final values after `-D` overrides and `secrets:` (record them with
    /// [`Plan::recorded_vars`], which masks the secret ones).
    pub vars: BTreeMap<String, String>,
    /// The variables marked `${unset("why")}` in `vars:` that were given no value (neither
    /// `-D` nor the environment): empty in [`Plan::vars`]; `onrush run` warns about them
    /// before it starts, and `run --strict` refuses to start.
    pub unset_vars: Vec<UnsetVar>,
    /// The names of the variables whose values must never be written: those of `secrets:`,
    /// and those whose names say password, token, secret, key, credential or auth.
    pub secrets: BTreeSet<String>,
    /// Plan-level `thresholds:`, in file order (scopes resolved against the scenarios and steps).
    /// Scenario-level ones are in [`Scenario::thresholds`]; [`Plan::all_thresholds`] lists both.
    pub thresholds: Vec<Threshold>,
    /// `setup: { steps }`: run once, by one VU, before any scenario starts; the variables it
    /// extracts are given to every VU of every scenario (and to teardown) as they start.
    /// Compiled as a scenario named `setup` of one VU and one iteration.
    pub setup: Option<Scenario>,
    /// `teardown: { steps }`: run once after every scenario ended, also when the run was
    /// stopped early (a threshold, Ctrl-C, SIGTERM). A scenario named `teardown`.
    pub teardown: Option<Scenario>,
    /// Every file the plan refers to (feeders, bodies, templates, certificates, secret files),
    /// resolved against the plan's directory, without the plan itself: what a distributed run
    /// sends to its agents.
    pub files: Vec<PathBuf>,
    /// `distributed:`: what a run across agents does when one is lost.
    pub distributed: DistributedSettings,
    /// The plan's JavaScript (`scripts:`, and inline `js:`/`script:` code): `None` for a plan
    /// without any, which then makes no engine and pays nothing.
    pub scripts: Option<std::sync::Arc<onrush_script::Scripts>>,
}

/// `distributed:` settings (used by `onrush run --agents`; a single-machine run ignores them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DistributedSettings {
    pub on_agent_loss: OnAgentLoss,
}

/// `on_agent_loss`: what the controller does when an agent goes silent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnAgentLoss {
    /// The run goes on with the others and is marked partial.
    #[default]
    Continue,
    /// Every agent is stopped; their results so far are merged; the run exits with 3.
    Abort,
    /// A spare agent (one that joined beyond the `--agents` needed) takes over the lost
    /// agent's segment from where the run is; without a spare, as `Continue`.
    Replace,
}

impl OnAgentLoss {
    pub fn as_str(&self) -> &'static str {
        match self {
            OnAgentLoss::Continue => "continue",
            OnAgentLoss::Abort => "abort",
            OnAgentLoss::Replace => "replace",
        }
    }
}

/// What a secret's value is shown as.
pub const MASK: &str = "***";

/// Secret values shorter than this are not searched for in text (a secret of "1" would mask
/// every digit); they are still masked where the variable itself is shown.
pub const MASK_MIN_LEN: usize = 4;

impl Plan {
    /// The plan variables as results record them: secret ones as `***`.
    pub fn recorded_vars(&self) -> BTreeMap<String, String> {
        self.vars
            .iter()
            .map(|(k, v)| {
                let shown = if self.secrets.contains(k) { MASK } else { v };
                (k.clone(), shown.to_string())
            })
            .collect()
    }

    /// `text` with every secret value in it replaced by `***` (values shorter than
    /// [`MASK_MIN_LEN`] bytes are left: they would mask
    /// unrelated text).
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for name in &self.secrets {
            let Some(value) = self.vars.get(name) else {
                continue;
            };
            if value.len() >= MASK_MIN_LEN && out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), MASK));
            }
        }
        out
    }

    /// Masks secret values in the names results show (scenarios, steps, checks): a name is
    /// written from the plan's text after `${...}` was expanded, so a check such as
    /// `body_contains: ${api_token}` would carry the value.
    pub(crate) fn mask_names(&mut self) {
        if self.secrets.is_empty() {
            return;
        }
        let mut scenarios = std::mem::take(&mut self.scenarios);
        for s in &mut scenarios {
            s.name = self.mask(&s.name).into_owned();
            for m in &mut s.metrics {
                m.name = self.mask(&m.name).into_owned();
            }
            for c in &mut s.checks {
                c.name = self.mask(&c.name).into_owned();
            }
        }
        self.scenarios = scenarios;
    }

    /// Every threshold of the plan: the plan-level ones, then each scenario's, in file order.
    pub fn all_thresholds(&self) -> Vec<Threshold> {
        let mut all = self.thresholds.clone();
        for s in &self.scenarios {
            all.extend(s.thresholds.iter().cloned());
        }
        all
    }
}
