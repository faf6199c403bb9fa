//! Endpoints for the scenario features of a load-testing client: redirects, cookies, HTTP
//! authentication, compressed responses, and echoes of the headers and query it sent.

use std::sync::OnceLock;

use base64::Engine;
use bytes::Bytes;
use hyper::header::{
    HeaderValue, AUTHORIZATION, COOKIE, HOST, LOCATION, SET_COOKIE, WWW_AUTHENTICATE,
};
use hyper::http::request::Parts;
use hyper::StatusCode;

use crate::body::{Encoding, ResponseBody};
use crate::forms::{decode_pairs, percent_decode};
use crate::respond::{self, Resp};
use crate::samples;

/// Realm of the `WWW-Authenticate` challenges of `/basic-auth` and `/bearer`.
pub const AUTH_REALM: &str = "onrush";

/// `/redirect/N`: 302 to `/redirect/N-1`; `/redirect/0` is 200 `done\n`. With `?absolute=1`
/// the `Location` is an absolute URL built from the `Host` header (and keeps `?absolute=1`).
pub(crate) fn redirect(n: &str, parts: &Parts) -> Resp {
    let Ok(n) = n.parse::<u64>() else {
        return respond::bad_request(format!(
            "bad count {n:?} in /redirect/N: expected a non-negative integer\n"
        ));
    };
    if n == 0 {
        return respond::text(StatusCode::OK, "done\n".to_owned());
    }
    let absolute = respond::query_param(parts.uri.query(), "absolute")
        .is_some_and(|v| v == "1" || v == "true");
    let location = if absolute {
        let host = parts
            .headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| parts.uri.authority().map(|a| a.as_str()))
            .unwrap_or("localhost");
        format!("http://{host}/redirect/{}?absolute=1", n - 1)
    } else {
        format!("/redirect/{}", n - 1)
    };
    redirect_response(StatusCode::FOUND, &location)
}

/// `/redirect-to?url=U&status=S`: S (301, 302, 303, 307 or 308; default 302) to U (decoded).
pub(crate) fn redirect_to(parts: &Parts) -> Resp {
    let pairs = decode_pairs(parts.uri.query().unwrap_or(""));
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let Some(url) = get("url").filter(|u| !u.is_empty()) else {
        return respond::bad_request("/redirect-to needs ?url=TARGET[&status=CODE]\n".to_owned());
    };
    let status = match get("status").unwrap_or("302") {
        "301" => StatusCode::MOVED_PERMANENTLY,
        "302" => StatusCode::FOUND,
        "303" => StatusCode::SEE_OTHER,
        "307" => StatusCode::TEMPORARY_REDIRECT,
        "308" => StatusCode::PERMANENT_REDIRECT,
        other => {
            return respond::bad_request(format!(
                "bad /redirect-to status {other:?}: expected 301, 302, 303, 307 or 308\n"
            ))
        }
    };
    redirect_response(status, url)
}

fn redirect_response(status: StatusCode, location: &str) -> Resp {
    let Ok(value) = HeaderValue::from_str(location) else {
        return respond::bad_request(format!(
            "redirect target {location:?} cannot be a Location header\n"
        ));
    };
    let mut resp = respond::text(status, format!("redirecting to {location}\n"));
    resp.headers_mut().insert(LOCATION, value);
    resp
}

/// The cookies of the request's `Cookie` headers, in order, as name and value.
pub(crate) fn request_cookies(parts: &Parts) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for header in parts.headers.get_all(COOKIE) {
        let header = String::from_utf8_lossy(header.as_bytes());
        for piece in header.split(';') {
            let piece = piece.trim();
            if piece.is_empty() {
                continue;
            }
            let (name, value) = piece.split_once('=').unwrap_or(("", piece));
            let value = value.trim();
            // A value may be quoted (RFC 6265 4.1.1); the quotes are not part of it.
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            out.push((name.trim().to_owned(), value.to_owned()));
        }
    }
    out
}

/// `/cookies`: the request's cookies as a JSON object (the first of a repeated name wins).
pub(crate) fn cookies(parts: &Parts) -> Resp {
    let mut map = serde_json::Map::new();
    for (name, value) in request_cookies(parts) {
        map.entry(name).or_insert(serde_json::Value::String(value));
    }
    respond::json(&serde_json::Value::Object(map))
}

/// `/cookies/set?name=value&...`: one `Set-Cookie: name=value; Path=/` per pair; the body is
/// the JSON object of the cookies set.
pub(crate) fn cookies_set(parts: &Parts) -> Resp {
    let pairs = decode_pairs(parts.uri.query().unwrap_or(""));
    if pairs.is_empty() {
        return respond::bad_request("/cookies/set needs ?name=value[&name=value...]\n".to_owned());
    }
    let mut headers = Vec::with_capacity(pairs.len());
    let mut map = serde_json::Map::new();
    for (name, value) in pairs {
        if !is_token(&name) {
            return respond::bad_request(format!("bad cookie name {name:?}: expected a token\n"));
        }
        if !value.bytes().all(is_cookie_octet) {
            return respond::bad_request(format!(
                "bad value {value:?} for cookie {name}: no spaces, quotes, commas, semicolons \
                 or backslashes\n"
            ));
        }
        headers.push(format!("{name}={value}; Path=/"));
        map.insert(name, serde_json::Value::String(value));
    }
    let mut resp = respond::json(&serde_json::Value::Object(map));
    for h in headers {
        if let Ok(v) = HeaderValue::from_str(&h) {
            resp.headers_mut().append(SET_COOKIE, v);
        }
    }
    resp
}

/// `/cookies/delete?name&...`: `Set-Cookie: name=; Max-Age=0; Path=/` per name; the body is
/// `{"deleted": [names]}`.
pub(crate) fn cookies_delete(parts: &Parts) -> Resp {
    let names: Vec<String> = decode_pairs(parts.uri.query().unwrap_or(""))
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    if names.is_empty() {
        return respond::bad_request("/cookies/delete needs ?name[&name...]\n".to_owned());
    }
    if let Some(bad) = names.iter().find(|n| !is_token(n)) {
        return respond::bad_request(format!("bad cookie name {bad:?}: expected a token\n"));
    }
    let mut resp = respond::json(&serde_json::json!({ "deleted": names }));
    for name in &names {
        if let Ok(v) = HeaderValue::from_str(&format!("{name}=; Max-Age=0; Path=/")) {
            resp.headers_mut().append(SET_COOKIE, v);
        }
    }
    resp
}

/// RFC 9110 token (cookie names).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// RFC 6265 cookie-octet.
fn is_cookie_octet(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x2B | 0x2D..=0x3A | 0x3C..=0x5B | 0x5D..=0x7E)
}

/// `/basic-auth/USER/PASS`: 200 `{"authenticated": true, "user"}` when `Authorization: Basic`
/// carries exactly `USER:PASS`, else 401 with a `Basic` challenge.
pub(crate) fn basic_auth(arg: &str, parts: &Parts) -> Resp {
    let Some((user, pass)) = arg
        .split_once('/')
        .filter(|(u, p)| !u.is_empty() && !p.contains('/'))
    else {
        return respond::bad_request("/basic-auth needs /basic-auth/USER/PASS\n".to_owned());
    };
    let (user, pass) = (percent_decode(user, false), percent_decode(pass, false));
    let sent = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .and_then(|(_, b64)| {
            base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .ok()
        });
    let reason = match sent {
        None => "missing or malformed Authorization: Basic header",
        Some(creds) if creds == format!("{user}:{pass}").as_bytes() => {
            return respond::json(&serde_json::json!({ "authenticated": true, "user": user }));
        }
        Some(_) => "wrong user name or password",
    };
    unauthorized("Basic", reason)
}

/// `/bearer`: 200 `{"authenticated": true, "token"}` with `Authorization: Bearer T` (T not
/// empty), else 401 with a `Bearer` challenge.
pub(crate) fn bearer_auth(parts: &Parts) -> Resp {
    match crate::login::bearer(parts) {
        Some(token) => respond::json(&serde_json::json!({ "authenticated": true, "token": token })),
        None => unauthorized("Bearer", "missing Authorization: Bearer header"),
    }
}

fn unauthorized(scheme: &str, reason: &str) -> Resp {
    let mut resp = respond::json(&serde_json::json!({ "authenticated": false, "reason": reason }));
    *resp.status_mut() = StatusCode::UNAUTHORIZED;
    if let Ok(v) = HeaderValue::from_str(&format!("{scheme} realm=\"{AUTH_REALM}\"")) {
        resp.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    resp
}

/// `/headers`: the request headers as a JSON object, lower-case names, repeated ones joined
/// with `", "`.
pub(crate) fn headers(parts: &Parts) -> Resp {
    respond::json(&serde_json::to_value(respond::header_map(parts)).unwrap_or_default())
}

/// `/gzip`, `/deflate`, `/brotli`: the `/json` document compressed (compressed once per server
/// process, then served from memory).
pub(crate) fn compressed_json(encoding: Encoding) -> Resp {
    static DONE: [OnceLock<Bytes>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let index = match encoding {
        Encoding::Gzip => 0,
        Encoding::Deflate => 1,
        Encoding::Brotli => 2,
    };
    let data = DONE[index]
        .get_or_init(|| Bytes::from(encoding.compress(samples::JSON.as_bytes())))
        .clone();
    let mut resp = respond::ok(respond::JSON, ResponseBody::bytes(data));
    resp.headers_mut()
        .insert(hyper::header::CONTENT_ENCODING, encoding.header());
    resp
}
