//! The value shapes every part of the schema shares (durations, rates, byte sizes, text) and
//! the helpers that build the others: numbers and flags that also take a `${...}` template,
//! and keys that exclude one another.

use serde_json::{json, Map, Value};

/// A string holding a `${...}` template: accepted wherever a number or a flag is.
pub(super) const TEMPLATE: &str = r"\$\{";

/// `duration`, `rate`, `text` and `byte_size`.
pub(super) fn definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    defs.insert("duration".into(), json!({
        "type": "string",
        "description": "A duration: `250ms`, `5s`, `2m`, `1h`, `1m30s`, `100us` (a number without unit is an error)",
        "pattern": r"^\s*(([0-9]+(\.[0-9]+)?|\.[0-9]+)(us|µs|ms|s|m|h|d))+\s*$|\$\{",
        "examples": ["250ms", "5s", "1m30s"]
    }));
    defs.insert("rate".into(), json!({
        "description": "Iterations started per time unit: `200/s`, `12000/m`, `50/h`, or a number (per second)",
        "anyOf": [
            { "type": "number", "minimum": 0 },
            { "type": "string", "pattern": format!(r"^\s*[0-9]*\.?[0-9]+\s*(/\s*(s|m|h)\s*)?$|{TEMPLATE}") }
        ],
        "examples": ["200/s", "12000/m"]
    }));
    defs.insert("text".into(), json!({
        "type": ["string", "number", "boolean"],
        "description": "Text; `${name}` inserts a variable, `${NAME:-default}` an environment variable, `$${` is a literal `${`"
    }));
    defs.insert("byte_size".into(), json!({
        "description": "A byte count: `512`, `64KB` (1000-based: B, KB, MB, GB) or `64KiB` (1024-based: KiB, MiB, GiB)",
        "anyOf": [
            { "type": "integer", "minimum": 0 },
            { "type": "string", "pattern": format!(r"^\s*[0-9_]*\.?[0-9]+\s*(B|b|KB|kB|kb|K|k|MB|mb|M|GB|gb|G|KiB|MiB|GiB)?\s*$|{TEMPLATE}") }
        ],
        "examples": ["1MiB", "64KB", "2MB"]
    }));
    defs
}

/// A whole number of at least `min`, or a template.
pub(super) fn templated_int(min: u64, description: &str) -> Value {
    json!({
        "description": description,
        "anyOf": [
            { "type": "integer", "minimum": min },
            { "type": "string", "pattern": format!(r"^\s*[0-9]+\s*$|{TEMPLATE}") }
        ]
    })
}

/// A whole number from `min` to `max`, or a template.
pub(super) fn templated_range(min: u64, max: u64, description: &str) -> Value {
    json!({
        "description": description,
        "anyOf": [
            { "type": "integer", "minimum": min, "maximum": max },
            { "type": "string", "pattern": format!(r"^\s*[0-9]+\s*$|{TEMPLATE}") }
        ]
    })
}

/// `true`, `false` or a template.
pub(super) fn flag(description: &str) -> Value {
    json!({
        "description": description,
        "anyOf": [{ "type": "boolean" }, { "type": "string", "pattern": TEMPLATE }]
    })
}

/// `true` or a template: `true` is the only meaningful value (`status: true`, `url: true`;
/// `exists: true` stays a [`flag`]).
pub(super) fn only_true(description: &str) -> Value {
    json!({
        "description": description,
        "anyOf": [{ "const": true }, { "type": "string", "pattern": TEMPLATE }]
    })
}

/// Exactly one of `keys` is present (each entry of the result is `{ required: [key] }`).
pub(super) fn one_of_keys(keys: &[&str]) -> Value {
    Value::Array(keys.iter().map(|k| json!({ "required": [k] })).collect())
}

/// `dependencies` making `keys` mutually exclusive, each one merged with `extra[key]`.
pub(super) fn exclusive(keys: &[&str], extra: &[(&str, Value)]) -> Value {
    let mut deps = Map::new();
    for k in keys {
        let others: Vec<Value> = keys
            .iter()
            .filter(|o| *o != k)
            .map(|o| json!({ "required": [o] }))
            .collect();
        let mut dep = json!({ "not": { "anyOf": others } });
        if let Some((_, more)) = extra.iter().find(|(name, _)| name == k) {
            if let (Some(d), Some(m)) = (dep.as_object_mut(), more.as_object()) {
                d.extend(m.clone());
            }
        }
        deps.insert(k.to_string(), dep);
    }
    Value::Object(deps)
}
