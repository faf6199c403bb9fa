//! A HAR 1.2 file read into the few things the importer needs, with errors that name the
//! field (`log.entries[3].request.url`) or, for JSON that does not parse, its line and column.

use std::fmt;

use base64::Engine;
use serde_json::Value;

/// A HAR file that cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarError {
    /// `line:column` for JSON syntax errors.
    pub at: Option<(usize, usize)>,
    /// The JSON path of the field at fault, e.g. `log.entries[2].request.url`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for HarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((line, col)) = self.at {
            write!(f, "{line}:{col}: ")?;
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for HarError {}

fn err(field: impl Into<String>, message: impl Into<String>) -> HarError {
    HarError {
        at: None,
        field: field.into(),
        message: message.into(),
    }
}

#[derive(Debug, Clone)]
pub struct Page {
    pub id: String,
    pub title: String,
}

#[derive(Debug, Clone)]
pub struct Entry {
    /// Position in `log.entries`, for the report.
    pub index: usize,
    pub pageref: Option<String>,
    /// `startedDateTime` in milliseconds since the epoch.
    pub started_ms: i64,
    /// `time`: the whole exchange in milliseconds.
    pub time_ms: f64,
    /// Chrome's `_resourceType` (`document`, `xhr`, `script`, `image`, `preflight`…).
    pub resource_type: Option<String>,
    /// Chrome's `_fromCache` (`memory`, `disk`): the browser answered from its cache and sent
    /// nothing.
    pub from_cache: Option<String>,
    pub request: Request,
    pub response: Response,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// `postData`: its MIME type and text (built from `params` when only those are recorded).
    pub body: Option<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub mime: String,
    /// The body as text (base64 decoded), when it was recorded and is UTF-8.
    pub text: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Har {
    pub pages: Vec<Page>,
    pub entries: Vec<Entry>,
}

/// Reads HAR text.
pub fn parse(text: &str) -> Result<Har, HarError> {
    let root: Value = serde_json::from_str(text).map_err(|e| HarError {
        at: Some((e.line(), e.column())),
        field: String::new(),
        message: format!(
            "not valid JSON: {e}; a HAR file is the JSON a browser's \"Save all as HAR\" writes"
        ),
    })?;
    let log = root.get("log").filter(|l| l.is_object()).ok_or_else(|| {
        err(
            "log",
            "missing; expected a HAR 1.2 file ({\"log\": {\"entries\": [...]}})",
        )
    })?;
    let pages = match log.get("pages") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, p)| {
                Ok(Page {
                    id: string(p, "id", &format!("log.pages[{i}]"))?,
                    title: p
                        .get("title")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                })
            })
            .collect::<Result<_, HarError>>()?,
        Some(_) => return Err(err("log.pages", "expected a list of pages")),
    };
    let Some(items) = log.get("entries").and_then(Value::as_array) else {
        return Err(err(
            "log.entries",
            "missing or not a list; expected the recorded requests",
        ));
    };
    let entries = items
        .iter()
        .enumerate()
        .map(|(i, e)| entry(i, e))
        .collect::<Result<_, _>>()?;
    Ok(Har { pages, entries })
}

fn string(v: &Value, key: &str, at: &str) -> Result<String, HarError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| err(format!("{at}.{key}"), "missing or not a string"))
}

fn headers(v: &Value, at: &str) -> Result<Vec<(String, String)>, HarError> {
    match v.get("headers") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let at = format!("{at}.headers[{i}]");
                Ok((string(h, "name", &at)?, string(h, "value", &at)?))
            })
            .collect(),
        Some(_) => Err(err(
            format!("{at}.headers"),
            "expected a list of {name, value}",
        )),
    }
}

fn entry(index: usize, e: &Value) -> Result<Entry, HarError> {
    let at = format!("log.entries[{index}]");
    let started = string(e, "startedDateTime", &at)?;
    let started_ms = parse_time(&started).ok_or_else(|| {
        err(
            format!("{at}.startedDateTime"),
            format!("{started:?} is not an ISO 8601 date-time like 2026-01-31T09:15:02.123Z"),
        )
    })?;
    let req = e
        .get("request")
        .filter(|r| r.is_object())
        .ok_or_else(|| err(format!("{at}.request"), "missing"))?;
    let rat = format!("{at}.request");
    let body = match req.get("postData") {
        Some(p) if p.is_object() => {
            let mime = p
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let text = match p.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => params_text(p),
            };
            Some((mime, text))
        }
        _ => None,
    };
    let request = Request {
        method: string(req, "method", &rat)?,
        url: string(req, "url", &rat)?,
        headers: headers(req, &rat)?,
        body,
    };
    let resp = e
        .get("response")
        .filter(|r| r.is_object())
        .ok_or_else(|| err(format!("{at}.response"), "missing"))?;
    let pat = format!("{at}.response");
    let content = resp.get("content");
    let text = content.and_then(|c| {
        let raw = c.get("text")?.as_str()?;
        if c.get("encoding").and_then(Value::as_str) == Some("base64") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(raw.trim())
                .ok()?;
            String::from_utf8(bytes).ok()
        } else {
            Some(raw.to_string())
        }
    });
    let response = Response {
        status: resp
            .get("status")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(999) as u16,
        headers: headers(resp, &pat)?,
        mime: content
            .and_then(|c| c.get("mimeType"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        text,
    };
    Ok(Entry {
        index,
        pageref: e.get("pageref").and_then(Value::as_str).map(str::to_string),
        started_ms,
        time_ms: e
            .get("time")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            .max(0.0),
        resource_type: e
            .get("_resourceType")
            .and_then(Value::as_str)
            .map(str::to_string),
        from_cache: e
            .get("_fromCache")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        request,
        response,
    })
}

/// `postData.params` (Firefox records a form this way) as an urlencoded body.
fn params_text(p: &Value) -> String {
    let Some(list) = p.get("params").and_then(Value::as_array) else {
        return String::new();
    };
    list.iter()
        .map(|kv| {
            let get = |k| kv.get(k).and_then(Value::as_str).unwrap_or("");
            format!("{}={}", form_encode(get("name")), form_encode(get("value")))
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `2026-01-31T09:15:02.123Z` or `…+01:00` → milliseconds since the epoch.
pub fn parse_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = &s[start..i];
        let padded: String = frac.chars().chain("000".chars()).take(3).collect();
        millis = padded.parse().ok()?;
    }
    let offset_min = match b.get(i) {
        None | Some(b'Z') | Some(b'z') => 0,
        Some(b'+') | Some(b'-') => {
            let sign = if b[i] == b'-' { -1 } else { 1 };
            let hh = num(i + 1..i + 3)?;
            let mm = num(i + 4..i + 6).or_else(|| num(i + 3..i + 5)).unwrap_or(0);
            sign * (hh * 60 + mm)
        }
        _ => return None,
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    Some(((days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60) * 1000) + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_with_zones_and_fractions() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_time("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(parse_time("1970-01-01T01:00:00.000+01:00"), Some(0));
        assert_eq!(
            parse_time("2026-11-25T05:00:00.123456Z"),
            Some(1_795_582_800_123)
        );
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn json_errors_name_line_and_column_and_fields_their_path() {
        let e = parse("{\n  \"log\": [\n").unwrap_err();
        assert_eq!(e.at.map(|a| a.0), Some(3));
        let e = parse(r#"{"log": {"entries": [{"startedDateTime": "x"}]}}"#).unwrap_err();
        assert_eq!(e.field, "log.entries[0].startedDateTime");
        let e = parse(r#"{"log": {"entries": [{"startedDateTime": "2026-01-01T00:00:00Z", "request": {"method": "GET"}, "response": {}}]}}"#).unwrap_err();
        assert_eq!(e.field, "log.entries[0].request.url");
        assert!(e.to_string().contains("missing"), "{e}");
    }

    #[test]
    fn form_params_become_a_body_and_base64_responses_text() {
        let har = parse(r#"{"log": {"entries": [{"startedDateTime": "2026-01-01T00:00:00Z",
          "request": {"method": "POST", "url": "http://h/", "headers": [],
                      "postData": {"mimeType": "application/x-www-form-urlencoded",
                                   "params": [{"name": "a b", "value": "1&2"}]}},
          "response": {"status": 200, "headers": [], "content": {"mimeType": "text/plain", "text": "aGVsbG8=", "encoding": "base64"}}}]}}"#).unwrap();
        let e = &har.entries[0];
        assert_eq!(e.request.body.as_ref().unwrap().1, "a+b=1%262");
        assert_eq!(e.response.text.as_deref(), Some("hello"));
    }
}
