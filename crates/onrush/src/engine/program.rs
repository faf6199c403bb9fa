//! A scenario's steps flattened into a small program, so that a VU runs loops with a program
//! counter and a counter stack instead of recursive (boxed) futures.

use std::time::Duration;

use crate::protocol::http::HttpStep;

pub enum Op {
    Request {
        metric: usize,
        step: Box<HttpStep>,
    },
    Think {
        min: Duration,
        max: Duration,
    },
    /// Start of a loop body; `end` is the index of the matching `LoopEnd`.
    LoopStart {
        count: u64,
        end: usize,
    },
    /// End of a loop body; `start` is the index of the matching `LoopStart`.
    LoopEnd {
        start: usize,
    },
}

/// Executes the control-flow op at `pc` and returns the next pc; `counters` is the VU's loop stack.
pub fn control(ops: &[Op], pc: usize, counters: &mut Vec<u64>) -> usize {
    match ops[pc] {
        Op::LoopStart { count, end } => {
            if count == 0 {
                end + 1
            } else {
                counters.push(count);
                pc + 1
            }
        }
        Op::LoopEnd { start } => {
            let remaining = counters.last_mut().expect("loop stack matches program");
            *remaining -= 1;
            if *remaining > 0 {
                start + 1
            } else {
                counters.pop();
                pc + 1
            }
        }
        _ => pc + 1,
    }
}
