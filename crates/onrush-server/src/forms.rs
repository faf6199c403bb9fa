//! `POST /form` (URL-encoded and multipart bodies) and `/query`, plus the URL decoding they and
//! the other endpoints share.
//!
//! Multipart bodies are parsed by `multer` as they arrive: every file part is hashed chunk by
//! chunk and never kept, so memory stays a few frames whatever the upload size. The body reaches
//! `multer` through [`OneFrame`], which hands over at most one frame per poll: `multer` reads its
//! source until it is pending, and without this a fast client could fill its buffer.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use hyper::header::CONTENT_TYPE;
use hyper::http::request::Parts;
use hyper::StatusCode;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::login::read_limited;
use crate::respond::{self, ReqBody, Resp};

/// Largest URL-encoded `/form` body (it is parsed whole); a larger one gets 413.
pub const MAX_URLENCODED_FORM: usize = 1 << 20;
/// Largest multipart text part (one without a file name; it is returned whole); a larger one
/// gets 413. File parts have no limit: they are hashed, not kept.
pub const MAX_TEXT_FIELD: usize = 1 << 20;

/// `%XX` decoding (invalid escapes are kept as they are), `+` as space when `plus` is set;
/// bytes that are not UTF-8 become U+FFFD.
pub(crate) fn percent_decode(s: &str, plus: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let hex = |c: u8| (c as char).to_digit(16);
        if b == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(if plus && b == b'+' { b' ' } else { b });
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `a=1&b=x%20y&c` as decoded pairs in order (`c` gets `""`; empty pieces are skipped).
pub(crate) fn decode_pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// Pairs as a JSON object: a key seen once maps to its string, a repeated key to the array of
/// its values in order.
pub(crate) fn pairs_to_json(pairs: Vec<(String, String)>) -> Map<String, Value> {
    let mut map = Map::new();
    for (k, v) in pairs {
        match map.get_mut(&k) {
            None => {
                map.insert(k, Value::String(v));
            }
            Some(Value::Array(values)) => values.push(Value::String(v)),
            Some(first) => {
                let first = first.take();
                map.insert(k, Value::Array(vec![first, Value::String(v)]));
            }
        }
    }
    map
}

/// `/query`: the decoded query parameters as a JSON object (repeated keys as arrays).
pub(crate) fn query(parts: &Parts) -> Resp {
    let pairs = decode_pairs(parts.uri.query().unwrap_or(""));
    respond::json(&Value::Object(pairs_to_json(pairs)))
}

/// `POST /form` (any method): `{"fields": {..}, "files": [..]}` from a URL-encoded or
/// multipart body.
pub(crate) async fn form(parts: &Parts, body: impl ReqBody + 'static) -> Resp {
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let lower = content_type.to_ascii_lowercase();
    if lower.starts_with("application/x-www-form-urlencoded") {
        let (data, too_big) = match read_limited(body, MAX_URLENCODED_FORM).await {
            Ok(v) => v,
            Err(msg) => return respond::bad_request(msg),
        };
        if too_big {
            return respond::text(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("URL-encoded form larger than {MAX_URLENCODED_FORM} bytes\n"),
            );
        }
        let fields = pairs_to_json(decode_pairs(&String::from_utf8_lossy(&data)));
        return respond::json(&serde_json::json!({ "fields": fields, "files": [] }));
    }
    if lower.starts_with("multipart/form-data") {
        let boundary = match multer::parse_boundary(&content_type) {
            Ok(b) => b,
            Err(e) => {
                respond::drain(body).await;
                return respond::bad_request(format!("bad multipart content type: {e}\n"));
            }
        };
        return multipart(body, boundary).await;
    }
    respond::drain(body).await;
    respond::text(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "/form takes application/x-www-form-urlencoded or multipart/form-data, not {:?}\n",
            content_type
        ),
    )
}

async fn multipart<B: ReqBody + 'static>(body: B, boundary: String) -> Resp {
    let mut mp = multer::Multipart::new(OneFrame::new(body), boundary);
    let mut fields = Vec::new();
    let mut files = Vec::new();
    loop {
        let mut field = match mp.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return bad_multipart(e),
        };
        // RFC 7578 4.2: every part has `Content-Disposition: form-data; name="..."`.
        let Some(name) = field.name().map(str::to_owned) else {
            return respond::bad_request(format!(
                "bad multipart body: part {} has no Content-Disposition: form-data; name=...\n",
                field.index()
            ));
        };
        let file_name = field.file_name().map(str::to_owned);
        let part_type = field.content_type().map(|m| m.to_string());
        match file_name {
            Some(file_name) => {
                let mut hasher = Sha256::new();
                let mut length = 0u64;
                loop {
                    match field.chunk().await {
                        Ok(Some(chunk)) => {
                            length += chunk.len() as u64;
                            hasher.update(&chunk);
                        }
                        Ok(None) => break,
                        Err(e) => return bad_multipart(e),
                    }
                }
                files.push(serde_json::json!({
                    "field": name,
                    "filename": file_name,
                    "content_type": part_type,
                    "length": length,
                    "sha256": respond::hex(&hasher.finalize()),
                }));
            }
            None => {
                let mut text = Vec::new();
                loop {
                    match field.chunk().await {
                        Ok(Some(chunk)) => {
                            if text.len() + chunk.len() > MAX_TEXT_FIELD {
                                drop(field);
                                drop(mp);
                                return respond::text(
                                    StatusCode::PAYLOAD_TOO_LARGE,
                                    format!(
                                        "multipart text field {name:?} larger than \
                                         {MAX_TEXT_FIELD} bytes (send it as a file part)\n"
                                    ),
                                );
                            }
                            text.extend_from_slice(&chunk);
                        }
                        Ok(None) => break,
                        Err(e) => return bad_multipart(e),
                    }
                }
                fields.push((name, String::from_utf8_lossy(&text).into_owned()));
            }
        }
    }
    respond::json(&serde_json::json!({ "fields": pairs_to_json(fields), "files": files }))
}

fn bad_multipart(e: multer::Error) -> Resp {
    respond::bad_request(format!("bad multipart body: {e}\n"))
}

/// The request body as a stream of data frames, at most one per poll (see the module docs).
struct OneFrame<B> {
    body: B,
    /// A frame was just handed over: the next poll yields once before reading another.
    handed: bool,
}

impl<B> OneFrame<B> {
    fn new(body: B) -> Self {
        OneFrame {
            body,
            handed: false,
        }
    }
}

impl<B: ReqBody> Stream for OneFrame<B> {
    type Item = Result<Bytes, B::Fault>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.handed {
            this.handed = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        loop {
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers carry no data: skip them.
                    if let Ok(data) = frame.into_data() {
                        this.handed = true;
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b+c", true), "a b c");
        assert_eq!(percent_decode("a%20b+c", false), "a b+c");
        assert_eq!(percent_decode("%E2%9C%93%zz%4", true), "\u{2713}%zz%4");
        assert_eq!(percent_decode("%", true), "%");
        assert_eq!(percent_decode("%ff", true), "\u{fffd}");
    }

    #[test]
    fn pairs_and_repeats() {
        let pairs = decode_pairs("a=1&b=x%20y&&c&a=2&a=3&d=");
        assert_eq!(pairs.len(), 6);
        let v = Value::Object(pairs_to_json(pairs));
        assert_eq!(
            v,
            serde_json::json!({"a": ["1", "2", "3"], "b": "x y", "c": "", "d": ""})
        );
    }
}
