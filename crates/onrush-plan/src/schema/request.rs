//! The HTTP request step (`get: /path`, `method:` + `path:`): its method keys, headers, query,
//! body (inline, file, template, form, multipart), auth and accepted statuses, and the
//! definitions only it uses (`multipart_file`, `auth`).

use serde_json::{json, Map, Value};

use super::values::exclusive;

/// `request`, `multipart_file` and `auth`.
pub(super) fn definitions() -> Map<String, Value> {
    let form_value = json!({
        "type": ["string", "number", "boolean", "null"],
        "description": "A value rendered per request (plan variables, `${vu}`, `${iteration}`, runtime variables, functions); empty when null"
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
        "expect_status".into(),
        json!({
            "description": "Accepted status codes (default: any status below 400)",
            "anyOf": [
                { "$ref": "#/definitions/status" },
                { "type": "array", "items": { "$ref": "#/definitions/status" }, "minItems": 1 }
            ]
        }),
    );
    request_props.extend(super::steps::common_properties());
    let body_keys = ["body", "body_file", "body_template", "form", "multipart"];
    let mut one_method: Vec<Value> = methods.iter().map(|m| json!({ "required": [m] })).collect();
    one_method.push(json!({ "required": ["method", "path"] }));
    let mut defs = Map::new();
    defs.insert("request".into(), json!({
        "type": "object",
        "description": "An HTTP request: exactly one method key (get, post, put, patch, delete, head, options) with the path, or `method:` (any method) with `path:`",
        "additionalProperties": false,
        "properties": request_props,
        "oneOf": one_method,
        "dependencies": exclusive(&body_keys, &[])
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
    defs
}
