//! Correlation: a value the server sent (a CSRF token in a hidden input, an id in a JSON
//! response, a token in a response header) that the browser later sent back becomes an
//! extractor on the first response and a `${var}` in the later requests.
//!
//! Conservative on purpose — a wrong extractor breaks a plan that replaying the recorded value
//! would have run: a value must look like a token (see [`token_like`]), must not have been sent
//! by the client before the server first sent it, and is only replaced where it stands whole
//! (not inside a longer token).

use regex::Regex;
use serde_json::Value;

use super::model::Response;

/// One kept request, as the plan will send it (text already escaped for onrush templates).
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub path_query: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// Headers the browser sent that the plan leaves out (Cookie…): only to tell client-made
    /// values from server-made ones.
    pub dropped: Vec<(String, String)>,
}

/// How to read a value from a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extractor {
    JsonPath(String),
    /// A CSS selector, the attribute, the occurrence (1-based).
    Css(String, &'static str, usize),
    Header(String),
}

impl Extractor {
    pub fn describe(&self) -> String {
        match self {
            Extractor::JsonPath(p) => format!("jsonpath {p}"),
            Extractor::Css(s, a, n) if *n > 1 => format!("css {s} @{a} (occurrence {n})"),
            Extractor::Css(s, a, _) => format!("css {s} @{a}"),
            Extractor::Header(h) => format!("header {h}"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Correlation {
    pub var: String,
    pub value: String,
    /// Index (in the kept requests) of the response it is extracted from.
    pub source: usize,
    pub extractor: Extractor,
    /// (request index, where: `path`, `query`, `header X`, `body`).
    pub uses: Vec<(usize, String)>,
}

/// A value found in a response, where it was, and a name for it.
struct Candidate {
    value: String,
    name: String,
    extractor: Extractor,
}

/// Finds correlations over `requests[i]` ↔ `responses[i]` and rewrites the requests' text.
pub fn correlate(requests: &mut [Outgoing], responses: &[&Response]) -> Vec<Correlation> {
    let mut found: Vec<Correlation> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (i, response) in responses.iter().enumerate() {
        for cand in candidates(response) {
            if found.iter().any(|c| c.value == cand.value) {
                continue;
            }
            // Sent by the client before the server sent it: the client made it (typed, generated).
            if requests[..=i].iter().any(|r| sends(r, &cand.value)) {
                continue;
            }
            let uses: Vec<(usize, String)> = (i + 1..requests.len())
                .flat_map(|j| {
                    places(&requests[j], &cand.value)
                        .into_iter()
                        .map(move |w| (j, w))
                })
                .collect();
            if uses.is_empty() {
                continue;
            }
            let var = unique_name(&cand.name, &mut names);
            found.push(Correlation {
                var,
                value: cand.value,
                source: i,
                extractor: cand.extractor,
                uses,
            });
        }
    }
    // Longer values first, so a value inside another one's text is never replaced first.
    let mut order: Vec<&Correlation> = found.iter().collect();
    order.sort_by_key(|c| std::cmp::Reverse(c.value.len()));
    for c in order {
        let with = format!("${{{}}}", c.var);
        for r in requests.iter_mut().skip(c.source + 1) {
            r.path_query = replace_whole(&r.path_query, &c.value, &with);
            for (_, v) in r.headers.iter_mut() {
                *v = replace_whole(v, &c.value, &with);
            }
            if let Some(b) = r.body.as_mut() {
                *b = replace_whole(b, &c.value, &with);
            }
        }
    }
    found
}

fn unique_name(base: &str, taken: &mut Vec<String>) -> String {
    let mut clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect::<String>()
        .trim_matches('_')
        .to_string();
    if clean.is_empty() || clean.starts_with(|c: char| c.is_ascii_digit()) {
        clean.insert_str(0, "v_");
    }
    // Names the plan gives a meaning of its own.
    if matches!(clean.as_str(), "vu" | "iteration") {
        clean.push_str("_value");
    }
    let mut name = clean.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{clean}_{n}");
        n += 1;
    }
    taken.push(name.clone());
    name
}

/// Whether a value looks like something a server generates (a token, an id), not a word, a
/// small number, a date, a path or a file name. False positives cost more than misses.
pub fn token_like(v: &str) -> bool {
    if v.len() < 6 || v.len() > 512 {
        return false;
    }
    if !v
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_-.~+/=:".contains(&b))
    {
        return false;
    }
    if !v.bytes().any(|b| b.is_ascii_digit()) {
        return false;
    }
    if v.starts_with('/') || v.contains("://") {
        return false;
    }
    static NOT_TOKENS: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let not = NOT_TOKENS.get_or_init(|| {
        Regex::new(concat!(
            r"^(\d{4}-\d\d-\d\d([t ].*)?|\d{1,2}:\d\d(:\d\d)?|v?\d+(\.\d+)+|",
            r".*\.(html?|js|css|png|jpe?g|gif|svg|json|xml|php|aspx?|txt|pdf)|",
            r"[0-9a-f]{8}-[0-9a-f]{4}-0000-0000-000000000000)$"
        ))
        .expect("a valid regex")
    });
    !not.is_match(&v.to_ascii_lowercase())
}

fn candidates(response: &Response) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (name, value) in &response.headers {
        let lower = name.to_ascii_lowercase();
        let managed = matches!(
            lower.as_str(),
            "set-cookie"
                | "date"
                | "expires"
                | "last-modified"
                | "etag"
                | "age"
                | "content-length"
                | "content-type"
                | "content-encoding"
                | "cache-control"
                | "server"
                | "vary"
                | "location"
                | "keep-alive"
                | "connection"
                | "transfer-encoding"
        );
        if !managed && token_like(value.trim()) {
            out.push(Candidate {
                value: value.trim().to_string(),
                name: lower.trim_start_matches("x-").to_string(),
                extractor: Extractor::Header(name.clone()),
            });
        }
    }
    let Some(text) = response.text.as_deref() else {
        return out;
    };
    let mime = response.mime.to_ascii_lowercase();
    let trimmed = text.trim_start();
    if mime.contains("json") || trimmed.starts_with('{') || trimmed.starts_with('[') {
        if let Ok(json) = serde_json::from_str::<Value>(text) {
            json_leaves(&json, "$", "", &mut out);
        }
    } else if mime.contains("html") || trimmed.starts_with('<') {
        html_fields(text, &mut out);
    }
    out
}

fn json_leaves(v: &Value, path: &str, key: &str, out: &mut Vec<Candidate>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let simple = !k.is_empty()
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !k.starts_with(|c: char| c.is_ascii_digit());
                let p = if simple {
                    format!("{path}.{k}")
                } else {
                    format!(
                        "{path}[{}]",
                        serde_json::to_string(k)
                            .unwrap_or_default()
                            .replace('"', "'")
                    )
                };
                json_leaves(child, &p, k, out);
            }
        }
        Value::Array(items) => {
            for (n, child) in items.iter().enumerate() {
                json_leaves(child, &format!("{path}[{n}]"), key, out);
            }
        }
        Value::String(s) if token_like(s) => out.push(Candidate {
            value: s.clone(),
            name: key.to_string(),
            extractor: Extractor::JsonPath(path.to_string()),
        }),
        Value::Number(n) if token_like(&n.to_string()) => out.push(Candidate {
            value: n.to_string(),
            name: key.to_string(),
            extractor: Extractor::JsonPath(path.to_string()),
        }),
        _ => {}
    }
}

/// Hidden inputs and `<meta name=… content=…>` (where frameworks put CSRF tokens).
fn html_fields(html: &str, out: &mut Vec<Candidate>) {
    static TAG: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    static ATTR: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let tag =
        TAG.get_or_init(|| Regex::new(r"(?is)<(input|meta)\b([^>]*)>").expect("a valid regex"));
    let attr = ATTR.get_or_init(|| {
        Regex::new(r#"(?is)([a-z_:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))"#)
            .expect("a valid regex")
    });
    let mut seen: Vec<String> = Vec::new();
    for t in tag.captures_iter(html) {
        let element = t[1].to_ascii_lowercase();
        let attrs: Vec<(String, String)> = attr
            .captures_iter(&t[2])
            .map(|a| {
                let v = a
                    .get(2)
                    .or(a.get(3))
                    .or(a.get(4))
                    .map_or("", |m| m.as_str());
                (a[1].to_ascii_lowercase(), decode_entities(v))
            })
            .collect();
        let get = |k: &str| attrs.iter().find(|a| a.0 == k).map(|a| a.1.as_str());
        let (name, value, attribute) = match element.as_str() {
            "input" if get("type").is_some_and(|t| t.eq_ignore_ascii_case("hidden")) => {
                (get("name"), get("value"), "value")
            }
            "meta" => (get("name"), get("content"), "content"),
            _ => continue,
        };
        let (Some(name), Some(value)) = (name, value) else {
            continue;
        };
        if name.contains(['\'', '"', '\\', ']']) {
            continue;
        }
        let selector = format!("{element}[name='{name}']");
        seen.push(selector.clone());
        let occurrence = seen.iter().filter(|s| **s == selector).count();
        if token_like(value) {
            out.push(Candidate {
                value: value.to_string(),
                name: name.to_string(),
                extractor: Extractor::Css(selector, attribute, occurrence),
            });
        }
    }
}

fn decode_entities(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Whether `value` stands whole at byte `at` of `text` (no token character around it).
fn whole_at(text: &str, at: usize, len: usize) -> bool {
    // `=` before a value is a key's (`csrf=VALUE`); after it, base64 padding of a longer token.
    let joins = |c: Option<char>, also: &str| {
        c.is_some_and(|c| c.is_ascii_alphanumeric() || "_-.~+".contains(c) || also.contains(c))
    };
    !joins(text[..at].chars().next_back(), "") && !joins(text[at + len..].chars().next(), "=")
}

fn contains_whole(text: &str, value: &str) -> bool {
    text.match_indices(value)
        .any(|(at, _)| whole_at(text, at, value.len()))
}

fn replace_whole(text: &str, value: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, _) in text.match_indices(value) {
        if whole_at(text, at, value.len()) {
            out.push_str(&text[last..at]);
            out.push_str(with);
            last = at + value.len();
        }
    }
    out.push_str(&text[last..]);
    out
}

fn sends(r: &Outgoing, value: &str) -> bool {
    !places(r, value).is_empty()
        || r.dropped
            .iter()
            .any(|(n, v)| !n.eq_ignore_ascii_case("cookie") && contains_whole(v, value))
}

/// Where a request sends `value` whole.
fn places(r: &Outgoing, value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (path, query) = r.path_query.split_once('?').unwrap_or((&r.path_query, ""));
    if contains_whole(path, value) {
        out.push("path".to_string());
    }
    if contains_whole(query, value) {
        out.push("query".to_string());
    }
    for (n, v) in &r.headers {
        if contains_whole(v, value) {
            out.push(format!("header {n}"));
        }
    }
    if r.body.as_deref().is_some_and(|b| contains_whole(b, value)) {
        out.push("body".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Outgoing {
        Outgoing {
            path_query: path.into(),
            headers: headers
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            body: body.map(str::to_string),
            dropped: Vec::new(),
        }
    }

    fn resp(mime: &str, text: &str, headers: &[(&str, &str)]) -> Response {
        Response {
            status: 200,
            headers: headers
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            mime: mime.into(),
            text: Some(text.into()),
        }
    }

    #[test]
    fn tokens_are_told_from_words_numbers_dates_and_files() {
        for yes in [
            "a8f3c2d1",
            "ord_8f3a2c91",
            "123456",
            "eyJhbGciOi.J9x-1_z",
            "Zm9vYmFy0==",
        ] {
            assert!(token_like(yes), "{yes}");
        }
        for no in [
            "200",
            "true",
            "abcdefgh",
            "2026-11-25",
            "2026-11-25T05:00:00Z",
            "1.2.3",
            "12:30",
            "/api/x1",
            "logo2.png",
            "http://x/1",
            "has space 1",
        ] {
            assert!(!token_like(no), "{no}");
        }
    }

    #[test]
    fn a_hidden_input_and_a_json_id_become_extractors_and_variables() {
        let html = r#"<html><head><meta name="csrf-token" content="m3ta7ok3n"></head>
            <form><input type="hidden" name="csrf_token" value="c5rf70k3n9">
            <input type="text" name="user" value="alice123"></form></html>"#;
        let json = r#"{"order": {"id": "ord_4f2a9c", "status": "new", "count": 200}}"#;
        let r0 = resp("text/html", html, &[]);
        let r1 = resp("application/json", json, &[("X-Request-Id", "rq123456")]);
        let r2 = resp("application/json", "{}", &[]);
        let mut reqs = vec![
            out("/login", &[], None),
            out(
                "/login",
                &[("X-CSRF-Token", "m3ta7ok3n")],
                Some("csrf_token=c5rf70k3n9&user=alice123"),
            ),
            out(
                "/api/orders/ord_4f2a9c?expand=ord_4f2a9cX",
                &[],
                Some(r#"{"order_id":"ord_4f2a9c","count":200}"#),
            ),
        ];
        let found = correlate(&mut reqs, &[&r0, &r1, &r2]);
        let summary: Vec<(String, String, usize)> = found
            .iter()
            .map(|c| (c.var.clone(), c.extractor.describe(), c.uses.len()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    "csrf_token".into(),
                    "css meta[name='csrf-token'] @content".into(),
                    1
                ),
                (
                    "csrf_token_2".into(),
                    "css input[name='csrf_token'] @value".into(),
                    1
                ),
                ("id".into(), "jsonpath $.order.id".into(), 2),
            ]
        );
        assert_eq!(reqs[1].headers[0].1, "${csrf_token}");
        assert_eq!(
            reqs[1].body.as_deref(),
            Some("csrf_token=${csrf_token_2}&user=alice123")
        );
        // Inside a longer token the value is left alone.
        assert_eq!(reqs[2].path_query, "/api/orders/${id}?expand=ord_4f2a9cX");
        assert_eq!(
            reqs[2].body.as_deref(),
            Some(r#"{"order_id":"${id}","count":200}"#)
        );
    }

    #[test]
    fn a_value_the_client_sent_first_is_not_correlated() {
        // The user typed the search term; the server echoed it back; the next page sends it again.
        let r0 = resp("application/json", r#"{"q": "term12345"}"#, &[]);
        let r1 = resp("application/json", "{}", &[]);
        let mut reqs = vec![
            out("/search?q=term12345", &[], None),
            out("/more?q=term12345", &[], None),
        ];
        assert!(correlate(&mut reqs, &[&r0, &r1]).is_empty());
        assert_eq!(reqs[1].path_query, "/more?q=term12345");
    }

    #[test]
    fn response_header_tokens_are_extracted_by_header() {
        let r0 = resp(
            "text/plain",
            "ok",
            &[
                ("X-Auth-Token", "tok_99aa88bb"),
                ("Set-Cookie", "sid=s3ss10n99"),
            ],
        );
        let r1 = resp("text/plain", "ok", &[]);
        let mut reqs = vec![
            out("/login", &[], None),
            out(
                "/me",
                &[
                    ("Authorization", "Bearer tok_99aa88bb"),
                    ("X-Sid", "s3ss10n99"),
                ],
                None,
            ),
        ];
        let found = correlate(&mut reqs, &[&r0, &r1]);
        assert_eq!(found.len(), 1, "Set-Cookie is the jar's: {found:?}");
        assert_eq!(found[0].extractor, Extractor::Header("X-Auth-Token".into()));
        assert_eq!(found[0].var, "auth_token");
        assert_eq!(reqs[1].headers[0].1, "Bearer ${auth_token}");
    }
}
