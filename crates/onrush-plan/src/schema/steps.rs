//! The steps of an iteration: the list, the kinds a step may be, onrush's own flow steps
//! (think, loop, group, if, once, random) and their conditions, and the keys every request
//! step has (`timeout`, `extract`, `check`, `on_failure`), which a protocol's steps get too.

use serde_json::{json, Map, Value};

use super::values::{exclusive, flag, one_of_keys, templated_int, templated_range};

/// `steps`, `step`, the flow steps, `condition`, `runtime_name` and `on_failure`.
pub(super) fn definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    defs.insert(
        "steps".into(),
        json!({
            "type": "array",
            "minItems": 1,
            "description": "Steps of one iteration, run in order",
            "items": { "$ref": "#/definitions/step" }
        }),
    );
    defs.insert(
        "step".into(),
        json!({
            "anyOf": [
                { "$ref": "#/definitions/think" },
                { "$ref": "#/definitions/loop" },
                { "$ref": "#/definitions/group" },
                { "$ref": "#/definitions/if" },
                { "$ref": "#/definitions/once" },
                { "$ref": "#/definitions/random" },
                { "$ref": "#/definitions/script" }
            ]
        }),
    );
    defs.insert("script".into(), json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["script"],
        "description": "Run JavaScript with the VU's `ctx` (and `vars`): an exported function's name, or statements; timed as a sample of its own (not a request)",
        "properties": {
            "script": { "type": "string", "description": "An exported function of the plan's `scripts:` (`name` or `module.name`), called with `ctx`; or JavaScript statements, with `ctx` and `vars` in scope", "examples": ["checkout.prepare", "vars.total = Number(vars.a) * 2"] },
            "name": { "type": "string", "description": "The sample's name in the results (default `script` and the code's start)" }
        }
    }));
    defs.insert("think".into(), json!({
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
        "description": "`{ var: NAME, exists: true | equals: V | not_equals: V | matches: REGEX }`; without a test `exists: true` is meant; a list variable is tested by its first value. Or `{ js: EXPRESSION }`: a JavaScript expression (vars, ctx in scope)",
        "additionalProperties": false,
        "anyOf": [{ "required": ["var"] }, { "required": ["js"] }],
        "dependencies": exclusive(&["exists", "equals", "not_equals", "matches"], &[]),
        "properties": {
            "var": { "$ref": "#/definitions/runtime_name", "description": "The runtime variable to test" },
            "exists": flag("true: the variable has a value; false: it has none"),
            "equals": { "type": ["string", "number", "boolean"], "description": "The value equals this (a template)" },
            "not_equals": { "type": ["string", "number", "boolean"], "description": "The value differs from this (a template)" },
            "matches": { "type": "string", "description": "The value matches this regular expression" },
            "js": { "type": "string", "description": "A JavaScript expression; the condition holds when it is truthy", "examples": ["vars.role === 'admin' && Number(vars.credit) > 100"] }
        },
        "examples": [{ "var": "role", "equals": "admin" }, { "var": "next_page", "exists": true }]
    }));
    defs.insert(
        "runtime_name".into(),
        json!({
            "type": "string",
            "description": "The name of a runtime variable of the scenario (`name` or `${name}`)",
            "pattern": r"^\s*(\$\{)?[A-Za-z_][A-Za-z0-9_]*\}?\s*$"
        }),
    );
    defs.insert("on_failure".into(), json!({
        "enum": ["continue", "next_iteration", "stop_vu", "stop_test"],
        "description": "What the VU does when a request fails for any reason: continue (default) · next_iteration: skip the rest of this iteration · stop_vu: this VU runs no more iterations · stop_test: the whole test stops and writes its results, as after Ctrl-C"
    }));
    defs
}

/// The keys every request step has, whatever its protocol (`name` apart:
/// each step says its own default); a protocol's step gets them as well.
pub(crate) fn common_properties() -> Map<String, Value> {
    let mut props = Map::new();
    props.insert(
        "extract".into(),
        json!({
            "type": "object",
            "description": "Variables from the response: name → extractor. Each name becomes a runtime variable of the scenario (`${name}`)",
            "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "not": { "enum": ["vu", "iteration"] } },
            "additionalProperties": { "$ref": "#/definitions/extractor" },
            "examples": [{ "token": { "jsonpath": "$.token" }, "csrf": { "css": "input[name=csrf_token]", "attribute": "value" } }]
        }),
    );
    props.insert(
        "check".into(),
        json!({
            "description": "Response checks: one check or a list. Each is counted per step; a failed check fails the request (class `check_failed`)",
            "anyOf": [
                { "$ref": "#/definitions/check" },
                { "type": "array", "items": { "$ref": "#/definitions/check" } }
            ]
        }),
    );
    props.insert(
        "on_failure".into(),
        json!({ "$ref": "#/definitions/on_failure", "description": "What the VU does when this request fails for any reason (default: the scenario's `on_failure`, else `continue`)" }),
    );
    props.insert(
        "before".into(),
        json!({ "type": "string", "description": "An exported function of the plan's `scripts:`, `(req, ctx)`, that may change the request (method, url, headers, body) before it is sent (HTTP steps)", "examples": ["sign"] }),
    );
    props.insert(
        "after".into(),
        json!({ "type": "string", "description": "An exported function of the plan's `scripts:`, `(res, ctx)`, that reads the reply, may set variables (`ctx.vars.x = ...`) and may fail the step (`ctx.fail(message)` or returning false)", "examples": ["remember"] }),
    );
    props.insert("timeout".into(), json!({ "$ref": "#/definitions/duration", "description": "Overrides http.timeout for this request" }));
    props
}
