//! onrush-plan: the plan file format.
//!
//! Reads a YAML plan into a compiled [`Plan`]: variables and environment substituted, `${...}`
//! templates compiled (only `${vu}` and `${iteration}` stay as per-request slots), load models
//! normalised, steps given metric ids. Every problem is a [`PlanError`] that names the file,
//! line, column and field, says what was expected and, where possible, how to fix it.
//!
//! A plan's request steps are its protocols' (onrush-plan holds none): a plan is loaded with
//! the step grammars of the binary's protocols, onrush's own being `onrush_protocols::grammars()`.
//!
//! ```
//! let plan = onrush_plan::load_str_with_grammars(
//!     "plan.yaml",
//!     "target: builtin\nscenarios:\n  - name: s\n    load: { vus: 2, iterations: 3 }\n    steps: [{ get: / }]\n",
//!     std::path::Path::new("."),
//!     &[],
//!     &[],
//!     onrush_protocols::grammars(),
//! )
//! .unwrap();
//! assert_eq!(plan.scenarios[0].metrics[0].name, "GET /");
//! ```

use std::path::{Path, PathBuf};

mod compile;
mod error;
pub mod grammar;
mod model;
mod profiles;
mod schema;
pub mod testing;
// The `${...}` language, a crate of its own (onrush-template); `crate::template` keeps its paths.
use onrush_template as template;
// Durations, rates and sizes as a plan writes them (onrush-units); `crate::units` keeps its paths.
use onrush_units as units;
mod yaml;

pub use compile::{scheme_typo, UnsetVar};
pub use error::PlanError;
pub use grammar::{Grammars, StepGrammar};
// The compiled plan's types (`Plan`, `Scenario`, `Step`, ...), each in its file under model/.
pub use model::*;
pub use onrush_threshold::{
    CompareOp, LatencyFamily, LatencyStat, Threshold, ThresholdMetric, ThresholdScope, ValueKind,
};
pub use schema::{json_schema, json_schema_with};
pub use template::{RenderContext, Template, Unset, VarValue, Vars};

/// Reads and compiles the plan file at `path` with the step grammars of the protocols the
/// binary has (`onrush_protocols::grammars()` for onrush's own; onrush-plan holds none: a
/// plan's request steps are all some protocol's). The plan's `profiles:` named in `profiles`
/// apply in order first (`onrush run -P smoke,tls`), then `overrides` (`-D name=value`).
pub fn load_with_grammars(
    path: &Path,
    profiles: &[String],
    overrides: &[(String, String)],
    grammars: &Grammars,
) -> Result<Plan, PlanError> {
    let (name, text, base_dir) = read_plan(path)?;
    let env = |name: &str| std::env::var(name).ok();
    compile::compile(&name, &text, &base_dir, profiles, overrides, &env, grammars)
}

/// Like [`load_with_grammars`], for plan text read elsewhere: `source_name` is what errors
/// call it, `base_dir` what its relative paths start from.
pub fn load_str_with_grammars(
    source_name: &str,
    text: &str,
    base_dir: &Path,
    profiles: &[String],
    overrides: &[(String, String)],
    grammars: &Grammars,
) -> Result<Plan, PlanError> {
    let env = |name: &str| std::env::var(name).ok();
    compile::compile(
        source_name,
        text,
        base_dir,
        profiles,
        overrides,
        &env,
        grammars,
    )
}

/// Everything a plan text is compiled with beside itself (see [`load_str_with_options`]).
pub struct LoadOptions<'a> {
    /// The plan's `profiles:` applied in order first (`-P smoke,tls`).
    pub profiles: &'a [String],
    /// `-D name=value` pairs, applied after the profiles.
    pub overrides: &'a [(String, String)],
    /// Where `${env:NAME}` and `${NAME}` of the environment are read.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The step grammars of the protocols the plan may use.
    pub grammars: &'a Grammars,
}

/// Compiles plan `text` (named `source_name` in messages, its files relative to `base_dir`)
/// with every option spelled out: the form the other `load_*` functions are shorthands of.
pub fn load_str_with_options(
    source_name: &str,
    text: &str,
    base_dir: &Path,
    options: &LoadOptions<'_>,
) -> Result<Plan, PlanError> {
    compile::compile(
        source_name,
        text,
        base_dir,
        options.profiles,
        options.overrides,
        options.env,
        options.grammars,
    )
}

/// The plan at `path` with `profiles` applied, as YAML (`onrush validate -P … --print`).
pub fn effective_yaml(path: &Path, profiles: &[String]) -> Result<String, PlanError> {
    let (name, text, _) = read_plan(path)?;
    let root = match yaml::parse(&text) {
        Ok(Some(root)) => root,
        Ok(None) => return Ok(String::new()),
        Err(e) => {
            return Err(
                PlanError::at(&name, &text, e.offset..e.offset + 1, "", e.message)
                    .with_opt_hint(e.hint),
            )
        }
    };
    Ok(profiles::emit(&profiles::apply(
        &name, &text, root, profiles,
    )?))
}

/// The plan file's name (for messages), text and folder.
fn read_plan(path: &Path) -> Result<(String, String, PathBuf), PlanError> {
    let name = path.display().to_string();
    let text = std::fs::read(path).map_err(|e| {
        let msg = match e.kind() {
            std::io::ErrorKind::NotFound => {
                "the plan file does not exist; expected a path to a YAML plan".to_string()
            }
            _ => format!("cannot read the plan file: {e}"),
        };
        PlanError::plain(&name, "", msg)
    })?;
    let text = String::from_utf8(text).map_err(|e| {
        PlanError::plain(
            &name,
            "",
            format!(
                "the plan file is not UTF-8 text (invalid byte at offset {}); expected UTF-8 YAML",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    let base_dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((name, text, base_dir))
}
