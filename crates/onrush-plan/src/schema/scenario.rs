//! A scenario (name, load, http, feeders, pacing, steps, thresholds), its load models
//! (closed and open, stages) and its feeders of test data.

use serde_json::{json, Map, Value};

use super::values::templated_int;

/// `scenario`, `load` and `feeder`.
pub(super) fn definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    defs.insert("scenario".into(), json!({
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
    }));
    defs.insert("load".into(), json!({
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
    defs
}
