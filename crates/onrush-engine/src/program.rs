//! A scenario's steps flattened into a small program, so that a VU runs loops, groups and
//! branches with a program counter and a frame stack instead of recursive (boxed) futures.

use std::time::Duration;

use onrush_plan::{Condition, ConditionTest, RenderContext, VarValue, Vars};

/// One instruction of a scenario's program; `S` is the protocol's compiled step.
pub enum Op<S> {
    /// A request of the protocol; `metric` indexes the scenario's metrics.
    Request {
        metric: usize,
        step: Box<S>,
        /// `after:`: the plan's script function that reads the reply.
        after: Option<u32>,
    },
    /// `script:`: a function of the plan's JavaScript, timed as a sample of `metric`.
    Script {
        metric: usize,
        func: u32,
    },
    Think {
        min: Duration,
        max: Duration,
    },
    /// Start of a counted loop body; `end` is the index of the matching `LoopEnd`.
    LoopStart {
        count: u64,
        end: usize,
    },
    /// Start of a `while` loop: runs the body while `condition` holds, at most `max` times.
    WhileStart {
        condition: Condition,
        max: u64,
        end: usize,
    },
    /// Start of a `foreach` loop over the values of `list`, each put in `item`.
    ForEachStart {
        list: usize,
        item: usize,
        end: usize,
    },
    /// End of any loop body; `start` is the index of the matching start op.
    LoopEnd {
        start: usize,
    },
    /// A group (transaction) starts: its sample covers everything up to `GroupEnd`.
    GroupStart {
        metric: usize,
    },
    GroupEnd,
    /// Falls through when the condition holds, else jumps to `otherwise`.
    If {
        condition: Condition,
        otherwise: usize,
    },
    Jump {
        to: usize,
    },
    /// Falls through in a VU's first run of this block, else jumps to `end`.
    Once {
        id: usize,
        end: usize,
    },
    /// Jumps to one branch, chosen by weight: `(cumulative weight, first op)`.
    Random {
        branches: Vec<(u64, usize)>,
    },
}

/// What a VU keeps per open loop or group while it runs the program.
pub enum Frame {
    Count { left: u64 },
    While { done: u64 },
    ForEach { values: Vec<Vec<u8>>, next: usize },
    Group(GroupRun),
}

/// A group in progress.
pub struct GroupRun {
    pub metric: usize,
    pub started: onrush_protocol::Moment,
    /// A request inside failed (the group's sample is then a failure).
    pub failed: bool,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Whether `condition` holds for the VU's variables (`who`: for a `js:` condition's `ctx`).
pub fn holds(
    condition: &Condition,
    vars: &Vars,
    ctx: &RenderContext,
    scratch: &mut Vec<u8>,
    who: onrush_script::Caller,
) -> bool {
    if let ConditionTest::Script(func) = condition.test {
        // A condition that throws does not hold; the failure is printed and counted with the
        // next request's (see `Vu::record`).
        return match onrush_script::worker::with(|e| e.condition(func, who, vars)) {
            Some(Ok(holds)) => holds,
            Some(Err(f)) => {
                onrush_script::worker::note(f);
                false
            }
            None => false,
        };
    }
    let value: Option<&[u8]> = match vars.get(condition.var) {
        VarValue::Unset => None,
        VarValue::One(v) => Some(v),
        VarValue::Many(list) => list.first().map(Vec::as_slice),
    };
    match &condition.test {
        ConditionTest::Exists(want) => value.is_some() == *want,
        ConditionTest::Equals(t) | ConditionTest::NotEquals(t) => {
            scratch.clear();
            let rendered = t.render(ctx, scratch).is_ok();
            let equal = rendered && value == Some(&scratch[..]);
            equal == matches!(condition.test, ConditionTest::Equals(_))
        }
        ConditionTest::Matches(re) => value.is_some_and(|v| re.is_match(v)),
        ConditionTest::Script(_) => unreachable!("answered above"),
    }
}
