//! onrush's JavaScript: what a plan's `scripts:` bring, from load to the worker threads.
//!
//! - At plan load ([`load`]), the plan's ES modules are read (with the files they import), run
//!   once in a throw-away engine to check them (a syntax error or a top-level exception is a
//!   plan error at its file:line:col), and their exports listed. The plan compiler then asks
//!   [`ScriptsBuilder`] for a function number per use: an export (`before: sign`), or an inline
//!   snippet (`script: "..."`, `check: [{ js: ... }]`, `if: { js: ... }`), each checked alone
//!   so that its error points at the plan's own line.
//! - At run time each worker thread makes one [`Engine`] (one QuickJS runtime, shared by all of
//!   its VUs; each VU's `ctx` kept apart inside it), so memory grows by a small object per VU,
//!   not by a VM per VU. A plan without scripts makes no engine and pays nothing.
//!
//! Scripts do no network I/O of their own: every request goes through a measured step, so
//! that what a script asks for is counted, timed and classified like any other request.

mod builtins;
mod engine;
mod load;
mod location;
pub mod worker;

pub use engine::{Caller, Engine, Failure, FailureKind, Reply, Request};
pub use load::{load, scan_var_names, LoadError, Scripts, ScriptsBuilder};
pub use onrush_template::script::SCRIPT_FAILED;

/// A function of the plan's scripts, by number (its index in [`Scripts::functions`]).
pub type FunctionId = u32;

/// The default limit of one call's run time: past it the call is interrupted and counted as
/// `script_timeout` (`scripts_timeout:` in the plan changes it).
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests;
