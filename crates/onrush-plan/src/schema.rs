//! JSON Schema (draft-07, the dialect yaml-language-server handles best) of the plan file format,
//! for editor completion and checking. Written by hand: the parser works on a span-carrying YAML
//! tree, not on serde structs, and the method-key steps (`get: /path`) are easier to describe here.
//!
//! Every place that takes a number or a duration also takes a `${...}` template string.

use serde_json::{json, Value};

const TEMPLATE: &str = r"\$\{";

/// JSON Schema of the plan file format (`onrush schema > onrush.schema.json`).
pub fn json_schema() -> Value {
    let duration = json!({
        "type": "string",
        "description": "A duration: `250ms`, `5s`, `2m`, `1h`, `1m30s`, `100us` (a number without unit is an error)",
        "pattern": r"^\s*(([0-9]+(\.[0-9]+)?|\.[0-9]+)(us|µs|ms|s|m|h|d))+\s*$|\$\{",
        "examples": ["250ms", "5s", "1m30s"]
    });
    let templated_int = |min: u64, description: &str| {
        json!({
            "description": description,
            "anyOf": [
                { "type": "integer", "minimum": min },
                { "type": "string", "pattern": format!(r"^\s*[0-9]+\s*$|{TEMPLATE}") }
            ]
        })
    };
    let rate = json!({
        "description": "Iterations started per time unit: `200/s`, `12000/m`, `50/h`, or a number (per second)",
        "anyOf": [
            { "type": "number", "minimum": 0 },
            { "type": "string", "pattern": format!(r"^\s*[0-9]*\.?[0-9]+\s*(/\s*(s|m|h)\s*)?$|{TEMPLATE}") }
        ],
        "examples": ["200/s", "12000/m"]
    });
    let text = json!({
        "type": ["string", "number", "boolean"],
        "description": "Text; `${name}` inserts a variable, `${NAME:-default}` an environment variable, `$${` is a literal `${`"
    });
    let request_text = json!({
        "type": ["string", "number", "boolean"],
        "description": "Text rendered per request: plan variables plus `${vu}` (1-based VU number) and `${iteration}` (0-based, per VU)"
    });

    let methods = ["get", "post", "put", "patch", "delete", "head", "options"];
    let mut request_props = serde_json::Map::new();
    for m in methods {
        request_props.insert(
            m.to_string(),
            json!({
                "type": "string",
                "description": format!("{} request: a path starting with `/` (the target's base path is prefixed) or an absolute `http://host:port/path` URL; may use `${{vu}}` and `${{iteration}}`", m.to_uppercase()),
                "examples": ["/", "/users/${vu}"]
            }),
        );
    }
    request_props.insert("name".into(), json!({ "type": "string", "description": "Metric name; steps sharing a name share one metric. Default: `METHOD /path` as written" }));
    request_props.insert(
        "headers".into(),
        json!({ "type": "object", "description": "Request headers: name → value (values may use `${vu}`, `${iteration}`)", "additionalProperties": request_text }),
    );
    request_props.insert("body".into(), json!({ "type": ["string", "number", "boolean"], "description": "Inline request body (may use `${vu}`, `${iteration}`)" }));
    request_props.insert("body_file".into(), json!({ "type": "string", "description": "File sent as the body, relative to the plan file's directory; must exist" }));
    request_props.insert("timeout".into(), json!({ "$ref": "#/definitions/duration", "description": "Overrides http.timeout for this request" }));
    request_props.insert(
        "expect_status".into(),
        json!({
            "description": "Accepted status codes (default: any status below 400)",
            "anyOf": [
                { "$ref": "#/definitions/status" },
                { "type": "array", "items": { "$ref": "#/definitions/status" }, "minItems": 1 }
            ]
        }),
    );
    let load = json!({
        "type": "object",
        "description": "Closed model: `vus` + `iterations` (per VU) or `duration` (+ `ramp_up`), or `stages: [{vus, over}]` (+ `start_vus`). Open model: `rate` + `duration`, or `stages: [{rate, over}]` (+ `start_rate`); always `max_vus`.",
        "additionalProperties": false,
        "properties": {
            "vus": templated_int(1, "Closed model: number of virtual users"),
            "iterations": templated_int(1, "Closed model: iterations per VU"),
            "shared_iterations": templated_int(1, "Closed model: iterations in total, shared by the VUs"),
            "duration": { "$ref": "#/definitions/duration", "description": "How long the load runs" },
            "ramp_up": { "$ref": "#/definitions/duration", "description": "Closed model: VUs start gradually over this time" },
            "start_vus": templated_int(0, "Closed model with stages: VUs at the start (default 0)"),
            "rate": { "$ref": "#/definitions/rate", "description": "Open model: iterations started per second/minute/hour" },
            "start_rate": { "$ref": "#/definitions/rate", "description": "Open model with stages: rate at the start (default 0)" },
            "max_vus": templated_int(1, "Open model (required): most VUs busy at once; arrivals when all are busy are counted as dropped"),
            "stages": {
                "type": "array",
                "minItems": 1,
                "description": "Linear ramps: `{vus: N, over: 30s}` (closed) or `{rate: 200/s, over: 30s}` (open)",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["over"],
                    "properties": {
                        "vus": templated_int(0, "VUs reached at the end of this stage"),
                        "rate": { "$ref": "#/definitions/rate", "description": "Rate reached at the end of this stage" },
                        "over": { "$ref": "#/definitions/duration", "description": "Length of this stage" }
                    }
                }
            }
        }
    });
    let one_method: Vec<Value> = methods.iter().map(|m| json!({ "required": [m] })).collect();
    let expression = json!({
        "type": "string",
        "description": "`[SCOPE:] METRIC OP VALUE`. SCOPE: a scenario, a step, `scenario/step`, `scenario NAME`, `step NAME` (none: the whole test, or the scenario for a scenario's thresholds). METRIC: min, mean, max, p50, p90, p95, p99, p99.9 (p999), any pNN.N, with `service_`, `connect_` or `ttfb_` in front for those times; failure_rate, failures, requests, rate, iterations, dropped_iterations, dropped_rate, rate_10s_min, rate_10s_max. OP: < <= > >= == !=. VALUE: 100ms, 1.5s, 250us; 1% or 0.01; 7000/s; a plain number for counts. Or `generator: healthy`.",
        "pattern": r"^\s*(.+:\s*)?[A-Za-z0-9_.()]+\s*(<=|>=|==|!=|<|>)\s*\S.*$|^\s*generator\s*:\s*healthy\s*$|\$\{",
        "examples": ["p99 < 100ms", "failure_rate < 1%", "rate > 7000/s", "home: p95 < 50ms", "generator: healthy"]
    });

    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "onrush plan",
        "description": "A load test plan for onrush: where to send requests (target), variables, HTTP settings and scenarios that run at the same time.",
        "type": "object",
        "additionalProperties": false,
        "required": ["target", "scenarios"],
        "properties": {
            "target": {
                "type": "string",
                "description": "Base URL `http://host:port[/base]`, or `builtin` for the built-in server on 127.0.0.1",
                "examples": ["http://127.0.0.1:8080", "builtin", "http://127.0.0.1:${PORT:-8080}"]
            },
            "vars": {
                "type": "object",
                "description": "Plan variables: name → value, used as `${name}`; `-D name=value` overrides them",
                "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "not": { "enum": ["vu", "iteration"] } },
                "additionalProperties": { "type": ["string", "number", "boolean"] }
            },
            "http": { "$ref": "#/definitions/http" },
            "scenarios": {
                "type": "array",
                "minItems": 1,
                "description": "Scenarios; all of them run at the same time",
                "items": { "$ref": "#/definitions/scenario" }
            },
            "thresholds": { "$ref": "#/definitions/thresholds" }
        },
        "definitions": {
            "duration": duration,
            "rate": rate,
            "text": text,
            "status": templated_int(100, "An HTTP status code"),
            "http": {
                "type": "object",
                "description": "HTTP settings (plan level; a scenario's `http` merges over them)",
                "additionalProperties": false,
                "properties": {
                    "timeout": { "$ref": "#/definitions/duration", "description": "Request timeout (default 30s)" },
                    "connections": {
                        "enum": ["per_vu", "per_iteration", "per_request"],
                        "description": "Connection reuse: per_vu (default: each VU keeps its connection), per_iteration (new connection each iteration), per_request (new connection each request)"
                    },
                    "source_addresses": {
                        "description": "Local addresses new connections bind to, to get more ephemeral ports towards one target: addresses, ranges `127.0.0.2-127.0.0.254` and CIDR blocks `127.0.1.0/24` (at most 65,536 in all, one family)",
                        "anyOf": [
                            { "$ref": "#/definitions/source_address" },
                            { "type": "array", "items": { "$ref": "#/definitions/source_address" } }
                        ],
                        "examples": [["127.0.0.2", "127.0.0.3"], "127.0.0.2-127.0.0.254", "127.0.1.0/24"]
                    },
                    "close": {
                        "enum": ["normal", "reset"],
                        "description": "How connections are closed: normal (default: FIN; the client keeps TIME_WAIT), reset (SO_LINGER 0: RST, no TIME_WAIT on the client; the server sees resets and data in flight can be lost; for connection-churn tests)"
                    },
                    "tls": { "$ref": "#/definitions/tls" }
                }
            },
            "tls": {
                "type": "object",
                "description": "TLS for https:// targets (a scenario's `tls` keys override the plan-level ones key by key)",
                "additionalProperties": false,
                "properties": {
                    "session": {
                        "enum": ["resume", "shared", "full"],
                        "description": "TLS session reuse: resume (default: a session cache per VU; a returning user), shared (one cache for all VUs; cheapest for the load machine), full (a full handshake for every new connection; a brand-new user)"
                    },
                    "insecure": {
                        "anyOf": [{ "type": "boolean" }, { "type": "string", "pattern": TEMPLATE }],
                        "description": "true: accept any server certificate (test systems only). Default false"
                    },
                    "ca_file": { "type": "string", "description": "PEM file of CA certificates to trust (relative to the plan's directory; must exist)", "examples": ["ca.pem"] },
                    "client_cert": { "type": "string", "description": "Mutual TLS: PEM certificate chain (relative to the plan's directory; needs `client_key`)", "examples": ["client.pem"] },
                    "client_key": { "type": "string", "description": "Mutual TLS: PEM private key of `client_cert` (relative to the plan's directory; needs `client_cert`)", "examples": ["client.key"] },
                    "versions": {
                        "description": "TLS versions offered (default both 1.2 and 1.3)",
                        "anyOf": [
                            { "$ref": "#/definitions/tls_version" },
                            { "type": "array", "items": { "$ref": "#/definitions/tls_version" } }
                        ],
                        "examples": [["1.2", "1.3"], "1.3"]
                    },
                    "server_name": { "type": "string", "description": "SNI and certificate name (default: the target's host)", "examples": ["api.example.com"] }
                },
                "dependencies": { "client_cert": ["client_key"], "client_key": ["client_cert"] }
            },
            "tls_version": {
                "description": "A TLS version: \"1.2\" or \"1.3\"",
                "anyOf": [
                    { "type": "string", "enum": ["1.2", "1.3"] },
                    { "type": "number", "enum": [1.2, 1.3] }
                ]
            },
            "source_address": {
                "type": "string",
                "description": "An IPv4 or IPv6 address, a range `A-B` or a CIDR block `A/N`",
                "examples": ["127.0.0.2", "127.0.0.2-127.0.0.254", "127.0.1.0/24", "fd00::10"]
            },
            "thresholds": {
                "type": "array",
                "description": "Thresholds (SLAs) checked at the end of the run: any failing one makes onrush exit with code 1. See docs/thresholds.md",
                "items": { "$ref": "#/definitions/threshold" }
            },
            "threshold": {
                "anyOf": [
                    { "$ref": "#/definitions/threshold_expression" },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["threshold"],
                        "properties": {
                            "threshold": { "$ref": "#/definitions/threshold_expression" },
                            "abort_on_fail": {
                                "anyOf": [{ "type": "boolean" }, { "type": "string", "pattern": TEMPLATE }],
                                "description": "Stop the test as soon as the threshold fails (after `grace`)"
                            },
                            "grace": { "$ref": "#/definitions/duration", "description": "With abort_on_fail: how long after the start a failing threshold does not stop the test yet (default 0)" }
                        }
                    },
                    {
                        "type": "object",
                        "description": "`- home: p95 < 50ms` written without quotes: the scope, then the threshold",
                        "minProperties": 1,
                        "maxProperties": 1,
                        "not": { "anyOf": [{ "required": ["threshold"] }, { "required": ["abort_on_fail"] }, { "required": ["grace"] }] },
                        "additionalProperties": { "type": "string" }
                    }
                ]
            },
            "threshold_expression": expression,
            "scenario": {
                "type": "object",
                "additionalProperties": false,
                "required": ["name", "load", "steps"],
                "properties": {
                    "name": { "type": "string", "description": "Scenario name, unique in the plan" },
                    "load": { "$ref": "#/definitions/load" },
                    "http": { "$ref": "#/definitions/http" },
                    "steps": { "$ref": "#/definitions/steps" },
                    "thresholds": { "$ref": "#/definitions/thresholds", "description": "Thresholds of this scenario; without a scope they are about the whole scenario, a scope names one of its steps" }
                }
            },
            "load": load,
            "steps": {
                "type": "array",
                "minItems": 1,
                "description": "Steps of one iteration, run in order",
                "items": { "$ref": "#/definitions/step" }
            },
            "step": {
                "anyOf": [
                    { "$ref": "#/definitions/request" },
                    { "$ref": "#/definitions/think" },
                    { "$ref": "#/definitions/loop" }
                ]
            },
            "request": {
                "type": "object",
                "description": "An HTTP request: exactly one method key (get, post, put, patch, delete, head, options) with the path",
                "additionalProperties": false,
                "properties": request_props,
                "oneOf": one_method
            },
            "think": {
                "type": "object",
                "additionalProperties": false,
                "required": ["think"],
                "properties": {
                    "think": {
                        "type": "string",
                        "description": "Pause: a duration (`500ms`) or a uniform random range (`1s..3s`)",
                        "examples": ["10ms", "1s..3s"]
                    }
                }
            },
            "loop": {
                "type": "object",
                "additionalProperties": false,
                "required": ["loop"],
                "properties": {
                    "loop": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["count", "steps"],
                        "properties": {
                            "count": templated_int(1, "How many times to run the steps"),
                            "steps": { "$ref": "#/definitions/steps" }
                        }
                    }
                }
            }
        }
    })
}
