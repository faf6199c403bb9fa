//! The integration tests of onrush-import, in one binary (one link instead of one per file).

#[path = "corpus.rs"]
mod corpus;
#[path = "fidelity.rs"]
mod fidelity;
#[path = "mappings.rs"]
mod mappings;
#[path = "scripts.rs"]
mod scripts;

/// Loads an imported plan as the `onrush` binary does: with the step grammars of every
/// built-in protocol (an imported OS Process Sampler is an `exec:` step, a TCP Sampler a
/// `tcp:` step).
pub fn load_plan(
    yaml: &str,
    dir: &std::path::Path,
    overrides: &[(String, String)],
) -> Result<onrush_plan::Plan, onrush_plan::PlanError> {
    onrush_plan::load_str_with_options(
        "plan.yaml",
        yaml,
        dir,
        &onrush_plan::LoadOptions {
            profiles: &[],
            overrides,
            env: &|name| std::env::var(name).ok(),
            grammars: onrush_protocols::grammars(),
        },
    )
}
