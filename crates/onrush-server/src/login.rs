//! The login flow: `/login` hands out a fresh token per request, `POST /login` and `/verify`
//! check it and open a session (a `session` cookie), `/account` checks the session.
//!
//! Nothing is stored: a token is `tok-<n>-<mac>` and a session id `sess-<n>-<hex(user)>-<mac>`,
//! where `<mac>` is the first 8 bytes (16 hex digits) of HMAC-SHA256 under a key drawn at random
//! when the server starts, so only this server instance can mint values it accepts, and any
//! change to a token (a forged or altered one, one from another server) is refused. A token may
//! be verified any number of times; `<n>` only makes every issued token different.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, SET_COOKIE};
use hyper::http::request::Parts;
use hyper::StatusCode;
use sha2::{Digest, Sha256};

use crate::body::ResponseBody;
use crate::forms::decode_pairs;
use crate::respond::{self, Conn, ReqBody, Resp};
use crate::samples;
use crate::stats::LoginEvent;

/// Prefix of every token `/login` issues.
pub const TOKEN_PREFIX: &str = "tok-";
/// Name of the session cookie `POST /login` and `/verify` set and `/account` reads.
pub const SESSION_COOKIE: &str = "session";
/// The user a token check logs in when the request names none (`username` field or parameter).
pub const LOGIN_DEFAULT_USER: &str = "ada";
/// Longest accepted user name, in bytes (it is carried in the session id).
pub const MAX_USER_LEN: usize = 128;

/// Largest `POST /login` body read (form or JSON); a larger one gets 413.
const MAX_LOGIN_BODY: usize = 64 * 1024;
/// Bytes of the HMAC kept in tokens and session ids.
const MAC_LEN: usize = 8;

/// The per-server secret and the sequence numbers that make each token and session distinct.
pub(crate) struct Keys {
    key: [u8; 32],
    tokens: AtomicU64,
    sessions: AtomicU64,
}

impl Keys {
    pub(crate) fn new() -> Self {
        Keys {
            key: random_key(),
            tokens: AtomicU64::new(0),
            sessions: AtomicU64::new(0),
        }
    }

    /// A new token, `tok-<n>-<16 hex digits>`.
    pub(crate) fn issue_token(&self) -> String {
        let n = self.tokens.fetch_add(1, Relaxed) + 1;
        format!(
            "{TOKEN_PREFIX}{n}-{}",
            self.mac(&[b"token", n.to_string().as_bytes()])
        )
    }

    /// Whether this server issued `token`; the error says why not (the 403 reason).
    pub(crate) fn check_token(&self, token: &str) -> Result<(), &'static str> {
        let rest = token
            .strip_prefix(TOKEN_PREFIX)
            .ok_or("malformed token: expected tok-<n>-<mac>")?;
        let (n, mac) = rest
            .split_once('-')
            .ok_or("malformed token: expected tok-<n>-<mac>")?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || n.parse::<u64>().is_err() {
            return Err("malformed token: expected tok-<n>-<mac>");
        }
        if !ct_eq(mac, &self.mac(&[b"token", n.as_bytes()])) {
            return Err("token signature does not match: not issued by this server");
        }
        Ok(())
    }

    /// A new session id for `user`.
    pub(crate) fn issue_session(&self, user: &str) -> String {
        let n = self.sessions.fetch_add(1, Relaxed) + 1;
        let user_hex = respond::hex(user.as_bytes());
        let n = n.to_string();
        let mac = self.mac(&[b"session", n.as_bytes(), user.as_bytes()]);
        format!("sess-{n}-{user_hex}-{mac}")
    }

    /// The user of a session id this server issued; the error is the 401 reason.
    pub(crate) fn check_session(&self, id: &str) -> Result<String, &'static str> {
        const MALFORMED: &str = "malformed session id: expected sess-<n>-<user>-<mac>";
        let mut it = id.strip_prefix("sess-").ok_or(MALFORMED)?.split('-');
        let (Some(n), Some(user_hex), Some(mac), None) =
            (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(MALFORMED);
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(MALFORMED);
        }
        let user = unhex(user_hex).ok_or(MALFORMED)?;
        if !ct_eq(mac, &self.mac(&[b"session", n.as_bytes(), &user])) {
            return Err("session signature does not match: not issued by this server");
        }
        String::from_utf8(user).map_err(|_| MALFORMED)
    }

    /// Hex of the first [`MAC_LEN`] bytes of HMAC-SHA256 over the parts, each length-prefixed
    /// so that no two different part lists sign the same bytes.
    fn mac(&self, parts: &[&[u8]]) -> String {
        let mut msg = Vec::with_capacity(64);
        for p in parts {
            msg.extend_from_slice(&(p.len() as u32).to_be_bytes());
            msg.extend_from_slice(p);
        }
        respond::hex(&hmac_sha256(&self.key, &msg)[..MAC_LEN])
    }
}

/// HMAC-SHA256 (RFC 2104) for keys of at most 64 bytes.
pub(crate) fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    debug_assert!(key.len() <= 64);
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for (i, k) in key.iter().take(64).enumerate() {
        ipad[i] ^= k;
        opad[i] ^= k;
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(msg)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// Comparison whose time does not depend on where the strings differ.
fn ct_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// 32 bytes from the OS; if `/dev/urandom` cannot be read, SHA-256 of what varies per process
/// and per instant (std's random hash keys, the time, the process id, an address).
fn random_key() -> [u8; 32] {
    use std::io::Read;
    let mut key = [0u8; 32];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .is_ok()
    {
        return key;
    }
    use std::hash::{BuildHasher, Hasher};
    let mut h = Sha256::new();
    for i in 0..4u8 {
        let mut s = std::collections::hash_map::RandomState::new().build_hasher();
        s.write_u8(i);
        h.update(s.finish().to_le_bytes());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.update(now.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update((&key as *const _ as usize).to_le_bytes());
    h.finalize().into()
}

/// `/login` with any method but POST: a fresh token in an HTML page (default), JSON
/// (`?format=json`) or XML (`?format=xml`).
pub(crate) fn login_page(query: Option<&str>, conn: &Conn) -> Resp {
    let format = respond::query_param(query, "format").unwrap_or("html");
    if !matches!(format, "html" | "json" | "xml") {
        return respond::bad_request(format!(
            "bad /login format {format:?}: expected html, json or xml\n"
        ));
    }
    let token = conn.shared.keys.issue_token();
    conn.count(LoginEvent::TokenIssued);
    match format {
        "json" => respond::json(&serde_json::json!({
            "token": token,
            "expires_in": 3600,
            "user": {
                "id": samples::JSON_USER_ID,
                "name": samples::JSON_USER_NAME,
                "login": LOGIN_DEFAULT_USER,
            },
        })),
        "xml" => respond::ok(
            respond::XML,
            ResponseBody::bytes(Bytes::from(samples::login_xml(&token))),
        ),
        _ => respond::ok(
            respond::HTML,
            ResponseBody::bytes(Bytes::from(samples::login_html(&token))),
        ),
    }
}

/// Where a checked token came from (the `via` field of the answer).
#[derive(Clone, Copy)]
enum Via {
    Form,
    Json,
    Query,
    Header,
    Bearer,
}

impl Via {
    fn name(self) -> &'static str {
        match self {
            Via::Form => "form",
            Via::Json => "json",
            Via::Query => "query",
            Via::Header => "header",
            Via::Bearer => "bearer",
        }
    }
}

/// `POST /login`: the token from a form or JSON body, or else from the query, `X-CSRF-Token` or
/// `Authorization: Bearer`.
pub(crate) async fn login_post(parts: &Parts, body: impl ReqBody, conn: &Conn) -> Resp {
    let (data, too_big) = match read_limited(body, MAX_LOGIN_BODY).await {
        Ok(v) => v,
        Err(msg) => return respond::bad_request(msg),
    };
    if too_big {
        return respond::text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("POST /login body larger than {MAX_LOGIN_BODY} bytes\n"),
        );
    }
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut token = None;
    let mut user = None;
    if content_type.starts_with("application/x-www-form-urlencoded") {
        for (k, v) in decode_pairs(&String::from_utf8_lossy(&data)) {
            match k.as_str() {
                "csrf_token" | "token" if token.is_none() => token = Some((v, Via::Form)),
                "username" | "user" if user.is_none() => user = Some(v),
                _ => {}
            }
        }
    } else if content_type.starts_with("application/json")
        || (content_type.contains("+json") && !data.is_empty())
    {
        let doc: serde_json::Value = match serde_json::from_slice(&data) {
            Ok(doc) => doc,
            Err(e) => {
                conn.count(LoginEvent::TokenBad);
                return refuse(&format!("body is not valid JSON: {e}"));
            }
        };
        let field = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| doc.get(*n).and_then(|v| v.as_str()).map(str::to_owned))
        };
        token = field(&["token", "csrf_token"]).map(|t| (t, Via::Json));
        user = field(&["username", "user"]);
    }
    verify(parts, token, user, conn)
}

/// `/verify?token=T[&username=U]`, or a token in `X-CSRF-Token` or `Authorization: Bearer`.
pub(crate) fn verify_get(parts: &Parts, conn: &Conn) -> Resp {
    verify(parts, None, None, conn)
}

fn verify(
    parts: &Parts,
    body_token: Option<(String, Via)>,
    user: Option<String>,
    conn: &Conn,
) -> Resp {
    let query = decode_pairs(parts.uri.query().unwrap_or(""));
    let param = |names: &[&str]| {
        query
            .iter()
            .find(|(k, _)| names.contains(&k.as_str()))
            .map(|(_, v)| v.clone())
    };
    let user = user
        .or_else(|| param(&["username", "user"]))
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| LOGIN_DEFAULT_USER.to_owned());
    if user.len() > MAX_USER_LEN {
        return respond::bad_request(format!(
            "user name of {} bytes: at most {MAX_USER_LEN} accepted\n",
            user.len()
        ));
    }
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_owned())
    };
    let token = body_token
        .or_else(|| param(&["token", "csrf_token"]).map(|t| (t, Via::Query)))
        .or_else(|| header("x-csrf-token").map(|t| (t, Via::Header)))
        .or_else(|| bearer(parts).map(|t| (t.to_owned(), Via::Bearer)));
    let Some((token, via)) = token else {
        conn.count(LoginEvent::TokenBad);
        return refuse(
            "missing token: send csrf_token in a form, token in JSON or the query, \
             X-CSRF-Token or Authorization: Bearer",
        );
    };
    if let Err(reason) = conn.shared.keys.check_token(&token) {
        conn.count(LoginEvent::TokenBad);
        return refuse(reason);
    }
    conn.count(LoginEvent::TokenOk);
    let session = conn.shared.keys.issue_session(&user);
    let mut resp = respond::json(&serde_json::json!({
        "ok": true,
        "user": user,
        "via": via.name(),
        "session": session,
    }));
    let cookie = format!("{SESSION_COOKIE}={session}; Path=/; HttpOnly");
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        resp.headers_mut().insert(SET_COOKIE, v);
    }
    resp
}

/// `/account`: 200 `{"user", "session"}` with a valid session cookie, else 401.
pub(crate) fn account(parts: &Parts, conn: &Conn) -> Resp {
    let cookies = crate::scenario::request_cookies(parts);
    let Some((_, id)) = cookies.iter().find(|(k, _)| k == SESSION_COOKIE) else {
        conn.count(LoginEvent::SessionBad);
        return reject(
            StatusCode::UNAUTHORIZED,
            "no session cookie: log in with POST /login or /verify first",
        );
    };
    match conn.shared.keys.check_session(id) {
        Ok(user) => {
            conn.count(LoginEvent::SessionOk);
            respond::json(&serde_json::json!({ "user": user, "session": id }))
        }
        Err(reason) => {
            conn.count(LoginEvent::SessionBad);
            reject(StatusCode::UNAUTHORIZED, reason)
        }
    }
}

/// The credentials of `Authorization: Bearer T` (scheme case-insensitive), if non-empty.
pub(crate) fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn refuse(reason: &str) -> Resp {
    reject(StatusCode::FORBIDDEN, reason)
}

fn reject(status: StatusCode, reason: &str) -> Resp {
    let mut resp = respond::json(&serde_json::json!({ "ok": false, "reason": reason }));
    *resp.status_mut() = status;
    resp
}

/// Reads at most `limit` bytes of a body; the flag says there was more (the rest is drained so
/// the connection stays usable). The error is the 400 message.
pub(crate) async fn read_limited(
    mut body: impl ReqBody,
    limit: usize,
) -> Result<(Vec<u8>, bool), String> {
    let mut data = Vec::new();
    let mut too_big = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("cannot read request body: {e}\n"))?;
        if let Ok(chunk) = frame.into_data() {
            if too_big || data.len() + chunk.len() > limit {
                too_big = true;
                data.clear();
            } else {
                data.extend_from_slice(&chunk);
            }
        }
    }
    Ok((data, too_big))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            respond::hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn tokens_verify_and_alterations_do_not() {
        let keys = Keys::new();
        let t1 = keys.issue_token();
        let t2 = keys.issue_token();
        assert_ne!(t1, t2);
        assert!(
            t1.starts_with("tok-1-") && t1.len() == "tok-1-".len() + 16,
            "{t1}"
        );
        assert_eq!(keys.check_token(&t1), Ok(()));
        assert_eq!(keys.check_token(&t2), Ok(()));
        // Another counter with the same mac, a flipped mac digit, other servers' tokens.
        let (_, mac) = t1.rsplit_once('-').unwrap();
        assert!(keys.check_token(&format!("tok-2-{mac}")).is_err());
        let mut flipped = t1.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert!(keys
            .check_token(std::str::from_utf8(&flipped).unwrap())
            .is_err());
        assert!(keys.check_token(&Keys::new().issue_token()).is_err());
        for bad in [
            "",
            "tok-",
            "tok-1",
            "tok--abc",
            "tok-x-0123456789abcdef",
            "csrf-5b8e1d4a9c07",
        ] {
            assert!(keys.check_token(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sessions_carry_their_user() {
        let keys = Keys::new();
        let s = keys.issue_session("ada lovelace-é");
        assert_eq!(keys.check_session(&s).as_deref(), Ok("ada lovelace-é"));
        let forged = s.replacen(&respond::hex(b"ada"), &respond::hex(b"bob"), 1);
        assert!(keys.check_session(&forged).is_err());
        assert!(Keys::new().check_session(&s).is_err());
        assert!(keys.check_session("sess-1-zz-00").is_err());
    }
}
