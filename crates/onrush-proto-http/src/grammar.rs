//! How an HTTP request step is written in a plan: its method as the key (`- { post: /orders }`,
//! or `- { method: PURGE, path: /cache/1 }` for any other), the path or a full URL, `headers`,
//! a body (`body`, `body_file`, `body_template`, `form`, `multipart`), `query`, `auth` and
//! `expect_status`; read into an [`HttpRequest`] when the plan loads. Bodies and `auth` are in
//! grammar_body.rs; the JSON Schema in schema.rs.

use onrush_plan::grammar::{
    one_of, split_url, template_of, CompiledStep, Mapping, StepGrammar, TemplatePart, Value,
};
use onrush_plan::{PlanError, TargetUrl, Template};

use crate::request::HttpRequest;

pub(crate) const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];
/// The keys that start a request step besides `get`: the other methods, and `method` (any
/// token) with `path`.
const ALIASES: [&str; 8] = [
    "post", "put", "patch", "delete", "head", "options", "method", "path",
];
const KEYS: [&str; 9] = [
    "headers",
    "body",
    "body_file",
    "body_template",
    "form",
    "multipart",
    "query",
    "auth",
    "expect_status",
];
const EXAMPLE: &str = "{ get: /path }";

/// The HTTP request step grammar.
pub struct HttpGrammar;

impl StepGrammar for HttpGrammar {
    fn key(&self) -> &'static str {
        "get"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &ALIASES
    }

    fn supports_before(&self) -> bool {
        true
    }

    fn protocol(&self) -> &'static str {
        "http"
    }

    fn keys(&self) -> &'static [&'static str] {
        &KEYS
    }

    fn example(&self) -> &'static str {
        EXAMPLE
    }

    fn schema(&self) -> serde_json::Value {
        crate::schema::request_properties()
    }

    fn schema_rules(&self) -> serde_json::Value {
        crate::schema::request_rules()
    }

    fn explain_unknown(&self, key: &str) -> Option<(String, String)> {
        let lower = key.to_ascii_lowercase();
        if METHODS.contains(&lower.as_str()) {
            return Some((
                format!("unknown key `{key}`; method keys are lower case"),
                format!("write `{lower}:`"),
            ));
        }
        if matches!(lower.as_str(), "url" | "uri")
            || strsim::damerau_levenshtein(&lower, "method") <= 2
        {
            return Some((
                format!("unknown key `{key}`; expected the method as the key: {}", one_of(&METHODS)),
                "write the method and the path together, e.g. `- { post: /echo, body: \"...\" }`, or `- { method: PURGE, path: /cache/1 }` for another method".into(),
            ));
        }
        None
    }

    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let keys = step.keys();
        let methods: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| METHODS.contains(k))
            .collect();
        let (key, method) = if step.get("method").is_some() || step.get("path").is_some() {
            ("path", any_method(step, &methods)?)
        } else {
            match methods.as_slice() {
                [key] => (*key, key.to_ascii_uppercase()),
                [first, second, ..] => {
                    return Err(step
                        .key_error(second, format!("a second method key (`{first}` and `{second}`); expected exactly one per step"))
                        .with_hint("make each request its own step: `- { get: /a }` then `- { post: /b }`"))
                }
                [] => unreachable!("the grammar is chosen by one of its keys"),
            }
        };
        let (request, raw) = request(step, key, method)?;
        Ok(CompiledStep {
            name: format!("{} {raw}", request.method),
            spec: Box::new(request),
        })
    }
}

/// `{ method: TOKEN, path: ... }`: a request with any method (JMeter and k6 allow any token:
/// PURGE, PROPFIND, a house verb), sent exactly as written.
fn any_method(step: &Mapping<'_>, method_keys: &[&str]) -> Result<String, PlanError> {
    let example = "write `- { method: PURGE, path: /cache/1 }`, or `- { get: /x }` for a method with its own key";
    if let Some(key) = method_keys.first() {
        return Err(step
            .key_error(
                key,
                format!("`{key}:` beside `method:`/`path:`; expected one way to give the method"),
            )
            .with_hint(example));
    }
    let Some(method_value) = step.get("method") else {
        return Err(step
            .error("`path:` without `method:`; expected the method")
            .with_hint(example));
    };
    let method = method_value.string()?;
    if method.is_empty() || !method.bytes().all(is_tchar) {
        return Err(method_value
            .error(format!("`{method}` is not an HTTP method; expected a token of letters, digits and !#$%&'*+-.^_`|~"))
            .with_hint("e.g. `method: PURGE`"));
    }
    if step.get("path").is_none() {
        return Err(step
            .error(format!(
                "`method: {method}` without `path:`; expected the path or URL to send it to"
            ))
            .with_hint(example));
    }
    Ok(method)
}

/// A request whose path (or URL) is under `key`, sent with `method`; and the path as written
/// (the default metric name is `METHOD written`).
fn request(
    step: &Mapping<'_>,
    key: &str,
    method: String,
) -> Result<(HttpRequest, String), PlanError> {
    let value = step.get(key).expect("present");
    if value.is_null() {
        return Err(value
            .error("missing value; expected a path such as `/` or a URL")
            .with_hint(format!("e.g. `{key}: /`")));
    }
    let raw = value.written().unwrap_or_default().to_string();
    let (target, path) = request_path(&value, &raw, step.target_base())?;

    let mut headers = match step.get("headers") {
        Some(h) => h.headers()?,
        None => Vec::new(),
    };
    let body = crate::grammar_body::body(step)?;
    if let Some(auth) = step.get("auth") {
        if headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        {
            return Err(auth
                .error("`auth` and an `Authorization` header are both given; expected one of them")
                .with_hint("remove the Authorization header, `auth:` writes it"));
        }
        headers.push((
            "Authorization".to_string(),
            crate::grammar_body::auth(&auth)?,
        ));
    }
    let query = match step.get("query") {
        Some(q) => q.named_templates("query parameter")?,
        None => Vec::new(),
    };
    let expect_status = match step.get("expect_status") {
        Some(s) => Some(statuses(&s)?),
        None => None,
    };
    let request = HttpRequest {
        method,
        target,
        path,
        headers,
        body,
        expect_status,
        query,
    };
    Ok((request, raw))
}

/// The path template of a request, and its own target when the step gives an absolute URL;
/// `base` is the plan target's base path (`None`: the plan has no `target:`).
fn request_path(
    value: &Value<'_>,
    raw: &str,
    base: Option<String>,
) -> Result<(Option<TargetUrl>, Template), PlanError> {
    let mut parts = value.template_parts()?;
    let lead = match parts.first() {
        Some(TemplatePart::Lit(l)) => l.clone(),
        _ => String::new(),
    };
    let mut target = None;
    if lead.contains("://") {
        let after = lead.find("://").map_or(0, |i| i + 3);
        let end = lead[after..].find(['/', '?', '#']).map(|i| after + i);
        let end = match end {
            Some(e) => e,
            None if parts.len() > 1 => {
                return Err(value.error("the host of a step URL uses `${vu}` or `${iteration}`; expected a fixed host").with_hint("only the path, query, headers and body can change per request"));
            }
            None => lead.len(),
        };
        let (url, _) =
            split_url(&lead[..end]).map_err(|e| value.error(e.message).with_hint(e.hint))?;
        target = Some(url);
        let rest = &lead[end..];
        let rest = if rest.is_empty() || rest.starts_with('?') {
            format!("/{rest}")
        } else {
            rest.to_string()
        };
        parts[0] = TemplatePart::Lit(rest);
    } else if let Some(base) = base {
        if matches!(
            parts.first(),
            Some(TemplatePart::Var { .. } | TemplatePart::Func(_))
        ) {
            // The path starts with a runtime variable (`get: "${next_page}"`): its value must
            // be a path; the target's base path still goes in front.
            if !base.is_empty() {
                parts.insert(0, TemplatePart::Lit(base));
            }
        } else if !lead.starts_with('/') {
            let shown = raw.trim();
            let hint = if shown.contains('.') && !shown.contains(' ') {
                format!("write `/{shown}` for a path, or a full URL `http://{shown}`")
            } else {
                format!("write `/{}`", shown.trim_start_matches('/'))
            };
            return Err(value.error(format!("the path {shown:?} does not start with `/`; expected `/path` or `http://host:port/path`")).with_hint(hint));
        } else if !base.is_empty() {
            parts[0] = TemplatePart::Lit(format!("{base}{lead}"));
        }
    } else {
        return Err(value
            .error(format!(
                "{:?} is a path, and the plan has no `target:` to send it to; expected a full URL",
                raw.trim()
            ))
            .with_hint("add `target: http://host:port` at the top of the plan, or write the step's URL in full: `get: http://host:port/path`"));
    }
    for p in &parts {
        if let TemplatePart::Lit(l) = p {
            if let Some(c) = l
                .chars()
                .find(|c| c.is_whitespace() || c.is_control() || !c.is_ascii())
            {
                return Err(value
                    .error(format!("the path contains {c:?}; expected a URL path without spaces or non-ASCII characters"))
                    .with_hint("percent-encode it, e.g. a space as `%20`"));
            }
            if l.contains('#') {
                return Err(value
                    .error("the path contains a fragment (`#`); expected a path and query")
                    .with_hint("fragments are never sent to servers; remove the `#...` part"));
            }
        }
    }
    Ok((target, template_of(parts, raw)))
}

/// `expect_status: 201` or `[200, 204]`.
fn statuses(value: &Value<'_>) -> Result<Vec<u16>, PlanError> {
    let hint = "HTTP status codes are 100..599, e.g. `expect_status: [200, 201]`";
    if value.is_list() {
        let items = value.list()?;
        if items.is_empty() {
            return Err(value
                .error("the list is empty; expected at least one status code")
                .with_hint(hint));
        }
        return items
            .iter()
            .map(|s| Ok(s.uint(100, 599, hint)? as u16))
            .collect();
    }
    if value.is_mapping() {
        return Err(value
            .error("expected a status code or a list of them, found a mapping")
            .with_hint(hint));
    }
    Ok(vec![value.uint(100, 599, hint)? as u16])
}

/// RFC 9110 `tchar`: what a method token may hold.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
#[path = "grammar_tests.rs"]
mod tests;
