//! What a step reads in a response: extractors (`extract:`), checks (`check:`) and the status
//! codes both name.

use serde_json::{json, Map, Value};

use super::values::{
    exclusive, flag, one_of_keys, only_true, templated_int, templated_range, TEMPLATE,
};

/// `extractor`, `check` and `status`.
pub(super) fn definitions() -> Map<String, Value> {
    let extract_kinds = [
        "boundary", "regex", "jsonpath", "css", "xpath", "header", "cookie", "status", "url",
    ];
    let check_kinds = [
        "js",
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
    let mut defs = Map::new();
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
            "js": { "type": "string", "description": "A JavaScript expression (res, vars, ctx in scope: res.status, res.headers, res.body, res.json()); the check passes when it is truthy", "examples": ["res.json().items.length >= 3"] },
            "body_md5": { "type": "string", "pattern": "^\\s*[0-9a-fA-F]{32}\\s*$", "description": "The MD5 of the whole body (32 hex digits), hashed as it streams" },
            "name": { "type": "string", "description": "The check's name in the results (default: made from it, e.g. `status in [200, 201]`)", "examples": ["download intact"] }
        }
    }));
    defs.insert("status".into(), templated_int(100, "An HTTP status code"));
    defs
}
