//! The HTTP step's grammar on its own (`Grammars::only(HttpGrammar)`): what each way of writing
//! a request compiles to, and the errors that name the line, the field and the fix. The plan's
//! own tests (onrush-plan/tests) load every other HTTP plan with the built-in grammars.

use std::path::Path;

use onrush_plan::testing::{assert_step_error, load_steps};
use onrush_plan::{Grammars, Step};

use super::HttpGrammar;
use crate::request::{Body, RequestStep};

fn grammars() -> Grammars {
    Grammars::only(HttpGrammar)
}

fn first_request(steps: &str) -> (RequestStep, String) {
    let plan = load_steps(&grammars(), Path::new("."), steps).unwrap();
    let scenario = &plan.scenarios[0];
    let Step::Custom(custom) = &scenario.steps[0] else {
        panic!("a request step");
    };
    assert_eq!(custom.protocol, "http");
    let request = RequestStep::of(&scenario.steps[0]).unwrap();
    let name = scenario.metrics[request.metric].name.clone();
    (request, name)
}

#[test]
fn every_method_key_and_any_method_with_path_compile() {
    for method in ["get", "post", "put", "patch", "delete", "head", "options"] {
        let (r, name) = first_request(&format!("[{{ {method}: /a }}]"));
        assert_eq!(r.method, method.to_uppercase());
        assert_eq!(name, format!("{} /a", method.to_uppercase()));
    }
    let (r, name) = first_request("[{ method: PURGE, path: /cache/1 }]");
    assert_eq!(r.method, "PURGE");
    assert_eq!(name, "PURGE /cache/1");
}

#[test]
fn bodies_headers_auth_query_and_statuses() {
    let (r, _) = first_request(
        r#"[{ post: "/u/${vu}", headers: { X-A: a }, body: "n=${iteration}", query: { q: x }, auth: { bearer: t }, expect_status: [200, 201], timeout: 2s }]"#,
    );
    assert!(matches!(r.body, Body::Inline(_)));
    assert_eq!(r.headers.len(), 2, "X-A and Authorization");
    assert_eq!(r.headers[1].0, "Authorization");
    assert_eq!(r.query.len(), 1);
    assert_eq!(r.expect_status, Some(vec![200, 201]));
    assert_eq!(r.timeout, Some(std::time::Duration::from_secs(2)));
    let (r, _) = first_request("[{ post: /f, form: { a: 1, b: } }]");
    assert!(matches!(&r.body, Body::Form(pairs) if pairs.len() == 2));
}

#[test]
fn an_absolute_url_is_the_steps_own_target() {
    let (r, _) = first_request("[{ get: \"http://example.test:9/x?y=1\" }]");
    let target = r.target.expect("its own target");
    assert_eq!(target.authority(), "example.test:9");
    assert_eq!(r.path.source(), "http://example.test:9/x?y=1");
}

#[test]
fn mistakes_name_the_field_and_the_fix() {
    let g = grammars();
    let dir = Path::new(".");
    assert_step_error(
        &g,
        dir,
        "[{ GET: /a }]",
        "scenarios[0].steps[0].GET",
        "write `get:`",
    );
    assert_step_error(
        &g,
        dir,
        "[{ get: /a, url: /b }]",
        "scenarios[0].steps[0].url",
        "expected the method as the key",
    );
    assert_step_error(
        &g,
        dir,
        "[{ get: /a, post: /b }]",
        "scenarios[0].steps[0].post",
        "make each request its own step",
    );
    assert_step_error(
        &g,
        dir,
        "[{ method: PURGE }]",
        "scenarios[0].steps[0]",
        "without `path:`",
    );
    assert_step_error(
        &g,
        dir,
        "[{ get: a/b }]",
        "scenarios[0].steps[0].get",
        "write `/a/b`",
    );
    assert_step_error(
        &g,
        dir,
        "[{ get: /a, body: x, form: { a: 1 } }]",
        "scenarios[0].steps[0].form",
        "body per request",
    );
    assert_step_error(
        &g,
        dir,
        "[{ get: /a, expect_status: 99 }]",
        "scenarios[0].steps[0].expect_status",
        "100..599",
    );
    assert_step_error(
        &g,
        dir,
        "[{ get: /a, headrs: { A: b } }]",
        "scenarios[0].steps[0].headrs",
        "did you mean `headers`",
    );
    // Keys of a request without a method key: the step says which keys start one.
    assert_step_error(
        &g,
        dir,
        "[{ headers: { A: b } }]",
        "scenarios[0].steps[0]",
        "no step key",
    );
    // A step with no step key: a near miss of one, or of a key that belongs inside a step.
    assert_step_error(
        &g,
        dir,
        "[{ gte: /x }]",
        "scenarios[0].steps[0].gte",
        "did you mean `get`?",
    );
    let shown = assert_step_error(
        &g,
        dir,
        "[{ boddy: x }]",
        "scenarios[0].steps[0].boddy",
        "did you mean `body`?",
    );
    assert!(shown.contains("expected a step key"), "{shown}");
}
