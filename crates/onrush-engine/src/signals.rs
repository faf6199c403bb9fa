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

/// Whether a stop was asked for.
pub fn interrupted() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0
}

/// Asks the run to stop as Ctrl-C does, from inside the process (an agent whose controller
/// said stop, or went away).
pub fn request_stop() {
    let _ = SIGNALS.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst);
}
