//! `exec:` / `shell:` steps: what they compile to, and bad ones as errors naming the line,
//! the field and the fix.
use std::path::Path;

use onrush_plan::testing::{assert_step_error, load_steps};
use onrush_plan::{ExecCommand, Grammars, Plan, PlanError, Step};
use onrush_proto_exec::{ExecGrammar, ExecSpec};

/// Loads the steps with the exec grammar (the plan's folder: this crate's).
fn load(steps: &str) -> Result<Plan, PlanError> {
    load_steps(&Grammars::only(ExecGrammar), here(), steps)
}

fn here() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The exec step's own part, with the step's timeout beside it.
struct Compiled {
    spec: ExecSpec,
    timeout: Option<std::time::Duration>,
}

impl std::ops::Deref for Compiled {
    type Target = ExecSpec;
    fn deref(&self) -> &ExecSpec {
        &self.spec
    }
}

fn exec_step(steps: &str) -> Compiled {
    let plan = load(steps).unwrap_or_else(|e| panic!("{e}"));
    match &plan.scenarios[0].steps[0] {
        Step::Custom(step) => Compiled {
            spec: step.spec::<ExecSpec>().expect("an exec step").clone(),
            timeout: step.timeout,
        },
        other => panic!("not an exec step: {other:?}"),
    }
}

/// Asserts the error is at line 5 (the steps' line), names `field` and contains `fix`.
#[track_caller]
fn check(steps: &str, field: &str, fix: &str) {
    assert_step_error(&Grammars::only(ExecGrammar), here(), steps, field, fix);
}

#[test]
fn argv_and_shell_steps_compile() {
    let e = exec_step(
        r#"[{ exec: [wget, -q, "u${vu}"], env: { A: "x${vu}" }, stdin: "in", timeout: 2s, expect_exit: [0, 4], max_output: 2KiB }]"#,
    );
    let ExecCommand::Argv(argv) = &e.command else {
        panic!("{:?}", e.spec)
    };
    assert_eq!(argv.len(), 3);
    assert!(argv[2].uses_vu());
    assert_eq!(e.env[0].0, "A");
    assert_eq!(e.expect_exit, [0, 4]);
    assert_eq!(e.max_output, 2048);
    assert_eq!(e.timeout, Some(std::time::Duration::from_secs(2)));
    let plan = load(r#"[{ shell: "ls | wc -l" }, { exec: [true] }]"#).unwrap();
    assert_eq!(plan.scenarios[0].metrics[0].name, "shell ls");
    assert_eq!(plan.scenarios[0].metrics[1].name, "exec true");
    let shell = exec_step(r#"[{ shell: "exit 1", expect_exit: 1 }]"#);
    assert!(matches!(shell.command, ExecCommand::Shell(_)));
    assert_eq!(shell.expect_exit, [1]);
    assert_eq!(shell.max_output, 1 << 20);
}

#[test]
fn bad_exec_steps_name_the_field_and_the_fix() {
    check(
        r#"[{ exec: "wget -q x" }]"#,
        "scenarios[0].steps[0].exec",
        "write `exec: [wget, -q, x]`",
    );
    check(
        r#"[{ exec: [a], shell: b }]"#,
        "scenarios[0].steps[0].shell",
        "expected one command per step",
    );
    check(
        r#"[{ shell: x, expect_exit: 300 }]"#,
        "scenarios[0].steps[0].expect_exit",
        "at most 255",
    );
    check(
        r#"[{ shell: x, cwd: no-such-dir }]"#,
        "scenarios[0].steps[0].cwd",
        "is not a directory",
    );
    check(
        r#"[{ shell: x, max_output: lots }]"#,
        "scenarios[0].steps[0].max_output",
        "not a byte size",
    );
    check(
        r#"[{ shell: x, env: [A] }]"#,
        "scenarios[0].steps[0].env",
        "expected a mapping of variable names",
    );
    check(
        r#"[{ shell: x, stdn: y }]"#,
        "scenarios[0].steps[0].stdn",
        "stdin",
    );
}
