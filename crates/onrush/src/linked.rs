//! The protocols this binary was built with, as every command sees them: fixed once, by
//! [`main`](crate::main), before the command line is read.
//!
//! A command loads plans with the protocols' step grammars and prepares runs through
//! [`onrush_engine::prepare_boxed`] for the binary's protocol type: the one virtual call is at
//! preparing and starting a run; every request runs monomorphised code.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Parser;
use onrush_engine::{PrepareFn, PreparedRun};
use onrush_plan::{Grammars, Plan, PlanError};
use onrush_protocol::Protocol;

struct Linked {
    grammars: Grammars,
    prepare: PrepareFn,
}

static LINKED: OnceLock<Linked> = OnceLock::new();

/// The protocols given to [`main`]; onrush's own when none were (the library's tests).
fn linked() -> &'static Linked {
    LINKED.get_or_init(|| Linked {
        grammars: Grammars::default(),
        prepare: onrush_engine::prepare_boxed::<onrush_protocols::Protocols>,
    })
}

/// The command line of a binary whose protocols are `P`: onrush's own are
/// `onrush_protocols::Protocols`; a binary that adds its own protocol passes
/// `onrush_protocol::With<onrush_protocols::Protocols, MyProtocol>`. Every command (`run`,
/// `validate`, `schema`, `agent`, distributed runs, `report`, ...) then knows its steps.
pub fn main<P: Protocol>() -> ExitCode {
    let mut grammars = Grammars::default();
    if let Err(e) = P::register(&mut grammars) {
        eprintln!("error: this build's protocols do not fit together: {e}");
        return ExitCode::from(crate::cli::exit::RUNTIME as u8);
    }
    let linked = Linked {
        grammars,
        prepare: onrush_engine::prepare_boxed::<P>,
    };
    if LINKED.set(linked).is_err() {
        eprintln!("error: onrush::main was called twice in one process");
        return ExitCode::from(crate::cli::exit::RUNTIME as u8);
    }
    let cli = crate::cli::Cli::parse();
    let code = crate::cli::dispatch(cli);
    ExitCode::from(code as u8)
}

/// The step grammars of the protocols onrush-plan does not hold.
pub(crate) fn grammars() -> &'static Grammars {
    &linked().grammars
}

/// Loads the plan at `path` with this binary's step grammars.
pub(crate) fn load_plan(
    path: &Path,
    profiles: &[String],
    overrides: &[(String, String)],
) -> Result<Plan, PlanError> {
    onrush_plan::load_with_grammars(path, profiles, overrides, grammars())
}

/// Compiles plan `text` (named `source_name`, its files relative to `base_dir`) with this
/// binary's step grammars.
pub(crate) fn load_plan_str(
    source_name: &str,
    text: &str,
    base_dir: &Path,
    overrides: &[(String, String)],
) -> Result<Plan, PlanError> {
    onrush_plan::load_str_with_grammars(source_name, text, base_dir, &[], overrides, grammars())
}

/// Prepares `plan` for a run with this binary's protocols.
pub(crate) fn prepare(
    plan: &Plan,
    builtin: Option<SocketAddr>,
) -> anyhow::Result<Box<dyn PreparedRun>> {
    (linked().prepare)(plan, builtin)
}
