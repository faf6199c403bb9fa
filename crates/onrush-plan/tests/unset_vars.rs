//! `vars: { NAME: "${unset(\"why\")}" }`: a variable the plan cannot give a value (what set it
//! did not come across, e.g. a JMeter script); -D or the environment gives one.
use crate::common;

use common::load_env;
use onrush_plan::UnsetVar;
use onrush_proto_http::{Body, RequestStep};

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
    let Some(r) = RequestStep::of(&p.scenarios[0].steps[0]) else {
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

#[test]
fn functions_in_vars_are_computed_once_at_load() {
    let text = plan(
        "  run_id: ${uuid()}\n  started: ${now_ms()}\n  pick: ${random_int(1, 9)}\n  max: 5\n  upto: ${random_int(1, max)}\n  tag: run-${sha1(\"${run_id}\")}\n",
        "[{ get: \"/items/${run_id}?t=${started}&p=${pick}\" }]",
    );
    let p = load_env(&text, &[], &[]).unwrap();
    let run_id = &p.vars["run_id"];
    assert_eq!(run_id.len(), 36, "{run_id}");
    assert!(p.vars["started"].parse::<u64>().unwrap() > 1_700_000_000_000);
    assert!((1..=9).contains(&p.vars["pick"].parse::<u32>().unwrap()));
    assert!((1..=5).contains(&p.vars["upto"].parse::<u32>().unwrap()));
    assert_eq!(p.vars["tag"].len(), "run-".len() + 40);
    let Some(r) = RequestStep::of(&p.scenarios[0].steps[0]) else {
        panic!()
    };
    assert!(r.path.to_string().contains(run_id.as_str()));
    // Another load, another run: another UUID; -D wins.
    let again = load_env(&text, &[], &[]).unwrap();
    assert_ne!(again.vars["run_id"], *run_id);
    let p = load_env(&text, &[], &[("run_id", "fixed")]).unwrap();
    assert_eq!(p.vars["run_id"], "fixed");

    let e = load_env(&plan("  n: ${counter()}\n", "[{ get: / }]"), &[], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("changes per request"), "{e}");
}

#[test]
fn file_reads_a_file_beside_the_plan_at_load() {
    // The tests run with the crate's folder as the plan's folder.
    let text = plan(
        "  dir: tests\n  manifest: ${file(\"${dir}/../Cargo.toml\")}\n",
        "[{ post: /echo, body: '${file(\"Cargo.toml\")}' }]",
    );
    let p = load_env(&text, &[], &[]).unwrap();
    assert!(p.vars["manifest"].contains("name = \"onrush-plan\""));
    assert!(p.files.iter().any(|f| f.ends_with("Cargo.toml")));

    let e = load_env(
        &plan("  x: '${file(\"nope.txt\")}'\n", "[{ get: / }]"),
        &[],
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cannot read"), "{e}");
    let text = plan(
        "  dir: \"${unset(\\\"JMeter property `dir`\\\")}\"\n  body: ${file(\"${dir}/f.json\")}\n",
        "[{ get: / }]",
    );
    let e = load_env(&text, &[], &[]).unwrap_err().to_string();
    assert!(e.contains("pass -D dir=VALUE"), "{e}");
}
