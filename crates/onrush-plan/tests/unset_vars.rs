//! `vars: { NAME: "${unset(\"why\")}" }`: a variable the plan cannot give a value (what set it
//! did not come across, e.g. a JMeter script); -D or the environment gives one.
use crate::common;

use common::load_env;
use onrush_plan::{Body, Step, UnsetVar};

fn plan(vars: &str, steps: &str) -> String {
    format!("target: http://127.0.0.1:8080\nvars:\n{vars}scenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps: {steps}\n")
}

#[test]
fn an_unset_variable_is_empty_in_requests_and_listed_for_the_run() {
    let text = plan(
        "  token: \"${unset(\\\"set by JSR223 PreProcessor `sign`\\\")}\"\n  path: /items/${token}\n",
        "[{ post: \"${path}\", body: \"t=${token}\" }]",
    );
    let p = load_env(&text, &[], &[]).unwrap();
    assert_eq!(
        p.unset_vars,
        [UnsetVar {
            name: "token".into(),
            reason: "set by JSR223 PreProcessor `sign`".into()
        }]
    );
    assert_eq!(p.vars["token"], "");
    let Step::Request(r) = &p.scenarios[0].steps[0] else {
        panic!()
    };
    let Body::Inline(body) = &r.body else {
        panic!()
    };
    assert_eq!(body.to_string(), "t=");

    // Given with -D or the environment, it is an ordinary variable.
    let p = load_env(&text, &[], &[("token", "abc")]).unwrap();
    assert!(p.unset_vars.is_empty());
    assert_eq!(p.vars["path"], "/items/abc");
    let p = load_env(&text, &[("token", "xyz")], &[]).unwrap();
    assert!(p.unset_vars.is_empty());
    assert_eq!(p.vars["token"], "xyz");
}

#[test]
fn an_unset_variable_read_at_load_says_to_pass_it_with_d() {
    let text = plan(
        "  folder: \"${unset(\\\"JMeter property `folder` has no default\\\")}\"\n  work: ${folder}/work\n",
        "[{ exec: [ls], cwd: \"${folder}\" }]",
    );
    let e = load_env(&text, &[], &[]).unwrap_err().to_string();
    assert!(
        e.contains("`${folder}` has no value (JMeter property `folder` has no default)"),
        "{e}"
    );
    assert!(e.contains("pass -D folder=VALUE"), "{e}");
    assert!(!e.contains("is not a directory"), "{e}");

    // Unset through another variable: the hint names the one to pass.
    let text = plan(
        "  folder: \"${unset()}\"\n  work: ${folder}/work\n",
        "[{ exec: [ls], cwd: \"${work}\" }]",
    );
    let e = load_env(&text, &[], &[]).unwrap_err().to_string();
    assert!(
        e.contains("`${work}`, which uses `${folder}`, has no value"),
        "{e}"
    );
    assert!(e.contains("pass -D folder=VALUE"), "{e}");

    let dir = env!("CARGO_MANIFEST_DIR");
    let p = load_env(&text, &[], &[("folder", dir)]);
    assert!(p.is_err_and(|e| e.to_string().contains("work is not a directory")));
    load_env(&text, &[], &[("work", dir), ("folder", dir)]).unwrap();
}

#[test]
fn the_marker_is_for_vars_only() {
    let text = plan("  a: 1\n", "[{ get: \"/${unset()}\" }]");
    let e = load_env(&text, &[], &[]).unwrap_err().to_string();
    assert!(e.contains("unknown function `unset`"), "{e}");
}
