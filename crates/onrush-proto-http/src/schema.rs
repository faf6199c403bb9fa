//! The JSON Schema of the HTTP request step (`onrush schema`): its keys' properties and the
//! rules between them (one method key, or `method:` with `path:`; at most one body). The keys
//! every step has (`extract`, `check`, `on_failure`) are added by onrush-plan.

use onrush_plan::grammar::headers_schema;
use serde_json::{json, Value};

/// The properties of the step's own keys.
pub(crate) fn request_properties() -> Value {
    let form_value = json!({
        "type": ["string", "number", "boolean", "null"],
        "description": "A value rendered per request (plan variables, `${vu}`, `${iteration}`, runtime variables, functions); empty when null"
    });
    let methods = crate::grammar::METHODS;
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
    request_props.insert("headers".into(), headers_schema());
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
                "anyOf": [form_value.clone(), multipart_file()]
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
    request_props.insert("auth".into(), auth());
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
    Value::Object(request_props)
}

/// What the definition has beside its properties.
pub(crate) fn request_rules() -> Value {
    let methods = crate::grammar::METHODS;
    let mut one_method: Vec<Value> = methods.iter().map(|m| json!({ "required": [m] })).collect();
    one_method.push(json!({ "required": ["method", "path"] }));
    let body_keys = ["body", "body_file", "body_template", "form", "multipart"];
    // Each body key excludes the others.
    let mut exclusive = serde_json::Map::new();
    for k in body_keys {
        let others: Vec<Value> = body_keys
            .iter()
            .filter(|o| **o != k)
            .map(|o| json!({ "required": [o] }))
            .collect();
        exclusive.insert(k.to_string(), json!({ "not": { "anyOf": others } }));
    }
    json!({
        "description": "An HTTP request: exactly one method key (get, post, put, patch, delete, head, options) with the path, or `method:` (any method) with `path:`",
        // The generated `required: [get]`: any method key (or `method`) starts the step.
        "required": null,
        "oneOf": one_method,
        "dependencies": exclusive
    })
}

/// `multipart:`'s file part.
fn multipart_file() -> Value {
    json!({
        "type": "object",
        "description": "A file part of a multipart body, streamed from disk at every send",
        "additionalProperties": false,
        "required": ["file"],
        "properties": {
            "file": { "type": "string", "description": "The file to upload, relative to the plan file's directory; must exist", "examples": ["data/report.pdf"] },
            "filename": { "type": "string", "description": "The file name sent (default: the file's own name)" },
            "content_type": { "type": "string", "description": "The part's Content-Type (default application/octet-stream)", "examples": ["application/pdf"] }
        }
    })
}

/// `auth:`: an `Authorization` header.
fn auth() -> Value {
    json!({
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
    })
}
