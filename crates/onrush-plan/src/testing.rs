//! Helpers for a protocol crate's tests of its step grammar: a plan of one scenario around
//! the steps under test, loaded with the grammars given, and errors checked for the place,
//! the field and the fix they name (as onrush-plan's own tests check its errors).

use std::path::Path;

use crate::{Grammars, Plan, PlanError};

/// The plan's text: one scenario of one VU and one iteration, `steps` its steps (one line of
/// flow-style YAML, so the steps are on line 5).
pub fn plan_with_steps(steps: &str) -> String {
    format!("target: http://127.0.0.1:8080\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps: {steps}\n")
}

/// Loads [`plan_with_steps`] as `plan.yaml` in `dir` (files the steps name are relative to it).
pub fn load_steps(grammars: &Grammars, dir: &Path, steps: &str) -> Result<Plan, PlanError> {
    crate::load_str_with_grammars(
        "plan.yaml",
        &plan_with_steps(steps),
        dir,
        &[],
        &[],
        grammars,
    )
}

/// Asserts that the steps are an error on their line (5) at `field` whose text contains `fix`;
/// returns the error as shown.
#[track_caller]
pub fn assert_step_error(
    grammars: &Grammars,
    dir: &Path,
    steps: &str,
    field: &str,
    fix: &str,
) -> String {
    let e = match load_steps(grammars, dir, steps) {
        Ok(plan) => panic!("expected an error, got {plan:#?}\n--- steps: {steps}"),
        Err(e) => e,
    };
    let shown = e.to_string();
    assert!(shown.starts_with("plan.yaml:5:"), "{shown}");
    assert_eq!(e.field(), field, "{shown}");
    assert!(shown.contains(fix), "expected {fix:?} in:\n{shown}");
    shown
}
