//! The plan's top level (target, vars, secrets, http, setup and teardown, scenarios,
//! thresholds, distributed, profiles) and the definitions only it uses: thresholds and the
//! setup/teardown phases.

use serde_json::{json, Map, Value};

use super::values::TEMPLATE;

/// The schema's document without its `definitions`.
pub(super) fn document() -> Value {
    json!({
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
            "scripts": {
                "description": "JavaScript modules (ES modules, paths relative to the plan) whose exported functions the plan calls: `before:`/`after:` hooks, `script:` steps, `${fn(...)}` in templates (docs/scripting.md)",
                "anyOf": [
                    { "type": "string", "pattern": "\\.m?js\\s*$" },
                    { "type": "array", "items": { "type": "string", "pattern": "\\.m?js\\s*$" } }
                ],
                "examples": [["lib/sign.js"]]
            },
            "script_timeout": { "$ref": "#/definitions/duration", "description": "How long one call into the plan's JavaScript may run before it is interrupted and counted as `script_timeout` (default 1s)" },
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
            "profiles": profiles()
        }
    })
}

/// `profiles`: the named overlays of `onrush run -P`.
fn profiles() -> Value {
    json!({
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
    })
}

/// `thresholds`, `threshold`, `threshold_expression` and `phase`.
pub(super) fn definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    defs.insert("thresholds".into(), json!({
        "type": "array",
        "description": "Thresholds (SLAs) checked at the end of the run: any failing one makes onrush exit with code 1. See docs/thresholds.md",
        "items": { "$ref": "#/definitions/threshold" }
    }));
    defs.insert("threshold".into(), json!({
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
    }));
    defs.insert("threshold_expression".into(), json!({
        "type": "string",
        "description": "`[SCOPE:] METRIC OP VALUE`. SCOPE: a scenario, a step, `scenario/step`, `scenario NAME`, `step NAME` (none: the whole test, or the scenario for a scenario's thresholds). METRIC: min, mean, max, p50, p90, p95, p99, p99.9 (p999), any pNN.N, with `service_`, `connect_` or `ttfb_` in front for those times; failure_rate, failures, requests, rate, iterations, dropped_iterations, dropped_rate, rate_10s_min, rate_10s_max. OP: < <= > >= == !=. VALUE: 100ms, 1.5s, 250us; 1% or 0.01; 7000/s; a plain number for counts. Or `generator: healthy`.",
        "pattern": r"^\s*(.+:\s*)?[A-Za-z0-9_.()]+\s*(<=|>=|==|!=|<|>)\s*\S.*$|^\s*generator\s*:\s*healthy\s*$|\$\{",
        "examples": ["p99 < 100ms", "failure_rate < 1%", "rate > 7000/s", "home: p95 < 50ms", "generator: healthy"]
    }));
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
    defs
}
