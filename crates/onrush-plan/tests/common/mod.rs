//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::Path;

use onrush_plan::{Plan, PlanError};

/// The example from the issue, exactly.
pub const EXAMPLE: &str = r#"target: http://127.0.0.1:${PORT:-8080}
vars: { vus: 4 }
http:
  timeout: 5s
  connections: per_vu        # per_vu (default) | per_iteration | per_request
scenarios:
  - name: closed
    load: { vus: "${vus}", iterations: 25 }      # 25 iterations per VU; or duration: 30s; ramp_up: 5s
    steps:
      - { name: home,  get: / }
      - { name: bytes, get: /bytes/1024 }
      - { name: echo,  post: /echo, body: "vu ${vu} iteration ${iteration}" }
  - name: open
    load: { rate: 200/s, duration: 5s, max_vus: 50 }  # open model: arrivals per second
    steps:
      - { get: /delay/5 }
      - { think: 10ms }
"#;

/// Loads with an empty environment.
pub fn load(text: &str) -> Result<Plan, PlanError> {
    load_env(text, &[], &[])
}

/// Loads with the given environment and `-D` overrides.
pub fn load_env(
    text: &str,
    env: &[(&str, &str)],
    overrides: &[(&str, &str)],
) -> Result<Plan, PlanError> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let overrides: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    onrush_plan::load_str_with_options(
        "plan.yaml",
        text,
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &onrush_plan::LoadOptions {
            profiles: &[],
            overrides: &overrides,
            env: &move |name| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            grammars: grammars(),
        },
    )
}

/// The step grammars of onrush's built-in protocols (each protocol crate holds its own): the
/// plans here are loaded as the `onrush` binary loads them.
pub fn grammars() -> &'static onrush_plan::Grammars {
    onrush_protocols::grammars()
}

/// The plan schema as `onrush schema` prints it (with the built-in protocols' steps).
pub fn schema() -> serde_json::Value {
    onrush_plan::json_schema_with(grammars())
}

/// A plan with one scenario around the given `load:` and `steps:` YAML (flow style, one line each).
pub fn scenario(load: &str, steps: &str) -> String {
    format!("target: http://127.0.0.1:8080\nscenarios:\n  - name: s\n    load: {load}\n    steps: {steps}\n")
}

pub fn ok(text: &str) -> Plan {
    match load(text) {
        Ok(p) => p,
        Err(e) => panic!("expected the plan to load, got:\n{e}\n--- plan:\n{text}"),
    }
}

pub fn err(text: &str) -> PlanError {
    match load(text) {
        Ok(p) => panic!("expected an error, got {p:#?}\n--- plan:\n{text}"),
        Err(e) => e,
    }
}
