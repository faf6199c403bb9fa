//! The JSON Schema for editors.
use crate::common;
use serde_json::{json, Value};

#[test]
fn schema_is_valid_json_and_describes_every_key() {
    let schema = common::schema();
    let text = serde_json::to_string_pretty(&schema).unwrap();
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back, schema);
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }
    let props = |path: &str| -> Vec<String> {
        let v = schema.pointer(path).unwrap_or_else(|| panic!("no {path}"));
        v.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(
        props("/properties"),
        [
            "distributed",
            "grpc",
            "http",
            "profiles",
            "scenarios",
            "script_timeout",
            "scripts",
            "secrets",
            "setup",
            "target",
            "teardown",
            "thresholds",
            "thrift",
            "vars"
        ]
    );
    for key in [
        "name",
        "load",
        "http",
        "feeders",
        "pacing",
        "on_failure",
        "steps",
        "thresholds",
    ] {
        assert!(
            props("/definitions/scenario/properties").contains(&key.to_string()),
            "{key}"
        );
    }
    for key in [
        "vus",
        "iterations",
        "duration",
        "ramp_up",
        "stages",
        "start_vus",
        "rate",
        "start_rate",
        "max_vus",
    ] {
        assert!(
            props("/definitions/load/properties").contains(&key.to_string()),
            "{key}"
        );
    }
    for key in [
        "get",
        "post",
        "put",
        "patch",
        "delete",
        "head",
        "options",
        "name",
        "headers",
        "body",
        "body_file",
        "timeout",
        "expect_status",
        "body_template",
        "form",
        "multipart",
        "query",
        "auth",
        "extract",
        "check",
        "on_failure",
        "method",
        "path",
    ] {
        assert!(
            props("/definitions/get/properties").contains(&key.to_string()),
            "{key}"
        );
    }
    assert_eq!(
        schema
            .pointer("/definitions/get/oneOf")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        // The seven method keys, and `method:` with `path:` for any other method.
        8
    );
    assert_eq!(props("/definitions/think/properties"), ["think"]);
    assert_eq!(
        sorted(props("/definitions/loop/properties/loop/properties")),
        ["as", "count", "foreach", "max", "steps", "while"]
    );
    assert_eq!(
        sorted(props("/definitions/http/properties")),
        [
            "body_limit",
            "close",
            "connections",
            "cookies",
            "decompress",
            "max_streams",
            "redirects",
            "source_addresses",
            "throttle",
            "timeout",
            "tls",
            "version"
        ]
    );
    assert_eq!(
        props("/definitions/tls/properties"),
        [
            "ca_file",
            "ciphers",
            "client_cert",
            "client_key",
            "client_p12",
            "client_p12_password",
            "identities",
            "identities_dir",
            "identities_password",
            "insecure",
            "kx_groups",
            "server_name",
            "session",
            "versions"
        ]
    );
    assert_eq!(
        props("/definitions/tls_identity/properties"),
        ["cert", "key", "p12", "password"]
    );
    assert_eq!(
        schema["definitions"]["tls_cipher"]["examples"]
            .as_array()
            .unwrap()
            .len(),
        onrush_plan::TLS_CIPHER_SUITES.len()
    );
    assert_eq!(
        schema["definitions"]["tls"]["properties"]["session"]["enum"],
        serde_json::json!(["resume", "shared", "full"])
    );
    assert_eq!(
        props("/definitions/threshold/anyOf/1/properties"),
        ["abort_on_fail", "grace", "threshold"]
    );
    for word in [
        "per_vu",
        "per_iteration",
        "per_request",
        "normal",
        "reset",
        "p99.9",
        "failure_rate",
        "dropped_rate",
        "rate_10s_min",
        "generator: healthy",
    ] {
        assert!(text.contains(word), "{word}");
    }

    // Every key the example uses appears in the schema.
    let example = [
        "target",
        "vars",
        "http",
        "timeout",
        "connections",
        "scenarios",
        "name",
        "load",
        "vus",
        "iterations",
        "steps",
        "get",
        "post",
        "body",
        "rate",
        "duration",
        "max_vus",
        "think",
    ];
    for key in example {
        assert!(
            text.contains(&format!("\"{key}\"")),
            "{key} missing from the schema"
        );
    }

    // Every `$ref` points at a definition that exists.
    fn refs(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| refs(v, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&schema, &mut all);
    assert!(all.len() > 10);
    for r in all {
        let ptr = r.strip_prefix('#').unwrap();
        assert!(schema.pointer(ptr).is_some(), "dangling $ref {r}");
    }
}

#[test]
fn threshold_pattern_accepts_the_documented_forms() {
    // The schema's pattern is what editors check; it must agree with the parser on the usual forms.
    let schema = common::schema();
    let pattern = schema
        .pointer("/definitions/threshold_expression/pattern")
        .and_then(|p| p.as_str())
        .unwrap();
    // A tiny check without a regex engine: every documented example is listed, and the
    // alternatives of the pattern name the operators and `generator: healthy`.
    for op in ["<=", ">=", "==", "!=", "<", ">"] {
        assert!(pattern.contains(op), "{op}");
    }
    assert!(pattern.contains("generator"));
    let examples = schema
        .pointer("/definitions/threshold_expression/examples")
        .unwrap()
        .as_array()
        .unwrap();
    for e in examples {
        let text = format!(
            "target: builtin\nthresholds: [\"{}\"]\nscenarios: [{{ name: s, load: {{ vus: 1, iterations: 1 }}, steps: [{{ name: home, get: / }}] }}]\n",
            e.as_str().unwrap()
        );
        if let Err(err) = onrush_plan::load_str_with_grammars(
            "plan.yaml",
            &text,
            std::path::Path::new("."),
            &[],
            &[],
            common::grammars(),
        ) {
            panic!("schema example {e} does not load:\n{err}");
        }
    }
}

/// `v`, or the definition its `$ref` points at.
fn resolve<'a>(schema: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => schema
            .pointer(r.strip_prefix('#').unwrap())
            .unwrap_or_else(|| panic!("dangling $ref {r}")),
        None => v,
    }
}

fn sorted_keys(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

/// Every key of every `properties` map in the schema, with the JSON pointer of that map
/// (not those inside `dependencies`, which constrain keys declared elsewhere).
fn all_properties(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter().filter(|(k, _)| *k != "dependencies") {
                let here = format!("{at}/{k}");
                if k == "properties" {
                    if let Value::Object(props) = child {
                        for name in props.keys() {
                            out.push((here.clone(), name.clone()));
                        }
                    }
                }
                all_properties(child, &here, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                all_properties(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn new_keys_are_described() {
    let schema = common::schema();
    let keys = |ptr: &str| sorted_keys(schema.pointer(ptr).unwrap_or_else(|| panic!("no {ptr}")));

    // Every property of every object has a description (its own, or its `$ref` target's).
    let mut all = Vec::new();
    all_properties(&schema, "", &mut all);
    assert!(all.len() > 120, "{}", all.len());
    for (map, name) in &all {
        let v = schema.pointer(&format!("{map}/{name}")).unwrap();
        let described =
            v.get("description").is_some() || resolve(&schema, v).get("description").is_some();
        assert!(described, "{map}/{name} has no description");
    }
    // ... and every object with fixed keys refuses unknown ones.
    for (map, _) in &all {
        let owner = schema
            .pointer(map.strip_suffix("/properties").unwrap())
            .unwrap();
        assert_eq!(owner["additionalProperties"], false, "{map}");
    }

    // http
    assert_eq!(
        schema["definitions"]["http"]["properties"]["cookies"]["enum"],
        json!(["on", "per_iteration", "off"])
    );
    let redirects = &schema["definitions"]["http"]["properties"]["redirects"]["anyOf"][0];
    assert_eq!(redirects["minimum"], 0);
    assert_eq!(redirects["maximum"], 100);
    for key in ["throttle", "body_limit"] {
        let v = &schema["definitions"]["http"]["properties"][key];
        assert!(
            v["examples"].as_array().is_some_and(|e| !e.is_empty()),
            "{key}"
        );
    }

    // scenario: feeders, pacing, on_failure
    let feeders = &schema["definitions"]["scenario"]["properties"]["feeders"];
    assert_eq!(feeders["anyOf"][0]["$ref"], "#/definitions/feeder");
    assert_eq!(feeders["anyOf"][1]["items"]["$ref"], "#/definitions/feeder");
    assert_eq!(
        keys("/definitions/feeder/properties"),
        ["delimiter", "file", "format", "mode", "on_exhausted"]
    );
    let feeder = &schema["definitions"]["feeder"];
    assert_eq!(feeder["required"], json!(["file"]));
    assert_eq!(
        feeder["properties"]["mode"]["enum"],
        json!(["circular", "random", "unique", "per_vu"])
    );
    assert_eq!(
        feeder["properties"]["on_exhausted"]["enum"],
        json!(["stop", "recycle"])
    );
    assert_eq!(
        feeder["properties"]["format"]["enum"],
        json!(["csv", "json"])
    );
    assert_eq!(
        schema["definitions"]["scenario"]["properties"]["pacing"]["$ref"],
        "#/definitions/duration"
    );
    assert_eq!(
        schema["definitions"]["on_failure"]["enum"],
        json!(["continue", "next_iteration", "stop_vu", "stop_test"])
    );

    // The HTTP request step (onrush-proto-http's grammar, under its key): bodies, auth,
    // extract, check.
    let request = &schema["definitions"]["get"];
    assert_eq!(
        sorted_keys(&request["dependencies"]),
        ["body", "body_file", "body_template", "form", "multipart"]
    );
    assert_eq!(
        keys("/definitions/get/properties/multipart/additionalProperties/anyOf/1/properties"),
        ["content_type", "file", "filename"]
    );
    assert_eq!(
        keys("/definitions/get/properties/auth/properties"),
        ["basic", "bearer"]
    );
    assert_eq!(
        keys("/definitions/get/properties/auth/properties/basic/properties"),
        ["password", "user"]
    );
    assert_eq!(
        request["properties"]["extract"]["additionalProperties"]["$ref"],
        "#/definitions/extractor"
    );
    assert_eq!(
        keys("/definitions/extractor/properties"),
        [
            "attribute",
            "boundary",
            "cookie",
            "css",
            "default",
            "group",
            "header",
            "jsonpath",
            "occurrence",
            "regex",
            "status",
            "url",
            "xpath"
        ]
    );
    assert_eq!(
        schema["definitions"]["extractor"]["oneOf"]
            .as_array()
            .unwrap()
            .len(),
        9
    );
    assert_eq!(
        keys("/definitions/check/properties"),
        [
            "body_contains",
            "body_matches",
            "body_md5",
            "body_sha256",
            "body_size",
            "contains",
            "duration_below",
            "equals",
            "exists",
            "header",
            "js",
            "jsonpath",
            "matches",
            "name",
            "status"
        ]
    );
    assert_eq!(
        schema["definitions"]["check"]["oneOf"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    let check = &request["properties"]["check"]["anyOf"];
    assert_eq!(check[0]["$ref"], "#/definitions/check");
    assert_eq!(check[1]["items"]["$ref"], "#/definitions/check");

    // steps: every kind (the built-in protocols' steps are added by their grammars, in the
    // order registered: compared as a set)
    let mut kinds: Vec<&str> = schema["definitions"]["step"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["$ref"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    let mut expected = [
        "#/definitions/get",
        "#/definitions/think",
        "#/definitions/loop",
        "#/definitions/group",
        "#/definitions/if",
        "#/definitions/once",
        "#/definitions/random",
        "#/definitions/script",
        // a request of another protocol (onrush-proto-tcp)
        "#/definitions/tcp",
        "#/definitions/udp",
        "#/definitions/ws",
        "#/definitions/grpc",
        // a local command (onrush-proto-exec)
        "#/definitions/exec",
        "#/definitions/thrift",
    ];
    expected.sort_unstable();
    assert_eq!(kinds, expected);
    // ws: one shape per action, each with its own keys.
    let ws: Vec<&str> = schema["definitions"]["ws"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["properties"]["ws"]["const"].as_str().unwrap())
        .collect();
    assert_eq!(ws, ["connect", "send", "receive", "ping", "close"]);
    assert_eq!(
        schema["definitions"]["ws"]["anyOf"][0]["required"],
        json!(["ws", "url"])
    );
    let tcp = &schema["definitions"]["tcp"];
    assert_eq!(tcp["required"], json!(["tcp"]));
    assert_eq!(tcp["additionalProperties"], false);
    for key in [
        "send",
        "send_hex",
        "until",
        "read",
        "length_prefix",
        "idle",
        "until_close",
        "reply",
        "max_reply",
        "check",
        "extract",
    ] {
        assert!(tcp["properties"].get(key).is_some(), "tcp.{key}");
    }
    for kind in ["think", "loop", "group", "once", "random"] {
        assert_eq!(
            schema["definitions"][kind]["required"],
            json!([kind]),
            "{kind}"
        );
    }
    assert_eq!(keys("/definitions/if/properties"), ["else", "if", "then"]);
    assert_eq!(
        schema["definitions"]["if"]["required"],
        json!(["if", "then"])
    );
    assert_eq!(
        keys("/definitions/group/properties/group/properties"),
        ["name", "steps"]
    );
    assert_eq!(
        keys("/definitions/random/properties/random/items/properties"),
        ["steps", "weight"]
    );
    assert_eq!(
        keys("/definitions/condition/properties"),
        ["equals", "exists", "js", "matches", "not_equals", "var"]
    );
    let inner = &schema["definitions"]["loop"]["properties"]["loop"];
    assert_eq!(inner["required"], json!(["steps"]));
    assert_eq!(
        inner["oneOf"],
        json!([{ "required": ["count"] }, { "required": ["while"] }, { "required": ["foreach"] }])
    );
    assert_eq!(
        inner["dependencies"],
        json!({ "as": ["foreach"], "foreach": ["as"], "max": ["while"] })
    );
}

#[test]
fn patterns_compile_and_accept_their_examples() {
    let schema = common::schema();
    fn walk(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(p)) = m.get("pattern") {
                    out.push((at.to_string(), p.clone()));
                }
                for (k, c) in m {
                    walk(c, &format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    walk(c, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut patterns = Vec::new();
    walk(&schema, "", &mut patterns);
    assert!(patterns.len() > 10);
    for (at, p) in &patterns {
        regex::Regex::new(p).unwrap_or_else(|e| panic!("{at}: {e}"));
    }
    // The schema's own pattern, or the first one of its `anyOf`.
    let pattern = |ptr: &str| -> regex::Regex {
        let v = resolve(&schema, schema.pointer(ptr).unwrap());
        let p = v["pattern"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| {
                v["anyOf"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find_map(|a| a["pattern"].as_str().map(str::to_string))
                    .unwrap()
            });
        regex::Regex::new(&p).unwrap()
    };
    let throttle = pattern("/definitions/http/properties/throttle");
    for ok in ["64KB/s", "56KB/s", "1MiB/s", "512", "1.5MB", "${RATE}"] {
        assert!(throttle.is_match(ok), "throttle {ok}");
    }
    for bad in ["fast", "64 kbit/s", "/s"] {
        assert!(!throttle.is_match(bad), "throttle {bad}");
    }
    let size = pattern("/definitions/byte_size");
    for ok in ["1MiB", "64KB", "2MB", "100", "4GiB"] {
        assert!(size.is_match(ok), "size {ok}");
    }
    for bad in ["1 megabyte", "MiB", "-5"] {
        assert!(!size.is_match(bad), "size {bad}");
    }
    let name = pattern("/definitions/runtime_name");
    for ok in ["ids", "${ids}", "next_page"] {
        assert!(name.is_match(ok), "{ok}");
    }
    assert!(!name.is_match("1abc"));
    let sha = pattern("/definitions/check/properties/body_sha256");
    assert!(sha.is_match(&"a".repeat(64)));
    assert!(!sha.is_match(&"a".repeat(63)));
    let md5 = pattern("/definitions/check/properties/body_md5");
    assert!(md5.is_match(&"0F".repeat(16)));
    assert!(!md5.is_match("xyz"));
}

/// The keys written in a plan file: `key:` tokens outside quotes, comments and `${...}`, with
/// their line and the key of the mapping they belong to (`None` at the top level).
fn plan_keys(text: &str) -> Vec<(usize, String, Option<String>)> {
    let mut out = Vec::new();
    // Open block mappings: (column, key).
    let mut block: Vec<(usize, String)> = Vec::new();
    // Open flow collections (`{` / `[`): the key each belongs to.
    let mut flow: Vec<Option<String>> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let c: Vec<char> = line.chars().collect();
        let mut pending: Option<String> = None;
        let mut i = 0;
        while i < c.len() {
            match c[i] {
                '#' if i == 0 || c[i - 1].is_whitespace() => break,
                '"' => {
                    i += 1;
                    while i < c.len() && c[i] != '"' {
                        i += if c[i] == '\\' { 2 } else { 1 };
                    }
                }
                '\'' => {
                    i += 1;
                    while i < c.len() && !(c[i] == '\'' && c.get(i + 1) != Some(&'\'')) {
                        i += if c[i] == '\'' { 2 } else { 1 };
                    }
                }
                '{' if i > 0 && c[i - 1] == '$' => {
                    while i < c.len() && c[i] != '}' {
                        i += 1;
                    }
                }
                '{' | '[' => {
                    let owner = pending.take().or_else(|| match flow.last() {
                        Some(o) => o.clone(),
                        None => block.last().map(|(_, k)| k.clone()),
                    });
                    flow.push(owner);
                }
                '}' | ']' => {
                    flow.pop();
                }
                ch if (ch.is_ascii_alphanumeric() || ch == '_')
                    && (i == 0 || matches!(c[i - 1], ' ' | '{' | '[' | ',')) =>
                {
                    let start = i;
                    while i < c.len() && (c[i].is_ascii_alphanumeric() || "_-.".contains(c[i])) {
                        i += 1;
                    }
                    let is_key = c.get(i) == Some(&':')
                        && !matches!(c.get(i + 1), Some(next) if !next.is_whitespace());
                    if !is_key {
                        // A plain scalar: skip the rest of the word.
                        while i < c.len() && !matches!(c[i], ' ' | ',' | '}' | ']') {
                            i += 1;
                        }
                        continue;
                    }
                    let key: String = c[start..i].iter().collect();
                    let parent = if let Some(owner) = flow.last() {
                        owner.clone()
                    } else {
                        while block.last().is_some_and(|(col, _)| *col >= start) {
                            block.pop();
                        }
                        let parent = block.last().map(|(_, k)| k.clone());
                        block.push((start, key.clone()));
                        parent
                    };
                    out.push((n + 1, key.clone(), parent));
                    pending = Some(key);
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

#[test]
fn plan_key_scanner() {
    let text = concat!(
        "target: http://127.0.0.1:${PORT:-8080}  # a: comment\n",
        "vars: { vus: 4 }\n",
        "scenarios:\n",
        "  - name: s\n",
        "    steps:\n",
        "      - get: /x\n",
        "        headers: { X-A: \"b: c\" }\n",
        "        extract:\n",
        "          tok: { regex: 'x: ''y'' z' }\n",
        "      - think: 1s\n",
    );
    let keys: Vec<(String, Option<String>)> = plan_keys(text)
        .into_iter()
        .map(|(_, k, p)| (k, p))
        .collect();
    let k = |key: &str, parent: Option<&str>| (key.to_string(), parent.map(str::to_string));
    assert_eq!(
        keys,
        [
            k("target", None),
            k("vars", None),
            k("vus", Some("vars")),
            k("scenarios", None),
            k("name", Some("scenarios")),
            k("steps", Some("scenarios")),
            k("get", Some("steps")),
            k("headers", Some("steps")),
            k("X-A", Some("headers")),
            k("extract", Some("steps")),
            k("tok", Some("extract")),
            k("regex", Some("tok")),
            k("think", Some("steps")),
        ]
    );
}

#[test]
fn every_key_of_the_examples_is_in_the_schema() {
    // No JSON-Schema validator is in Cargo.lock, so: every key the examples write must be a
    // property somewhere in the schema, except names the plan chooses itself (variables, header
    // names, form and query fields, multipart parts, extracted variables).
    const CHOSEN: [&str; 6] = ["vars", "headers", "form", "query", "multipart", "extract"];
    let schema = common::schema();
    let mut all = Vec::new();
    all_properties(&schema, "", &mut all);
    let known: std::collections::BTreeSet<&str> = all.iter().map(|(_, k)| k.as_str()).collect();

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut seen = std::collections::BTreeSet::new();
    let mut chosen = std::collections::BTreeSet::new();
    for file in ["scenario.yaml", "basic.yaml", "quickstart.yaml"] {
        let path = dir.join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let keys = plan_keys(&text);
        assert!(keys.len() > 5, "{file}: only {} keys found", keys.len());
        for (line, key, parent) in keys {
            if parent.as_deref().is_some_and(|p| CHOSEN.contains(&p)) {
                chosen.insert(key);
                continue;
            }
            assert!(
                known.contains(key.as_str()),
                "{file}:{line}: `{key}:` (in `{}`) is not a key of the schema",
                parent.as_deref().unwrap_or("the top level")
            );
            seen.insert(key);
        }
    }
    // The scan found the new keys scenario.yaml shows, and told chosen names apart.
    for key in [
        "feeders",
        "on_exhausted",
        "pacing",
        "cookies",
        "decompress",
        "redirects",
        "once",
        "extract",
        "css",
        "attribute",
        "check",
        "body_contains",
        "form",
        "on_failure",
        "jsonpath",
        "occurrence",
        "group",
        "loop",
        "foreach",
        "as",
        "query",
        "if",
        "var",
        "equals",
        "then",
        "auth",
        "bearer",
        "random",
        "weight",
        "body_template",
        "duration_below",
        "header",
        "think",
        "thresholds",
    ] {
        assert!(seen.contains(key), "`{key}:` not found in the examples");
    }
    for key in [
        "csrf",
        "token",
        "ids",
        "username",
        "Content-Type",
        "id",
        "vus",
    ] {
        assert!(
            chosen.contains(key),
            "`{key}` not recognised as a chosen name"
        );
    }
}
