//! The JSON Schema for editors.
use onrush_plan::json_schema;

#[test]
fn schema_is_valid_json_and_describes_every_key() {
    let schema = json_schema();
    let text = serde_json::to_string_pretty(&schema).unwrap();
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back, schema);
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);

    let props = |path: &str| -> Vec<String> {
        let v = schema.pointer(path).unwrap_or_else(|| panic!("no {path}"));
        v.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(
        props("/properties"),
        ["http", "scenarios", "target", "thresholds", "vars"]
    );
    for key in ["name", "load", "http", "steps", "thresholds"] {
        assert!(
            props("/definitions/scenario/properties").contains(&key.to_string()),
            "{key}"
        );
    }
    for key in [
        "vus",
        "iterations",
        "duration",
        "ramp_up",
        "stages",
        "start_vus",
        "rate",
        "start_rate",
        "max_vus",
    ] {
        assert!(
            props("/definitions/load/properties").contains(&key.to_string()),
            "{key}"
        );
    }
    for key in [
        "get",
        "post",
        "put",
        "patch",
        "delete",
        "head",
        "options",
        "name",
        "headers",
        "body",
        "body_file",
        "timeout",
        "expect_status",
    ] {
        assert!(
            props("/definitions/request/properties").contains(&key.to_string()),
            "{key}"
        );
    }
    assert_eq!(
        schema
            .pointer("/definitions/request/oneOf")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        7
    );
    assert_eq!(props("/definitions/think/properties"), ["think"]);
    assert_eq!(
        props("/definitions/loop/properties/loop/properties"),
        ["count", "steps"]
    );
    assert_eq!(
        props("/definitions/http/properties"),
        ["close", "connections", "source_addresses", "timeout", "tls"]
    );
    assert_eq!(
        props("/definitions/tls/properties"),
        [
            "ca_file",
            "client_cert",
            "client_key",
            "insecure",
            "server_name",
            "session",
            "versions"
        ]
    );
    assert_eq!(
        schema["definitions"]["tls"]["properties"]["session"]["enum"],
        serde_json::json!(["resume", "shared", "full"])
    );
    assert_eq!(
        props("/definitions/threshold/anyOf/1/properties"),
        ["abort_on_fail", "grace", "threshold"]
    );
    for word in [
        "per_vu",
        "per_iteration",
        "per_request",
        "normal",
        "reset",
        "p99.9",
        "failure_rate",
        "dropped_rate",
        "rate_10s_min",
        "generator: healthy",
    ] {
        assert!(text.contains(word), "{word}");
    }

    // Every key the example uses appears in the schema.
    let example = [
        "target",
        "vars",
        "http",
        "timeout",
        "connections",
        "scenarios",
        "name",
        "load",
        "vus",
        "iterations",
        "steps",
        "get",
        "post",
        "body",
        "rate",
        "duration",
        "max_vus",
        "think",
    ];
    for key in example {
        assert!(
            text.contains(&format!("\"{key}\"")),
            "{key} missing from the schema"
        );
    }

    // Every `$ref` points at a definition that exists.
    fn refs(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| refs(v, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&schema, &mut all);
    assert!(all.len() > 10);
    for r in all {
        let ptr = r.strip_prefix('#').unwrap();
        assert!(schema.pointer(ptr).is_some(), "dangling $ref {r}");
    }
}

#[test]
fn threshold_pattern_accepts_the_documented_forms() {
    // The schema's pattern is what editors check; it must agree with the parser on the usual forms.
    let schema = json_schema();
    let pattern = schema
        .pointer("/definitions/threshold_expression/pattern")
        .and_then(|p| p.as_str())
        .unwrap();
    // A tiny check without a regex engine: every documented example is listed, and the
    // alternatives of the pattern name the operators and `generator: healthy`.
    for op in ["<=", ">=", "==", "!=", "<", ">"] {
        assert!(pattern.contains(op), "{op}");
    }
    assert!(pattern.contains("generator"));
    let examples = schema
        .pointer("/definitions/threshold_expression/examples")
        .unwrap()
        .as_array()
        .unwrap();
    for e in examples {
        let text = format!(
            "target: builtin\nthresholds: [\"{}\"]\nscenarios: [{{ name: s, load: {{ vus: 1, iterations: 1 }}, steps: [{{ name: home, get: / }}] }}]\n",
            e.as_str().unwrap()
        );
        if let Err(err) = onrush_plan::load_str("plan.yaml", &text, std::path::Path::new("."), &[])
        {
            panic!("schema example {e} does not load:\n{err}");
        }
    }
}
