//! The plan side of the protocol seam: a step grammar onrush-plan does not hold, passed in
//! `Grammars`, compiles its steps into `Step::Custom` with the plan's errors and schema.

use std::path::Path;
use std::sync::Arc;

use onrush_plan::grammar::{CompiledStep, Mapping, StepGrammar};
use onrush_plan::{Grammars, PlanError, Step, Template};

/// A toy protocol: `- { kv: HOST:PORT, put: [key, value] }` or `get: key`.
struct Kv;

#[derive(Debug)]
struct KvStep {
    host: String,
    port: u16,
    args: Vec<Template>,
}

impl StepGrammar for Kv {
    fn key(&self) -> &'static str {
        "kv"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["put", "get"]
    }
    fn example(&self) -> &'static str {
        "{ kv: 127.0.0.1:7000, get: key }"
    }
    fn schema(&self) -> serde_json::Value {
        serde_json::json!({ "kv": { "type": "string" }, "put": { "type": "array" }, "get": { "type": "string" } })
    }
    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let (host, port) = step
            .required("kv", "HOST:PORT")?
            .host_port("e.g. `kv: 127.0.0.1:7000`")?;
        let args = match (step.get("put"), step.get("get")) {
            (Some(put), None) => put
                .list()?
                .iter()
                .map(|v| v.template())
                .collect::<Result<_, _>>()?,
            (None, Some(get)) => vec![get.template()?],
            _ => return Err(step.error("expected one of `put` or `get`")),
        };
        Ok(CompiledStep {
            spec: Box::new(KvStep { host, port, args }),
            name: "kv op".into(),
        })
    }
}

fn grammars() -> Grammars {
    let mut g = Grammars::default();
    g.add(Arc::new(Kv)).unwrap();
    g
}

fn load(text: &str) -> Result<onrush_plan::Plan, PlanError> {
    onrush_plan::load_str_with_grammars("plan.yaml", text, Path::new("."), &[], &[], &grammars())
}

#[test]
fn a_registered_step_compiles_with_the_common_keys() {
    let plan = load(
        "vars: { server: 127.0.0.1:7000 }\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { kv: \"${server}\", put: [\"k:${vu}\", v], name: store, timeout: 2s, on_failure: stop_vu }\n      - { kv: \"${server}\", get: \"k:${vu}\", check: [ { body_contains: v } ] }\n",
    )
    .unwrap();
    let steps = &plan.scenarios[0].steps;
    let Step::Custom(put) = &steps[0] else {
        panic!("expected a custom step, got {:?}", steps[0]);
    };
    assert_eq!(put.protocol, "kv");
    assert_eq!(put.timeout, Some(std::time::Duration::from_secs(2)));
    assert_eq!(put.on_failure, onrush_plan::OnFailure::StopVu);
    let spec = put.spec::<KvStep>().expect("the grammar's own type");
    assert_eq!((spec.host.as_str(), spec.port), ("127.0.0.1", 7000));
    assert_eq!(spec.args.len(), 2);
    assert!(spec.args[0].uses_vu() && spec.args[1].is_constant());
    assert!(put.spec::<String>().is_none());
    let Step::Custom(get) = &steps[1] else {
        panic!("expected a custom step");
    };
    assert_eq!(get.checks.len(), 1);
    let names: Vec<&str> = plan.scenarios[0]
        .metrics
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(names, ["store", "kv op"]);
}

#[test]
fn errors_in_a_registered_step_name_the_file_line_and_field() {
    let e = load("scenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { kv: 127.0.0.1:7000, pt: [a, b] }\n")
        .unwrap_err();
    let shown = e.to_string();
    assert!(shown.starts_with("plan.yaml:5:"), "{shown}");
    assert_eq!(e.field(), "scenarios[0].steps[0].pt");
    assert!(shown.contains("did you mean `put`?"), "{shown}");
    let e = load("scenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { kv: nowhere, get: k }\n")
        .unwrap_err();
    assert_eq!(e.field(), "scenarios[0].steps[0].kv");
    assert_eq!(e.line(), Some(5));
    assert!(e.to_string().contains("kv: 127.0.0.1:7000"), "{e}");
    // Without the grammar the key is unknown, and the message says which steps exist.
    let e = onrush_plan::load_str_with_grammars(
        "plan.yaml",
        "scenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { kv: 127.0.0.1:7000, get: k }\n",
        Path::new("."),
        &[],
        &[],
        onrush_plan::Grammars::none(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("unknown step `kv`"), "{e}");
    assert!(e.to_string().contains("docs/extending.md"), "{e}");
}

#[test]
fn grammars_refuse_onrush_keys_and_duplicates() {
    struct Named(&'static str);
    impl StepGrammar for Named {
        fn key(&self) -> &'static str {
            self.0
        }
        fn keys(&self) -> &'static [&'static str] {
            &[]
        }
        fn example(&self) -> &'static str {
            ""
        }
        fn schema(&self) -> serde_json::Value {
            serde_json::json!({})
        }
        fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
            Err(step.error("never"))
        }
    }
    let mut g = grammars();
    assert!(g
        .add(Arc::new(Named("loop")))
        .unwrap_err()
        .contains("onrush's own"));
    // A built-in protocol's key is its grammar's (HTTP's methods too): a second protocol
    // cannot take it.
    let mut built_in = crate::common::grammars().clone();
    for key in ["tcp", "get", "post", "method"] {
        assert!(built_in
            .add(Arc::new(Named(key)))
            .unwrap_err()
            .contains("two protocols"));
    }
    assert!(g
        .add(Arc::new(Named("kv")))
        .unwrap_err()
        .contains("two protocols"));
    assert!(g.add(Arc::new(Named("Bad-Key"))).is_err());
    assert!(g.add(Arc::new(Named("mqtt"))).is_ok());
}

#[test]
fn the_schema_carries_each_grammars_fragment_and_the_common_keys() {
    let schema = onrush_plan::json_schema_with(&grammars());
    let kv = &schema["definitions"]["kv"];
    assert_eq!(kv["required"], serde_json::json!(["kv"]));
    for key in [
        "kv",
        "put",
        "get",
        "name",
        "timeout",
        "extract",
        "check",
        "on_failure",
    ] {
        assert!(kv["properties"].get(key).is_some(), "{key} missing: {kv}");
    }
    let steps = schema["definitions"]["step"]["anyOf"].as_array().unwrap();
    assert!(steps.iter().any(|s| s["$ref"] == "#/definitions/kv"));
    // The plain schema has none of it.
    assert!(onrush_plan::json_schema()["definitions"]
        .get("kv")
        .is_none());
}
