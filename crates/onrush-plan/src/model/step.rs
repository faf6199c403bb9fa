//! The steps of a scenario: onrush's own (think, loop, group, if, once, random), a protocol's
//! step compiled by its grammar, the conditions steps test, what a few protocols send (a
//! command, a TCP payload), and what a VU does after a failure.

use std::path::PathBuf;
use std::time::Duration;

use crate::{Check, Extract, Shared, Template};

// Steps are built once at load and only read on the hot path; the size difference between
// variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A request step of a protocol (HTTP's `get:` as much as a `redis:` step of a protocol
    /// built outside onrush), compiled by the protocol's [`StepGrammar`](crate::StepGrammar).
    Custom(CustomStep),
    /// Fixed: `min == max`; `1s..3s`: uniform in `[min, max]`.
    Think {
        min: Duration,
        max: Duration,
    },
    Loop {
        count: u64,
        steps: Vec<Step>,
    },
    /// `loop: { while: CONDITION, max: N, steps }`: runs while the condition holds, at most
    /// `max` times.
    While {
        condition: Condition,
        max: u64,
        steps: Vec<Step>,
    },
    /// `loop: { foreach: LIST, as: ITEM, steps }`: once per value of the list variable.
    ForEach {
        list: usize,
        item: usize,
        steps: Vec<Step>,
    },
    /// `group: { name, steps }`: measured as a whole under metric `metric`.
    Group {
        metric: usize,
        steps: Vec<Step>,
    },
    /// `if: CONDITION, then: [...], else: [...]`.
    If {
        condition: Condition,
        then: Vec<Step>,
        otherwise: Vec<Step>,
    },
    /// `once: [...]`: runs in a VU's first iteration only (`id` indexes the VU's flags).
    Once {
        id: usize,
        steps: Vec<Step>,
    },
    /// `random: [{ weight, steps }, ...]`: one branch per run, chosen by weight.
    Random {
        branches: Vec<(u32, Vec<Step>)>,
    },
    /// `script: NAME` (an exported function) or `script: CODE`: JavaScript run with the VU's
    /// `ctx`, measured under `metric` (a group-like sample: its run time, and its failure).
    Script {
        metric: usize,
        /// The plan's script function ([`Plan::scripts`](crate::Plan::scripts)).
        func: u32,
    },
}

/// A step of a protocol whose grammar was passed in [`Grammars`](crate::Grammars): what every
/// request step has, compiled here, and the protocol's own part, compiled by its grammar.
#[derive(Clone)]
pub struct CustomStep {
    /// The grammar's key (`redis`): which protocol compiles the step for the run.
    pub protocol: &'static str,
    /// Index into [`Scenario::metrics`](crate::Scenario::metrics).
    pub metric: usize,
    /// `timeout:`, when the step has one.
    pub timeout: Option<Duration>,
    pub extract: Vec<Extract>,
    pub checks: Vec<Check>,
    pub on_failure: OnFailure,
    /// `before: FUNCTION`: an exported script function that may change the request before it
    /// is sent (a protocol that supports it says so: `StepGrammar::supports_before`).
    pub before: Option<u32>,
    /// `after: FUNCTION`: an exported script function that reads the reply, may set variables
    /// and may fail the step.
    pub after: Option<u32>,
    spec: std::sync::Arc<dyn std::any::Any + Send + Sync>,
}

impl CustomStep {
    pub(crate) fn new(
        protocol: &'static str,
        metric: usize,
        timeout: Option<Duration>,
        outcome: (Vec<Extract>, Vec<Check>, OnFailure),
        spec: Box<dyn std::any::Any + Send + Sync>,
    ) -> Self {
        let (extract, checks, on_failure) = outcome;
        CustomStep {
            protocol,
            metric,
            timeout,
            extract,
            checks,
            on_failure,
            before: None,
            after: None,
            spec: spec.into(),
        }
    }

    /// The protocol's own compiled step, as its grammar made it (`None` for another type).
    pub fn spec<T: 'static>(&self) -> Option<&T> {
        self.spec.downcast_ref()
    }

    /// True when extractors or checks need the response body.
    pub fn needs_body(&self) -> bool {
        self.after.is_some() || crate::reads_body(&self.extract, &self.checks)
    }
}

impl std::fmt::Debug for CustomStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomStep")
            .field("protocol", &self.protocol)
            .field("metric", &self.metric)
            .field("timeout", &self.timeout)
            .field("extract", &self.extract)
            .field("checks", &self.checks)
            .field("on_failure", &self.on_failure)
            .finish_non_exhaustive()
    }
}

/// Two custom steps are equal when they are the same compiled step of the same plan (the
/// protocol's part has no equality of its own).
impl PartialEq for CustomStep {
    fn eq(&self, other: &Self) -> bool {
        self.protocol == other.protocol
            && self.metric == other.metric
            && self.timeout == other.timeout
            && self.extract == other.extract
            && self.checks == other.checks
            && self.on_failure == other.on_failure
            && std::sync::Arc::ptr_eq(&self.spec, &other.spec)
    }
}

/// A test on a runtime variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub var: usize,
    pub test: ConditionTest,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConditionTest {
    /// `exists: true`: the variable has a value (`exists: false`: it has none).
    Exists(bool),
    /// `equals: VALUE`
    Equals(Template),
    /// `not_equals: VALUE`
    NotEquals(Template),
    /// `matches: REGEX`
    Matches(Shared<regex::bytes::Regex>),
    /// `js: EXPRESSION`: the plan's script function (an inline expression) is truthy.
    Script(u32),
}

/// What an exec step runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecCommand {
    /// `exec: [program, args...]`: run directly (each item a template, never split).
    Argv(Vec<Template>),
    /// `shell: TEXT`: run as `sh -c TEXT`.
    Shell(Template),
}

/// The bytes a TCP step sends (and a UDP step's datagram, never from a file).
#[derive(Debug, Clone, PartialEq)]
pub enum TcpPayload {
    /// `send: TEXT` (templates allowed).
    Text(Template),
    /// `send_hex: "DE AD BE EF"`.
    Bytes(Vec<u8>),
    /// `send_file: PATH` (relative to the plan, checked when it loads): the file's bytes,
    /// streamed from disk in chunks at each request, never held whole in memory.
    File(PathBuf),
}

/// `on_failure`: what a VU does after a failed request or check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// `continue` (default): go on with the next step.
    #[default]
    Continue,
    /// `next_iteration`: end this iteration, start the next.
    NextIteration,
    /// `stop_vu`: this VU runs no more iterations.
    StopVu,
    /// `stop_test`: the whole test stops (results are written as after Ctrl-C).
    StopTest,
}

impl OnFailure {
    pub fn as_str(&self) -> &'static str {
        match self {
            OnFailure::Continue => "continue",
            OnFailure::NextIteration => "next_iteration",
            OnFailure::StopVu => "stop_vu",
            OnFailure::StopTest => "stop_test",
        }
    }
}
