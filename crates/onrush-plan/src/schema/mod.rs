//! JSON Schema (draft-07, the dialect yaml-language-server handles best) of the plan file format,
//! for editor completion and checking. Written by hand: the parser works on a span-carrying YAML
//! tree, not on serde structs.
//!
//! Every place that takes a number or a duration also takes a `${...}` template string.
//!
//! One file per part of the plan, each returning its `definitions`: the shared value shapes
//! (values.rs), the top level (plan.rs), `http:` (http.rs) and its TLS (tls.rs), scenarios and
//! their loads (scenario.rs), steps (steps.rs) and what steps read in responses (response.rs).
//! Each protocol's step (HTTP's `get: /path` too) is its grammar's fragment, added by
//! [`json_schema_with`].

use serde_json::{json, Map, Value};

mod http;
mod plan;
mod response;
mod scenario;
mod steps;
mod tls;
mod values;

/// JSON Schema of the plan file format with the steps of the protocols in `grammars` (each
/// grammar's fragment, and the keys every request step has).
pub fn json_schema_with(grammars: &crate::Grammars) -> Value {
    let mut schema = json_schema();
    // The keys every request step has, whatever its protocol.
    let mut common = steps::common_properties();
    common.insert(
        "name".into(),
        json!({ "type": "string", "description": "Metric name (default: the protocol's own, e.g. `udp HOST:PORT`)" }),
    );
    for section in grammars.sections() {
        schema["properties"][section.key()] = section.schema();
    }
    for grammar in grammars.iter() {
        let key = grammar.key();
        let mut props = match grammar.schema() {
            Value::Object(props) => props,
            _ => serde_json::Map::new(),
        };
        for (k, v) in &common {
            props.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let mut definition = json!({
            "type": "object",
            "description": format!("A `{key}` step, e.g. `{}`", grammar.example()),
            "additionalProperties": false,
            "required": [key],
            "properties": props
        });
        if let (Value::Object(rules), Value::Object(definition)) =
            (grammar.schema_rules(), &mut definition)
        {
            for (k, v) in rules {
                // A rule set to null removes the generated one (`required` of a step with aliases).
                if v.is_null() {
                    definition.remove(&k);
                } else {
                    definition.insert(k, v);
                }
            }
            // A step of one shape per sub-command (`anyOf` of objects, as `ws:`): each shape
            // has the common keys too.
            if let Some(Value::Array(shapes)) = definition.get_mut("anyOf") {
                for shape in shapes {
                    if let Some(Value::Object(props)) = shape.get_mut("properties") {
                        for (k, v) in &common {
                            props.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
            }
        }
        schema["definitions"][key] = definition;
        if let Some(kinds) = schema["definitions"]["step"]["anyOf"].as_array_mut() {
            kinds.push(json!({ "$ref": format!("#/definitions/{key}") }));
        }
    }
    schema
}

/// JSON Schema of the plan file format (`onrush schema > onrush.schema.json`).
pub fn json_schema() -> Value {
    let mut definitions = Map::new();
    definitions.extend(values::definitions());
    definitions.extend(plan::definitions());
    definitions.extend(http::definitions());
    definitions.extend(tls::definitions());
    definitions.extend(scenario::definitions());
    definitions.extend(steps::definitions());
    definitions.extend(response::definitions());
    let mut schema = plan::document();
    schema["definitions"] = Value::Object(definitions);
    schema
}
