//! The JSON Schema of Thrift in a plan: the top-level `thrift: { idl }` and the `thrift:` step
//! (added to the plan's schema by `schema.rs`). Argument types come from the IDL, which the
//! schema cannot know: `args` is any mapping here, and `onrush validate` types it.

use serde_json::{json, Value};

pub(crate) fn add(schema: &mut Value) {
    // Keys every request step shares, as the TCP step's schema has them.
    let common = schema["definitions"]["request"]["properties"].clone();
    schema["properties"]["thrift"] = json!({
        "type": "object",
        "description": "Apache Thrift: the IDL files the plan's `thrift:` steps call, read when the plan loads",
        "additionalProperties": false,
        "required": ["idl"],
        "properties": {
            "idl": {
                "description": "A `.thrift` file or a list of them, relative to the plan (their includes are read too)",
                "anyOf": [
                    { "type": "string" },
                    { "type": "array", "minItems": 1, "items": { "type": "string" } }
                ],
                "examples": [["idl/calculator.thrift"]]
            }
        }
    });
    let defs = schema["definitions"]
        .as_object_mut()
        .expect("definitions is an object");
    defs.insert("thrift".into(), json!({
        "type": "object",
        "description": "An Apache Thrift call: `call` (Service.method of the plan's IDL) with `args` to `thrift` (HOST:PORT); the reply as JSON is the body for extractors and checks, a declared exception's type the `exception` header",
        "additionalProperties": false,
        "required": ["thrift", "call"],
        "properties": {
            "thrift": { "type": "string", "description": "HOST:PORT (or tcp://HOST:PORT) of the Thrift server; tls://HOST:PORT for TLS (Thrift's TSSLSocket) with `http.tls` (resolved once)", "examples": ["127.0.0.1:9090", "tls://localhost:9443"] },
            "name": { "type": "string", "description": "Metric name. Default: `Service.method`" },
            "call": { "type": "string", "description": "The method: `Service.method` (a method of a service it extends too)", "examples": ["Calculator.add"] },
            "protocol": { "enum": ["binary", "compact"], "description": "The protocol (default binary)" },
            "transport": { "enum": ["framed", "buffered"], "description": "framed: a 4-byte length before each message (default); buffered: none" },
            "multiplexed": { "type": ["boolean", "string"], "description": "true: the message is named `Service:method` (a TMultiplexedProcessor); a string: the name the service is registered under" },
            "args": { "type": "object", "description": "The arguments by name, typed against the IDL when the plan loads: numbers, strings, enum names, lists, maps and structs as YAML/JSON; `${...}` in any scalar is rendered per call" },
            "max_message": { "type": ["integer", "string"], "description": "The longest reply accepted, bytes (default 16 MiB): longer is bad_response" },
            "timeout": common["timeout"].clone(),
            "extract": common["extract"].clone(),
            "check": common["check"].clone(),
            "on_failure": common["on_failure"].clone(),
        }
    }));
    if let Some(steps) = defs.get_mut("step").and_then(|s| s["anyOf"].as_array_mut()) {
        steps.push(json!({ "$ref": "#/definitions/thrift" }));
    }
}
