//! Calls from a template to a function of the plan's JavaScript (`${sign(body, secret)}`).
//!
//! The template language knows nothing of JavaScript: a worker thread that runs a plan with
//! scripts installs its engine's entry point here ([`install`]), once, before its VUs start.
//! A thread-local is the seam because the engine is the worker's own (one per thread, never
//! shared), and because rendering must stay free of any indirection for plans without
//! scripts: only a [`Func::Script`](crate::Func::Script) segment ever reads it.

use std::cell::Cell;

use crate::RenderContext;

/// The worker's JavaScript entry point for templates: calls function `func` with the rendered
/// `args` and appends its result, as text, to `out`. False when the function threw (the
/// engine keeps the error for the VU to classify, see [`SCRIPT_FAILED`]).
pub type ScriptCall =
    fn(func: u32, args: &[Vec<u8>], ctx: &RenderContext, out: &mut Vec<u8>) -> bool;

/// The slot an [`Unset`](crate::Unset) names when a template's script function failed: no
/// variable has it. The worker's engine holds what failed and why.
pub const SCRIPT_FAILED: usize = usize::MAX;

thread_local! {
    static CALL: Cell<Option<ScriptCall>> = const { Cell::new(None) };
}

/// Installs this thread's entry point (a worker whose plan has scripts).
pub fn install(call: Option<ScriptCall>) {
    CALL.with(|c| c.set(call));
}

pub(crate) fn call(func: u32, args: &[Vec<u8>], ctx: &RenderContext, out: &mut Vec<u8>) -> bool {
    match CALL.with(Cell::get) {
        Some(f) => f(func, args, ctx, out),
        // A thread without an engine (a tool rendering a template outside a run) cannot
        // call into a script: the render fails as a script failure.
        None => false,
    }
}
