//! Ctrl-C, SIGTERM and SIGHUP: the first asks the run to stop and write its results; the
//! second exits at once (what the run had closed is on disk already: the results directory is
//! written as the run goes). The handler only touches an atomic (async-signal-safe) or calls
//! `_exit`.
//!
//! SIGHUP is what a run gets when its terminal or SSH session goes away: by default it would
//! kill the process with nothing written, so it stops the run like SIGTERM (the printing at the
//! end then ignores the terminal being gone).

use std::sync::atomic::{AtomicUsize, Ordering};

static SIGNALS: AtomicUsize = AtomicUsize::new(0);
/// Signals that came before [`cleanup_phase`]: a run started after it is not stopped by them.
static BEFORE_CLEANUP: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP.
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only does async-signal-safe things; sigaction is given a valid,
        // zero-initialised struct.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Whether a stop was asked for (since [`cleanup_phase`], if it was called).
pub fn interrupted() -> bool {
    SIGNALS.load(Ordering::SeqCst) > BEFORE_CLEANUP.load(Ordering::SeqCst)
}

/// Starts a cleanup that must run even after a first Ctrl-C/SIGTERM (a plan's teardown): the
/// signals so far no longer count as a stop. A first signal during the cleanup still stops
/// it; a second signal in all still exits at once, skipping it.
pub fn cleanup_phase() {
    BEFORE_CLEANUP.store(SIGNALS.load(Ordering::SeqCst), Ordering::SeqCst);
}

/// Asks the run to stop as Ctrl-C does, from inside the process (an agent whose controller
/// said stop, or went away).
pub fn request_stop() {
    let _ = SIGNALS.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst);
}

/// Whether a stop was asked for before [`cleanup_phase`] was called.
pub fn interrupted_before_cleanup() -> bool {
    BEFORE_CLEANUP.load(Ordering::SeqCst) > 0
}
