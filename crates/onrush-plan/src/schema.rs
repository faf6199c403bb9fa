//! JSON Schema (draft-07, the dialect yaml-language-server handles best) of the plan file format,
//! for editor completion and checking. Written by hand: the parser works on a span-carrying YAML
//! tree, not on serde structs, and the method-key steps (`get: /path`) are easier to describe here.
//!
//! Every place that takes a number or a duration also takes a `${...}` template string.

use serde_json::{json, Value};

const TEMPLATE: &str = r"\$\{";

/// JSON Schema of the plan file format with the steps of the protocols in `grammars` (each
/// grammar's fragment, and the keys every request step has).
pub fn json_schema_with(grammars: &crate::Grammars) -> Value {
    let mut schema = json_schema();
    // The keys every request step has, as the HTTP request step describes them.
    let mut common: serde_json::Map<String, Value> = crate::grammar::COMMON_KEYS
        .iter()
        .filter_map(|k| {
            let prop = schema["definitions"]["request"]["properties"].get(*k)?;
            Some((k.to_string(), prop.clone()))
        })
        .collect();
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
    let cipher_names: Vec<&str> = crate::TLS_CIPHER_SUITES.iter().map(|s| s.0).collect();
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
    let form_value = json!({
        "type": ["string", "number", "boolean", "null"],
        "description": "A value rendered per request (plan variables, `${vu}`, `${iteration}`, runtime variables, functions); empty when null"
    });
    let templated_range = |min: u64, max: u64, description: &str| {
        json!({
            "description": description,
            "anyOf": [
                { "type": "integer", "minimum": min, "maximum": max },
                { "type": "string", "pattern": format!(r"^\s*[0-9]+\s*$|{TEMPLATE}") }
            ]
        })
    };
    let flag = |description: &str| {
        json!({
            "description": description,
            "anyOf": [{ "type": "boolean" }, { "type": "string", "pattern": TEMPLATE }]
        })
    };
    // `true` is the only meaningful value (`status: true`, `url: true`, `exists: true` stays a flag).
    let only_true = |description: &str| {
        json!({
            "description": description,
            "anyOf": [{ "const": true }, { "type": "string", "pattern": TEMPLATE }]
        })
    };
    let byte_size = json!({
        "description": "A byte count: `512`, `64KB` (1000-based: B, KB, MB, GB) or `64KiB` (1024-based: KiB, MiB, GiB)",
        "anyOf": [
            { "type": "integer", "minimum": 0 },
            { "type": "string", "pattern": format!(r"^\s*[0-9_]*\.?[0-9]+\s*(B|b|KB|kB|kb|K|k|MB|mb|M|GB|gb|G|KiB|MiB|GiB)?\s*$|{TEMPLATE}") }
        ],
        "examples": ["1MiB", "64KB", "2MB"]
    });
    let runtime_name = json!({
        "type": "string",
        "description": "The name of a runtime variable of the scenario (`name` or `${name}`)",
        "pattern": r"^\s*(\$\{)?[A-Za-z_][A-Za-z0-9_]*\}?\s*$"
    });
    // Exactly one of `keys` is present (each entry of the result is `{ required: [key] }`).
    let one_of_keys = |keys: &[&str]| -> Value {
        Value::Array(keys.iter().map(|k| json!({ "required": [k] })).collect())
    };
    // `dependencies` making `keys` mutually exclusive, each one merged with `extra[key]`.
    let exclusive = |keys: &[&str], extra: &[(&str, Value)]| -> Value {
        let mut deps = serde_json::Map::new();
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
    };

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
    request_props.insert("method".into(), json!({ "type": "string", "pattern": "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", "description": "Any other HTTP method (PURGE, PROPFIND, …), sent exactly as written; with `path:` instead of a method key", "examples": ["PURGE"] }));
    request_props.insert("path".into(), json!({ "type": "string", "description": "With `method:`: the path (or absolute URL) the request goes to, as for a method key", "examples": ["/cache/${vu}"] }));
    request_props.insert("name".into(), json!({ "type": "string", "description": "Metric name; steps sharing a name share one metric. Default: `METHOD /path` as written" }));
    request_props.insert("headers".into(), crate::grammar::headers_schema());
    request_props.insert("body".into(), json!({ "type": ["string", "number", "boolean"], "description": "Inline request body (may use `${vu}`, `${iteration}`)" }));
    request_props.insert("body_file".into(), json!({ "type": "string", "description": "File sent as the body, relative to the plan file's directory; must exist" }));
    request_props.insert(
        "body_template".into(),
        json!({ "type": "string", "description": "A text file (JSON, XML, …) compiled as a template when the plan loads: `${...}` in it are filled per request. Relative to the plan file's directory; errors in it name its own line", "examples": ["data/order.json"] }),
    );
    request_props.insert(
        "form".into(),
        json!({
            "type": "object",
            "description": "Name → value: an `application/x-www-form-urlencoded` body (and its Content-Type)",
            "additionalProperties": form_value.clone(),
            "examples": [{ "csrf_token": "${csrf}", "username": "${user}", "password": "${password}" }]
        }),
    );
    request_props.insert(
        "multipart".into(),
        json!({
            "type": "object",
            "description": "Name → value or `{ file, filename, content_type }`: a `multipart/form-data` body; files are streamed from disk at every send, Content-Length computed up front",
            "additionalProperties": {
                "anyOf": [form_value.clone(), { "$ref": "#/definitions/multipart_file" }]
            },
            "examples": [{ "title": "quarterly report", "upload": { "file": "data/report.pdf", "content_type": "application/pdf" } }]
        }),
    );
    request_props.insert(
        "query".into(),
        json!({
            "type": "object",
            "description": "Name → value: query parameters appended to the path, percent-encoded",
            "additionalProperties": form_value.clone(),
            "examples": [{ "q": "${term}", "page": "${random_int(1, 5)}" }]
        }),
    );
    request_props.insert("auth".into(), json!({ "$ref": "#/definitions/auth" }));
    request_props.insert(
        "extract".into(),
        json!({
            "type": "object",
            "description": "Variables from the response: name → extractor. Each name becomes a runtime variable of the scenario (`${name}`)",
            "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "not": { "enum": ["vu", "iteration"] } },
            "additionalProperties": { "$ref": "#/definitions/extractor" },
            "examples": [{ "token": { "jsonpath": "$.token" }, "csrf": { "css": "input[name=csrf_token]", "attribute": "value" } }]
        }),
    );
    request_props.insert(
        "check".into(),
        json!({
            "description": "Response checks: one check or a list. Each is counted per step; a failed check fails the request (class `check_failed`)",
            "anyOf": [
                { "$ref": "#/definitions/check" },
                { "type": "array", "items": { "$ref": "#/definitions/check" } }
            ]
        }),
    );
    request_props.insert(
        "on_failure".into(),
        json!({ "$ref": "#/definitions/on_failure", "description": "What the VU does when this request fails for any reason (default: the scenario's `on_failure`, else `continue`)" }),
    );
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
            "arrival_slack": { "$ref": "#/definitions/duration", "description": "Open model: an arrival may start up to this long before its scheduled time, so that one wake-up of a worker starts every arrival due within it (default 1ms; 0ms starts each at its exact time, at the cost of a wake-up per arrival). Latency is timed from the actual start; a late arrival from its scheduled start", "examples": ["1ms", "0ms", "5ms"] },
            "warm_up": { "oneOf": [{ "type": "boolean" }, { "type": "integer", "minimum": 0 }, { "type": "string" }], "description": "Open model: VUs created and connected (their first step's connection opened) before the schedule starts, outside the run's time: `true` (default) as many as the first second's arrivals keep busy at 50 ms each, at most `max_vus`; `false` none; a number N that many (at most `max_vus`)", "examples": [true, false, 500] },
            "graceful_stop": { "$ref": "#/definitions/duration", "description": "A load with a `duration` or `stages`: when it ends, VUs start no new request and the requests in flight may finish for this long (default 30s); those still running then are cut and counted as `interrupted`", "examples": ["30s", "5s", "0s"] },
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
    let extract_kinds = [
        "boundary", "regex", "jsonpath", "css", "xpath", "header", "cookie", "status", "url",
    ];
    let check_kinds = [
        "status",
        "body_contains",
        "body_matches",
        "jsonpath",
        "header",
        "duration_below",
        "body_size",
        "body_sha256",
        "body_md5",
    ];
    let body_keys = ["body", "body_file", "body_template", "form", "multipart"];
    let mut one_method: Vec<Value> = methods.iter().map(|m| json!({ "required": [m] })).collect();
    one_method.push(json!({ "required": ["method", "path"] }));
    let expression = json!({
        "type": "string",
        "description": "`[SCOPE:] METRIC OP VALUE`. SCOPE: a scenario, a step, `scenario/step`, `scenario NAME`, `step NAME` (none: the whole test, or the scenario for a scenario's thresholds). METRIC: min, mean, max, p50, p90, p95, p99, p99.9 (p999), any pNN.N, with `service_`, `connect_` or `ttfb_` in front for those times; failure_rate, failures, requests, rate, iterations, dropped_iterations, dropped_rate, rate_10s_min, rate_10s_max. OP: < <= > >= == !=. VALUE: 100ms, 1.5s, 250us; 1% or 0.01; 7000/s; a plain number for counts. Or `generator: healthy`.",
        "pattern": r"^\s*(.+:\s*)?[A-Za-z0-9_.()]+\s*(<=|>=|==|!=|<|>)\s*\S.*$|^\s*generator\s*:\s*healthy\s*$|\$\{",
        "examples": ["p99 < 100ms", "failure_rate < 1%", "rate > 7000/s", "home: p95 < 50ms", "generator: healthy"]
    });

    let mut schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "onrush plan",
        "description": "A load test plan for onrush: where to send requests (target), variables, HTTP settings and scenarios that run at the same time.",
        "type": "object",
        "additionalProperties": false,
        "required": ["scenarios"],
        "properties": {
            "target": {
                "type": "string",
                "description": "Base URL `http://host:port[/base]`, or `builtin` for the built-in server on 127.0.0.1. Optional when every step names its own server (full URLs, tcp:, grpc:, a protocol's own key)",
                "examples": ["http://127.0.0.1:8080", "builtin", "http://127.0.0.1:${PORT:-8080}"]
            },
            "vars": {
                "type": "object",
                "description": "Plan variables: name → value, used as `${name}`; `-D name=value` overrides them",
                "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "not": { "enum": ["vu", "iteration"] } },
                "additionalProperties": { "type": ["string", "number", "boolean"] }
            },
            "secrets": {
                "type": "object",
                "description": "Secret variables: name → `{ env: NAME }` or `{ file: PATH }`; used as `${name}`, never written to results (shown as `***`)",
                "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "not": { "enum": ["vu", "iteration"] } },
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "env": { "type": "string", "description": "The environment variable holding the value" },
                        "file": { "type": "string", "description": "A file holding the value (relative to the plan; a final newline dropped)" }
                    },
                    "oneOf": [{ "required": ["env"] }, { "required": ["file"] }]
                }
            },
            "http": { "$ref": "#/definitions/http" },
            "setup": { "$ref": "#/definitions/phase", "description": "Steps run once, by one VU, before any scenario starts (log in, create test data); the variables they extract are given to every VU and to teardown. A failed step stops setup and the run (exit 3); teardown still runs. Results apart, in OUT/setup/" },
            "teardown": { "$ref": "#/definitions/phase", "description": "Steps run once after every scenario ended, also after a threshold's abort_on_fail, Ctrl-C or SIGTERM (a second Ctrl-C skips it). Results apart, in OUT/teardown/" },
            "scenarios": {
                "type": "array",
                "minItems": 1,
                "description": "Scenarios; all of them run at the same time",
                "items": { "$ref": "#/definitions/scenario" }
            },
            "thresholds": { "$ref": "#/definitions/thresholds" },
            "distributed": {
                "type": "object",
                "additionalProperties": false,
                "description": "How a run across agents (`onrush run --agents N`) behaves; a single-machine run ignores it",
                "properties": {
                    "on_agent_loss": {
                        "enum": ["continue", "abort", "replace"],
                        "description": "When an agent goes silent for 3 s: continue (default: the others go on, the run is marked partial), abort (every agent is stopped, results so far are merged, exit code 3) or replace (a spare agent, one that joined beyond the N needed, takes over the lost agent's segment from where the run is; without a spare, as continue)"
                    }
                }
            },
            "profiles": {
                "type": "object",
                "description": "Named overlays applied in order by `onrush run -P NAME,...` (before -D): vars and http merged deeply, target, load (every scenario's, whole) and thresholds replaced, scenarios matched by name",
                "additionalProperties": {
                    "type": ["object", "null"],
                    "additionalProperties": false,
                    "properties": {
                        "vars": { "type": "object", "description": "Variables merged into the plan's `vars` (-D still wins)", "additionalProperties": { "type": ["string", "number", "boolean"] } },
                        "target": { "type": "string", "description": "Replaces the plan's target" },
                        "http": { "$ref": "#/definitions/http" },
                        "load": { "$ref": "#/definitions/load" },
                        "thresholds": { "$ref": "#/definitions/thresholds" },
                        "scenarios": {
                            "type": "array",
                            "description": "Per-scenario overlays, matched by name",
                            "items": {
                                "type": "object",
                                "additionalProperties": false,
                                "required": ["name"],
                                "properties": {
                                    "name": { "type": "string", "description": "The plan's scenario this changes" },
                                    "load": { "$ref": "#/definitions/load" },
                                    "http": { "$ref": "#/definitions/http" },
                                    "pacing": { "$ref": "#/definitions/duration" },
                                    "thresholds": { "$ref": "#/definitions/thresholds" }
                                }
                            }
                        }
                    }
                }
            }
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
                        "enum": ["shared", "per_vu", "per_iteration", "per_request"],
                        "description": "Connection reuse: shared (one pool per worker thread that all VUs draw from; with HTTP/2 up to max_streams requests share a connection), per_vu (default: each VU keeps its connection), per_iteration (new connection each iteration), per_request (new connection each request)"
                    },
                    "version": {
                        "enum": ["h1", "h2", "auto"],
                        "description": "HTTP version: h1 (default: HTTP/1.1), h2 (HTTP/2: over TLS by ALPN, h2c with prior knowledge for http://), auto (over TLS, HTTP/2 if the server chooses it by ALPN, else HTTP/1.1)"
                    },
                    "max_streams": {
                        "type": "integer", "minimum": 1,
                        "description": "HTTP/2 with connections: shared — requests in flight at once on one connection before the pool opens another (default 100)"
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
                        "enum": ["auto", "normal", "server", "reset"],
                        "description": "How connections are closed: auto (default: server for connections: per_request, normal otherwise), normal (onrush closes with FIN and keeps the TIME_WAIT), server (each request says Connection: close, the server closes first and keeps the TIME_WAIT; per_request only), reset (SO_LINGER 0: RST, no TIME_WAIT on either side; the server sees resets and data in flight can be lost; for connection-churn tests)"
                    },
                    "tls": { "$ref": "#/definitions/tls" },
                    "cookies": {
                        "enum": ["on", "per_iteration", "off"],
                        "description": "Cookie jar: on (default: each VU has its own jar (RFC 6265), kept across its iterations, like one browser per VU), per_iteration (emptied when an iteration starts: a new browser each time), off (only the `Cookie` headers the plan writes)"
                    },
                    "decompress": flag("true: send `Accept-Encoding: gzip, deflate, br` and decode gzip, deflate and br responses as they stream, so extractors and checks see the decoded body (`bytes in` still counts what crossed the wire). Default false"),
                    "redirects": templated_range(0, 100, "How many redirects (301/302/303/307/308) to follow per request on the same origin (default 0: none). The whole chain is one sample of the step; a redirect to another origin ends the chain"),
                    "throttle": {
                        "description": "Bandwidth cap per connection, both directions, to emulate slow clients. Units: `B`, `KB`, `MB` (1000-based), `KiB`, `MiB`",
                        "anyOf": [
                            { "type": "integer", "minimum": 1 },
                            { "type": "string", "pattern": format!(r"^\s*[0-9_]*\.?[0-9]+\s*(B|b|KB|kB|kb|K|k|MB|mb|M|GB|gb|G|KiB|MiB|GiB)?\s*(/s)?\s*$|{TEMPLATE}") }
                        ],
                        "examples": ["64KB/s", "56KB/s", "1MiB/s"]
                    },
                    "body_limit": {
                        "$ref": "#/definitions/byte_size",
                        "description": "How much of a body extractors and body checks (`body_contains`, `body_matches`, `jsonpath`) see (default 1 MiB); other bodies are streamed and thrown away, `body_size` and body hashes are computed while streaming",
                        "examples": ["1MiB", "4MiB"]
                    }
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
                    "client_p12": { "type": "string", "description": "Mutual TLS: a PKCS#12 (.p12/.pfx) file with the client certificate chain and key (relative to the plan's directory; opened when the plan loads). Instead of `client_cert` + `client_key`", "examples": ["client.p12"] },
                    "client_p12_password": { "type": ["string", "number"], "description": "Password of `client_p12` (default empty); `${NAME}` reads it from the environment", "examples": ["${P12_PASSWORD}"] },
                    "identities": {
                        "description": "Several client identities spread over VUs: VU k (from 1) presents identity (k - 1) mod n (a PKCS#12 file with several keys counts as that many). Instead of `client_cert`/`client_p12`/`identities_dir`",
                        "anyOf": [
                            { "$ref": "#/definitions/tls_identity" },
                            { "type": "array", "minItems": 1, "items": { "$ref": "#/definitions/tls_identity" } }
                        ]
                    },
                    "identities_dir": { "type": "string", "description": "A folder of client identities, spread over VUs in file-name order: every NAME.pem or NAME.crt with its NAME.key, and every .p12/.pfx file (opened with `identities_password`)", "examples": ["certs"] },
                    "identities_password": { "type": ["string", "number"], "description": "Password of the .p12/.pfx files of `identities_dir`", "examples": ["${P12_PASSWORD}"] },
                    "ciphers": {
                        "description": "The cipher suites offered, in order (default all): rustls, IANA or OpenSSL names, any case",
                        "anyOf": [
                            { "$ref": "#/definitions/tls_cipher" },
                            { "type": "array", "minItems": 1, "items": { "$ref": "#/definitions/tls_cipher" } }
                        ],
                        "examples": [["TLS13_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]]
                    },
                    "kx_groups": {
                        "description": "The key-exchange groups offered, in order (default all, X25519 first): X25519, secp256r1 (P-256), secp384r1 (P-384)",
                        "anyOf": [
                            { "$ref": "#/definitions/tls_kx_group" },
                            { "type": "array", "minItems": 1, "items": { "$ref": "#/definitions/tls_kx_group" } }
                        ],
                        "examples": [["secp256r1"], ["X25519", "secp256r1"]]
                    },
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
                "dependencies": {
                    "client_cert": ["client_key"],
                    "client_key": ["client_cert"],
                    "client_p12_password": ["client_p12"],
                    "identities_password": ["identities_dir"]
                }
            },
            "tls_identity": {
                "type": "object",
                "description": "One client identity: `cert` + `key` (PEM) or `p12` (+ `password`)",
                "additionalProperties": false,
                "properties": {
                    "cert": { "type": "string", "description": "PEM certificate chain (relative to the plan's directory)", "examples": ["alice.pem"] },
                    "key": { "type": "string", "description": "PEM private key of `cert`", "examples": ["alice.key"] },
                    "p12": { "type": "string", "description": "PKCS#12 (.p12/.pfx) file", "examples": ["bob.p12"] },
                    "password": { "type": ["string", "number"], "description": "Password of `p12`", "examples": ["${BOB_P12_PASSWORD}"] }
                },
                "oneOf": [
                    { "required": ["cert", "key"] },
                    { "required": ["p12"] }
                ]
            },
            "tls_cipher": {
                "description": "A cipher suite: rustls name (as listed), IANA or OpenSSL name, any case",
                "type": "string",
                "examples": cipher_names
            },
            "tls_kx_group": {
                "description": "A key-exchange group: rustls name (as listed) or P-256, P-384, prime256v1, any case",
                "type": "string",
                "examples": ["X25519", "secp256r1", "secp384r1"]
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
                    "feeders": {
                        "description": "Test data: one feeder or a list. At the start of every iteration each feeder gives the VU one row; the row's columns become runtime variables (`${user}`)",
                        "anyOf": [
                            { "$ref": "#/definitions/feeder" },
                            { "type": "array", "items": { "$ref": "#/definitions/feeder" } }
                        ]
                    },
                    "pacing": { "$ref": "#/definitions/duration", "description": "The target duration of one iteration: every iteration lasts at least this long (a VU that finishes earlier waits for the rest); one that takes longer starts the next at once", "examples": ["5s", "200ms"] },
                    "on_failure": { "$ref": "#/definitions/on_failure", "description": "Default `on_failure` of this scenario's steps (default `continue`)" },
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
                    { "$ref": "#/definitions/loop" },
                    { "$ref": "#/definitions/group" },
                    { "$ref": "#/definitions/if" },
                    { "$ref": "#/definitions/once" },
                    { "$ref": "#/definitions/random" }
                ]
            },
            "request": {
                "type": "object",
                "description": "An HTTP request: exactly one method key (get, post, put, patch, delete, head, options) with the path, or `method:` (any method) with `path:`",
                "additionalProperties": false,
                "properties": request_props,
                "oneOf": one_method,
                "dependencies": exclusive(&body_keys, &[])
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
            }
        }
    });
    let defs = schema["definitions"]
        .as_object_mut()
        .expect("definitions is an object");
    defs.insert("phase".into(), json!({
        "type": "object",
        "description": "`{ steps: [...] }`: steps of any kind, run once by one VU",
        "additionalProperties": false,
        "required": ["steps"],
        "properties": {
            "steps": { "$ref": "#/definitions/steps" },
            "on_failure": { "$ref": "#/definitions/on_failure", "description": "Default of the steps' `on_failure` (setup: stop_vu, so that a failed step ends it; teardown: continue)" }
        }
    }));
    defs.insert("loop".into(), json!({
        "type": "object",
        "description": "Repeat steps: exactly one of `count`, `while` (+ `max`) or `foreach` (+ `as`), and `steps`",
        "additionalProperties": false,
        "required": ["loop"],
        "properties": {
            "loop": {
                "type": "object",
                "description": "`{ count: 3, steps }`, `{ while: { var: next, exists: true }, max: 100, steps }` or `{ foreach: ids, as: id, steps }`",
                "additionalProperties": false,
                "required": ["steps"],
                "oneOf": one_of_keys(&["count", "while", "foreach"]),
                "dependencies": { "as": ["foreach"], "foreach": ["as"], "max": ["while"] },
                "properties": {
                    "count": templated_int(1, "How many times to run the steps"),
                    "while": { "$ref": "#/definitions/condition", "description": "Run the steps while this condition on a runtime variable holds, at most `max` times" },
                    "max": templated_int(1, "With `while`: the most times the loop runs (default 1000)"),
                    "foreach": { "$ref": "#/definitions/runtime_name", "description": "A list variable (an extractor with `occurrence: all`): the steps run once per value", "examples": ["ids"] },
                    "as": { "$ref": "#/definitions/runtime_name", "description": "With `foreach`: the runtime variable that holds each item", "examples": ["id"] },
                    "steps": { "$ref": "#/definitions/steps" }
                }
            }
        }
    }));
    defs.insert("group".into(), json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["group"],
        "properties": {
            "group": {
                "type": "object",
                "description": "A transaction: its steps measured as a whole (one sample per run, think times included, failed when a request inside failed), reported in its own table; its name can be a threshold scope",
                "additionalProperties": false,
                "required": ["name", "steps"],
                "properties": {
                    "name": { "type": "string", "description": "The group's name (not the name of a request step)", "examples": ["checkout"] },
                    "steps": { "$ref": "#/definitions/steps" }
                }
            }
        }
    }));
    defs.insert("if".into(), json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["if", "then"],
        "properties": {
            "if": { "$ref": "#/definitions/condition", "description": "A test of a runtime variable: `{ var, equals | not_equals | matches | exists }`" },
            "then": { "$ref": "#/definitions/steps", "description": "Steps run when the condition holds" },
            "else": { "$ref": "#/definitions/steps", "description": "Steps run otherwise (optional)" }
        }
    }));
    defs.insert("once".into(), json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["once"],
        "properties": {
            "once": { "$ref": "#/definitions/steps", "description": "Steps run in each VU's first iteration only (e.g. log in once, then loop)" }
        }
    }));
    defs.insert("random".into(), json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["random"],
        "properties": {
            "random": {
                "type": "array",
                "minItems": 1,
                "description": "Weighted choice: one branch per run, chosen in proportion to the weights",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["steps"],
                    "properties": {
                        "weight": templated_range(1, 1_000_000, "This branch's weight, a positive whole number (default 1)"),
                        "steps": { "$ref": "#/definitions/steps" }
                    }
                }
            }
        }
    }));
    defs.insert("condition".into(), json!({
        "type": "object",
        "description": "`{ var: NAME, exists: true | equals: V | not_equals: V | matches: REGEX }`; without a test `exists: true` is meant; a list variable is tested by its first value",
        "additionalProperties": false,
        "required": ["var"],
        "dependencies": exclusive(&["exists", "equals", "not_equals", "matches"], &[]),
        "properties": {
            "var": { "$ref": "#/definitions/runtime_name", "description": "The runtime variable to test" },
            "exists": flag("true: the variable has a value; false: it has none"),
            "equals": { "type": ["string", "number", "boolean"], "description": "The value equals this (a template)" },
            "not_equals": { "type": ["string", "number", "boolean"], "description": "The value differs from this (a template)" },
            "matches": { "type": "string", "description": "The value matches this regular expression" }
        },
        "examples": [{ "var": "role", "equals": "admin" }, { "var": "next_page", "exists": true }]
    }));
    defs.insert("runtime_name".into(), runtime_name);
    defs.insert("byte_size".into(), byte_size);
    defs.insert("on_failure".into(), json!({
        "enum": ["continue", "next_iteration", "stop_vu", "stop_test"],
        "description": "What the VU does when a request fails for any reason: continue (default) · next_iteration: skip the rest of this iteration · stop_vu: this VU runs no more iterations · stop_test: the whole test stops and writes its results, as after Ctrl-C"
    }));
    defs.insert("feeder".into(), json!({
        "type": "object",
        "description": "A CSV or JSON data file, read once when the plan loads and shared by every VU; each iteration takes one row",
        "additionalProperties": false,
        "required": ["file"],
        "properties": {
            "file": { "type": "string", "description": "A CSV file with a header row, or a JSON array of objects (`.json`, or `format: json`), relative to the plan", "examples": ["data/users.csv"] },
            "format": { "enum": ["csv", "json"], "description": "csv or json (default: from the extension)" },
            "mode": {
                "enum": ["circular", "random", "unique", "per_vu"],
                "description": "circular (default): rows in order, shared by all VUs, wrapping around · random: any row, each pick · unique: each row used once in the whole test · per_vu: row k for VU k (wrapping)"
            },
            "on_exhausted": {
                "enum": ["stop", "recycle"],
                "description": "`mode: unique` only: stop (default: a VU that finds no unused row stops, and the scenario ends) or recycle (start again from the first row)"
            },
            "delimiter": {
                "type": "string",
                "description": "CSV only: one character, default `,` (e.g. `\";\"`, `\"\\t\"`)",
                "examples": [";", "\t"]
            }
        },
        "dependencies": {
            "on_exhausted": { "required": ["mode"], "properties": { "mode": { "const": "unique" } } },
            "delimiter": { "not": { "required": ["format"], "properties": { "format": { "const": "json" } } } }
        }
    }));
    defs.insert("multipart_file".into(), json!({
        "type": "object",
        "description": "A file part of a multipart body, streamed from disk at every send",
        "additionalProperties": false,
        "required": ["file"],
        "properties": {
            "file": { "type": "string", "description": "The file to upload, relative to the plan file's directory; must exist", "examples": ["data/report.pdf"] },
            "filename": { "type": "string", "description": "The file name sent (default: the file's own name)" },
            "content_type": { "type": "string", "description": "The part's Content-Type (default application/octet-stream)", "examples": ["application/pdf"] }
        }
    }));
    defs.insert("auth".into(), json!({
        "type": "object",
        "description": "The `Authorization` header: `{ basic: { user, password } }` or `{ bearer: \"${token}\" }`",
        "additionalProperties": false,
        "minProperties": 1,
        "maxProperties": 1,
        "properties": {
            "basic": {
                "type": "object",
                "description": "HTTP Basic authentication (`Basic base64(user:password)`)",
                "additionalProperties": false,
                "required": ["user", "password"],
                "properties": {
                    "user": { "type": ["string", "number", "boolean"], "description": "The user name (a template)" },
                    "password": { "type": ["string", "number", "boolean"], "description": "The password (a template), e.g. `\"${ADMIN_PASSWORD}\"`" }
                }
            },
            "bearer": { "type": ["string", "number", "boolean"], "description": "A bearer token (a template): `Bearer TOKEN`", "examples": ["${token}"] }
        },
        "examples": [{ "bearer": "${token}" }, { "basic": { "user": "admin", "password": "${ADMIN_PASSWORD}" } }]
    }));
    defs.insert("extractor".into(), json!({
        "type": "object",
        "description": "One extractor: boundary, regex (+ group), jsonpath, css (+ attribute), xpath over the body (decoded when http.decompress); header, cookie, status, url from the response head / the request; + occurrence, default",
        "additionalProperties": false,
        "oneOf": one_of_keys(&extract_kinds),
        "dependencies": { "group": ["regex"], "attribute": ["css"] },
        "properties": {
            "boundary": {
                "description": "The text between a left and a right boundary: `[left, right]` or `{ left, right }`",
                "anyOf": [
                    { "type": "array", "items": { "type": ["string", "number"] }, "minItems": 2, "maxItems": 2 },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {
                            "left": { "type": ["string", "number", "null"], "description": "The text just before the value" },
                            "right": { "type": ["string", "number", "null"], "description": "The text just after the value" }
                        }
                    }
                ],
                "examples": [["name=\"csrf_token\" value=\"", "\""]]
            },
            "regex": { "type": "string", "description": "A regular expression over the body; the value is capture group 1 when the pattern has a group (else the whole match)", "examples": ["data-token=\"([^\"]+)\""] },
            "group": templated_range(0, 99, "With `regex`: the capture group (0: the whole match; default 1)"),
            "jsonpath": { "type": "string", "description": "An RFC 9535 JSONPath over a JSON body", "examples": ["$.user.id", "$.items[*].id"] },
            "css": { "type": "string", "description": "A CSS selector over an HTML body: the element's text, or with `attribute:` that attribute", "examples": ["input[name=csrf_token]"] },
            "attribute": { "type": "string", "description": "With `css`: the attribute to take instead of the element's text", "examples": ["value"] },
            "xpath": { "type": "string", "description": "An XPath expression over an XML or HTML body: the string value of the selected nodes", "examples": ["//meta[@name='csrf-token']/@content"] },
            "header": { "type": "string", "description": "A response header's value (the name is case-insensitive)", "examples": ["Content-Type"] },
            "cookie": { "type": "string", "description": "A cookie from this response's Set-Cookie", "examples": ["session"] },
            "status": only_true("`true`: the response's status code"),
            "url": only_true("`true`: the path and query where the request ended (after redirects)"),
            "occurrence": {
                "description": "Which match: `1` (default), `2`, … , `last`, `random`, or `all` (a list, for `foreach`)",
                "anyOf": [
                    { "type": "integer", "minimum": 1 },
                    { "enum": ["last", "random", "all"] },
                    { "type": "string", "pattern": format!(r"^\s*[0-9]+\s*$|{TEMPLATE}") }
                ]
            },
            "default": { "type": ["string", "number", "boolean"], "description": "The value when nothing matches. Without one, nothing found fails the request (`check_failed`) and counts as the failed check `extract NAME`" }
        }
    }));
    defs.insert("check".into(), json!({
        "type": "object",
        "description": "One check: status, body_contains, body_matches, jsonpath (+ exists|equals|matches), header (+ exists|equals|contains|matches), duration_below, body_size, body_sha256 or body_md5; + name",
        "additionalProperties": false,
        "oneOf": one_of_keys(&check_kinds),
        "dependencies": exclusive(
            &["exists", "equals", "contains", "matches"],
            &[
                ("exists", json!({ "anyOf": [{ "required": ["jsonpath"] }, { "required": ["header"] }] })),
                ("equals", json!({ "anyOf": [{ "required": ["jsonpath"] }, { "required": ["header"] }] })),
                ("matches", json!({ "anyOf": [{ "required": ["jsonpath"] }, { "required": ["header"] }] })),
                ("contains", json!({ "required": ["header"] })),
            ],
        ),
        "properties": {
            "status": {
                "description": "The status code is one of these",
                "anyOf": [
                    { "$ref": "#/definitions/status" },
                    { "type": "array", "items": { "$ref": "#/definitions/status" }, "minItems": 1 }
                ],
                "examples": [200, [200, 201]]
            },
            "body_contains": { "type": ["string", "number", "boolean"], "description": "The body (its first `body_limit` bytes) contains this text (a template)", "examples": ["Welcome, ${user}"] },
            "body_matches": { "type": "string", "description": "The body (its first `body_limit` bytes) matches this regular expression", "examples": ["order-[0-9]+"] },
            "jsonpath": { "type": "string", "description": "A JSONPath over the body; with `equals`, `matches` or `exists` (default `exists: true`)", "examples": ["$.ok"] },
            "header": { "type": "string", "description": "A response header; with `equals`, `contains`, `matches` or `exists` (default `exists: true`)", "examples": ["Content-Type"] },
            "exists": flag("With jsonpath/header: true: it is present; false: it is absent"),
            "equals": { "type": ["string", "number", "boolean"], "description": "With jsonpath/header: the value equals this (a template)" },
            "contains": { "type": ["string", "number", "boolean"], "description": "With header: the value contains this (a template)" },
            "matches": { "type": "string", "description": "With jsonpath/header: the value matches this regular expression" },
            "duration_below": { "$ref": "#/definitions/duration", "description": "The response took less than this", "examples": ["500ms"] },
            "body_size": {
                "description": "The body's size, computed while streaming: an exact size or `{ min, max }`",
                "anyOf": [
                    { "$ref": "#/definitions/byte_size" },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {
                            "min": { "$ref": "#/definitions/byte_size", "description": "At least this many bytes" },
                            "max": { "$ref": "#/definitions/byte_size", "description": "At most this many bytes" }
                        }
                    }
                ],
                "examples": [{ "min": 100, "max": "2MB" }, 1024]
            },
            "body_sha256": { "type": "string", "pattern": "^\\s*[0-9a-fA-F]{64}\\s*$", "description": "The SHA-256 of the whole body (64 hex digits), hashed as it streams: no memory for large bodies" },
            "body_md5": { "type": "string", "pattern": "^\\s*[0-9a-fA-F]{32}\\s*$", "description": "The MD5 of the whole body (32 hex digits), hashed as it streams" },
            "name": { "type": "string", "description": "The check's name in the results (default: made from it, e.g. `status in [200, 201]`)", "examples": ["download intact"] }
        }
    }));
    schema
}
