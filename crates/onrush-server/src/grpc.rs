//! gRPC on the plain port's HTTP/2 (h2c): the `helloworld.Greeter` service of
//! `examples/protos/greeter.proto`, its four methods (unary, server-streaming, client-streaming,
//! bidi), a status error on request, and delays.
//!
//! Served by hyper's HTTP/2 like every other stream (no second HTTP/2 stack): a request whose
//! `content-type` is `application/grpc...` comes here instead of the HTTP routes. The messages
//! are two small protobuf types, decoded and encoded by hand (a string and three varints), so
//! the server needs no protobuf library. Each call is a task that reads the request messages
//! and sends reply frames, then the trailers, through a channel the response body drains: the
//! same code serves all four shapes, and a bidi reply goes out as its request comes.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response};
use tokio::sync::mpsc;

use crate::body::ResponseBody;
use crate::stats::{Event, Shared};

/// The service's path prefix (`/package.Service/`).
pub(crate) const SERVICE: &str = "/helloworld.Greeter/";

/// Replies of `SayHelloStream` when the request asks for none in particular.
const DEFAULT_COUNT: u32 = 3;
const MAX_COUNT: u32 = 10_000;
/// A request message larger than this ends the call with RESOURCE_EXHAUSTED.
const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// grpc-status codes used here (the gRPC spec's names).
const INVALID_ARGUMENT: u32 = 3;
const RESOURCE_EXHAUSTED: u32 = 8;
const UNIMPLEMENTED: u32 = 12;
const INTERNAL: u32 = 13;

/// Whether `req` is a gRPC call (by its content type, as gRPC servers route).
pub(crate) fn is_grpc(req: &Request<Incoming>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Unary,
    ServerStream,
    ClientStream,
    Bidi,
}

/// Starts a call: the response (headers now, messages and trailers as the call's task sends
/// them).
pub(crate) fn call(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    shard: usize,
) -> Response<ResponseBody> {
    shared.count(shard, Event::GrpcCall);
    let method = match req.uri().path().strip_prefix(SERVICE) {
        Some("SayHello") => Some(Method::Unary),
        Some("SayHelloStream") => Some(Method::ServerStream),
        Some("SayHelloClientStream") => Some(Method::ClientStream),
        Some("SayHelloBidi") => Some(Method::Bidi),
        _ => None,
    };
    let gzip = req
        .headers()
        .get("grpc-encoding")
        .is_some_and(|v| v.as_bytes() == b"gzip");
    let path = req.uri().path().to_owned();
    let (tx, rx) = mpsc::channel(16);
    let call = Call {
        tx,
        shared,
        shard,
        gzip,
    };
    let body = req.into_body();
    tokio::spawn(async move {
        let (status, message) = match method {
            Some(m) => match call.run(m, body).await {
                Ok(()) => (0, String::new()),
                Err(e) => e,
            },
            None => (
                UNIMPLEMENTED,
                format!("no method {path}; this server has {SERVICE}SayHello, SayHelloStream, SayHelloClientStream, SayHelloBidi"),
            ),
        };
        call.finish(status, &message).await;
    });
    let mut resp = Response::new(ResponseBody::channel(rx));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    resp.headers_mut()
        .insert("grpc-accept-encoding", HeaderValue::from_static("gzip"));
    resp
}

/// A call's status when it does not end with OK: (code, message).
type Status = (u32, String);

struct Call {
    tx: mpsc::Sender<Frame<Bytes>>,
    shared: Arc<Shared>,
    shard: usize,
    /// The client compresses its messages with gzip (`grpc-encoding: gzip`).
    gzip: bool,
}

/// The fields of a `HelloRequest`.
#[derive(Debug, Default, PartialEq, Eq)]
struct HelloRequest {
    name: String,
    count: u32,
    delay_ms: u32,
    error_code: u32,
}

impl Call {
    async fn run(&self, method: Method, body: Incoming) -> Result<(), Status> {
        let mut messages = Messages {
            body,
            buf: BytesMut::new(),
            gzip: self.gzip,
        };
        match method {
            Method::Unary | Method::ServerStream => {
                let Some(req) = self.next(&mut messages).await? else {
                    return Err((INTERNAL, "the call carried no request message".to_owned()));
                };
                let count = match method {
                    Method::Unary => 1,
                    _ if req.count == 0 => DEFAULT_COUNT,
                    _ if req.count > MAX_COUNT => {
                        return Err((
                            INVALID_ARGUMENT,
                            format!("count {} is over {MAX_COUNT}", req.count),
                        ))
                    }
                    _ => req.count,
                };
                // The rest of the request stream (normally nothing) is not read.
                for i in 0..count {
                    self.behave(&req).await?;
                    self.reply(&format!("Hello, {}!", req.name), i).await?;
                }
            }
            Method::ClientStream => {
                let mut names = Vec::new();
                while let Some(req) = self.next(&mut messages).await? {
                    self.behave(&req).await?;
                    names.push(req.name);
                }
                self.reply(&format!("Hello, {}!", names.join(", ")), names.len() as u32)
                    .await?;
            }
            Method::Bidi => {
                let mut i = 0;
                while let Some(req) = self.next(&mut messages).await? {
                    self.behave(&req).await?;
                    self.reply(&format!("Hello, {}!", req.name), i).await?;
                    i += 1;
                }
            }
        }
        Ok(())
    }

    async fn next(&self, messages: &mut Messages) -> Result<Option<HelloRequest>, Status> {
        let Some(bytes) = messages.next().await? else {
            return Ok(None);
        };
        self.shared.count(self.shard, Event::GrpcMessageIn);
        decode_request(&bytes)
            .map(Some)
            .map_err(|e| (INVALID_ARGUMENT, format!("bad HelloRequest: {e}")))
    }

    /// The request's delay, then its error if it asks for one.
    async fn behave(&self, req: &HelloRequest) -> Result<(), Status> {
        if req.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(req.delay_ms.into())).await;
        }
        match req.error_code {
            0 => Ok(()),
            code @ 1..=16 => Err((code, format!("error {code} asked for by {:?}", req.name))),
            code => Err((
                INVALID_ARGUMENT,
                format!("error_code {code} is not a gRPC status (1..16)"),
            )),
        }
    }

    async fn reply(&self, message: &str, index: u32) -> Result<(), Status> {
        let mut payload = Vec::with_capacity(message.len() + 16);
        if !message.is_empty() {
            payload.push(0x0a);
            put_varint(&mut payload, message.len() as u64);
            payload.extend_from_slice(message.as_bytes());
        }
        if index != 0 {
            payload.push(0x10);
            put_varint(&mut payload, index.into());
        }
        let mut frame = Vec::with_capacity(5 + payload.len());
        frame.push(0);
        frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        frame.extend_from_slice(&payload);
        self.shared.count(self.shard, Event::GrpcMessageOut);
        // The client went away: nothing more to do, and nobody to tell.
        self.tx
            .send(Frame::data(Bytes::from(frame)))
            .await
            .map_err(|_| (0, String::new()))
    }

    async fn finish(&self, status: u32, message: &str) {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from(status));
        if !message.is_empty() {
            // grpc-message is percent-encoded (gRPC's HTTP/2 protocol doc); ours are ASCII,
            // so only what a header value cannot hold is replaced.
            let text: String = message
                .chars()
                .map(|c| {
                    if c.is_ascii_graphic() || c == ' ' {
                        c
                    } else {
                        '?'
                    }
                })
                .collect();
            let text = text.replace('%', "%25");
            if let Ok(v) = HeaderValue::from_str(&text) {
                trailers.insert("grpc-message", v);
            }
        }
        let _ = self.tx.send(Frame::trailers(trailers)).await;
    }
}

/// The request's length-prefixed messages, one at a time.
struct Messages {
    body: Incoming,
    buf: BytesMut,
    gzip: bool,
}

impl Messages {
    async fn next(&mut self) -> Result<Option<Bytes>, Status> {
        loop {
            if self.buf.len() >= 5 {
                let flag = self.buf[0];
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]])
                    as usize;
                if len > MAX_MESSAGE {
                    return Err((
                        RESOURCE_EXHAUSTED,
                        format!("a message of {len} bytes is over {MAX_MESSAGE}"),
                    ));
                }
                if self.buf.len() >= 5 + len {
                    self.buf.advance(5);
                    let msg = self.buf.split_to(len).freeze();
                    return match flag {
                        0 => Ok(Some(msg)),
                        1 if self.gzip => gunzip(&msg).map(Some),
                        1 => Err((
                            INTERNAL,
                            "a compressed message without grpc-encoding".to_owned(),
                        )),
                        f => Err((INTERNAL, format!("bad message flag {f}"))),
                    };
                }
            }
            match self.body.frame().await {
                None => {
                    return if self.buf.is_empty() {
                        Ok(None)
                    } else {
                        Err((INTERNAL, "the request ended inside a message".to_owned()))
                    }
                }
                Some(Err(e)) => return Err((INTERNAL, format!("cannot read the request: {e}"))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}

fn gunzip(data: &[u8]) -> Result<Bytes, Status> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .take(MAX_MESSAGE as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| (INTERNAL, format!("bad gzip message: {e}")))?;
    if out.len() > MAX_MESSAGE {
        return Err((
            RESOURCE_EXHAUSTED,
            format!("a message is over {MAX_MESSAGE} bytes once inflated"),
        ));
    }
    Ok(Bytes::from(out))
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint(data: &mut &[u8]) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = data.split_first().ok_or("a varint is cut short")?;
        *data = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err("a varint is longer than 10 bytes".to_owned())
}

/// Decodes a `HelloRequest` (proto3: absent fields are zero; unknown fields are skipped).
fn decode_request(mut data: &[u8]) -> Result<HelloRequest, String> {
    let mut req = HelloRequest::default();
    while !data.is_empty() {
        let key = varint(&mut data)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                let v = varint(&mut data)?;
                let v32 =
                    u32::try_from(v).map_err(|_| format!("field {field}: {v} is not a uint32"))?;
                match field {
                    2 => req.count = v32,
                    3 => req.delay_ms = v32,
                    4 => req.error_code = v32,
                    1 => return Err("field 1 (name) must be a string".to_owned()),
                    _ => {}
                }
            }
            2 => {
                let len = varint(&mut data)? as usize;
                if len > data.len() {
                    return Err(format!(
                        "field {field}: {len} bytes announced, {} left",
                        data.len()
                    ));
                }
                let (value, rest) = data.split_at(len);
                data = rest;
                if field == 1 {
                    req.name = std::str::from_utf8(value)
                        .map_err(|_| "name is not UTF-8".to_owned())?
                        .to_owned();
                } else if matches!(field, 2..=4) {
                    return Err(format!("field {field} must be a varint"));
                }
            }
            1 => data = data.get(8..).ok_or("a fixed64 is cut short")?,
            5 => data = data.get(4..).ok_or("a fixed32 is cut short")?,
            w => return Err(format!("field {field}: unsupported wire type {w}")),
        }
    }
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_request_fields_decode() {
        // name "ab", count 5, delay_ms 300, an unknown field 9 (varint 1).
        let data = [0x0a, 2, b'a', b'b', 0x10, 5, 0x18, 0xac, 0x02, 0x48, 1];
        let req = decode_request(&data).unwrap();
        assert_eq!(
            req,
            HelloRequest {
                name: "ab".into(),
                count: 5,
                delay_ms: 300,
                error_code: 0
            }
        );
        assert!(decode_request(&[0x0a, 5, b'a']).is_err());
        assert!(decode_request(&[0x08, 1]).is_err());
    }
}
