//! The engine of the current worker thread, for the code that runs a VU's steps: the engine
//! crate (script steps, `after` hooks, `js` checks and conditions), a protocol's session
//! (`before` hooks) and templates (`${fn(...)}`), none of which hold a reference to it.
//!
//! A worker installs its engine once, before its VUs start ([`install`]); a thread without
//! one (a plan without scripts) never reads it past one `None`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use onrush_template::RenderContext;

use crate::engine::{Engine, Failure, FailureKind};

thread_local! {
    static ENGINE: RefCell<Option<Rc<Engine>>> = const { RefCell::new(None) };
    /// The last failure of a call whose caller could not say why it failed (a template's
    /// function): the VU reads it when it classifies the request.
    static PENDING: RefCell<Option<Failure>> = const { RefCell::new(None) };
    /// Failures printed by this thread (the first few, so that a broken script is seen).
    static PRINTED: Cell<u32> = const { Cell::new(0) };
}

/// Makes `engine` this thread's (or removes it), and lets templates call into it.
pub fn install(engine: Option<Engine>) {
    let some = engine.is_some();
    ENGINE.with(|e| *e.borrow_mut() = engine.map(Rc::new));
    onrush_template::script::install(
        some.then_some(template_entry as onrush_template::script::ScriptCall),
    );
}

/// Runs `f` with this thread's engine, if it has one.
pub fn with<R>(f: impl FnOnce(&Engine) -> R) -> Option<R> {
    let engine = ENGINE.with(|e| e.borrow().clone())?;
    Some(f(&engine))
}

/// Keeps `failure` for the VU (and prints the first few of the thread).
pub fn note(failure: Failure) {
    print(&failure);
    PENDING.with(|p| *p.borrow_mut() = Some(failure));
}

/// Prints `failure` to stderr if it is one of this thread's first five.
pub fn print(failure: &Failure) {
    let n = PRINTED.with(|p| {
        let n = p.get();
        p.set(n + 1);
        n
    });
    if n < 5 {
        let what = match failure.kind {
            FailureKind::Error => "script_error",
            FailureKind::Timeout => "script_timeout",
            FailureKind::Failed => "script_failed",
        };
        eprintln!("{what}: {}", failure.message);
    } else if n == 5 {
        eprintln!("script: further script failures on this worker are counted, not printed");
    }
}

/// The failure noted last (taken).
pub fn take_failure() -> Option<Failure> {
    PENDING.with(|p| p.borrow_mut().take())
}

fn template_entry(func: u32, args: &[Vec<u8>], ctx: &RenderContext, out: &mut Vec<u8>) -> bool {
    let Some(vars) = ctx.vars else {
        return false;
    };
    match with(|e| e.template_call(func, args, vars, out)) {
        Some(Ok(())) => true,
        Some(Err(f)) => {
            note(f);
            false
        }
        None => false,
    }
}
