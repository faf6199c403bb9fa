//! `grpc: { reflection: HOST:PORT }`: the plan's descriptors fetched from the server, once,
//! when the plan loads (`section.rs` calls [`fetch`], and its errors point at the plan's
//! `reflection:` line).
//!
//! The standard protocol, `grpc.reflection.v1.ServerReflection/ServerReflectionInfo` (a
//! bidirectional stream; `v1alpha` when the server does not implement `v1`), over onrush's
//! own HTTP/2 client, in rounds on one connection: each round is one call that sends all its
//! requests, half-closes and reads every answer.
//!
//! 1. `list_services`: every service the server offers (but reflection itself);
//! 2. `file_containing_symbol` for each: the files that define them;
//! 3. `file_by_filename` for the imports of those files not yet fetched, until none is
//!    missing (a server may send a file's imports with it, or not: both work).

use std::collections::BTreeMap;

use crate::spec::ReflectionSource;
use onrush_http::{BodySink, ConnectOptions, Headers, Request, RequestBody};
use onrush_http2::{H2Connection, H2Settings};
use prost::Message;

use crate::codec::{decode_message, encode, parse_status, Deframer};

/// The services of each version of the protocol, newest first.
const SERVICES: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// Rounds of imports followed at most (a chain of imports this deep is not a real schema).
const MAX_ROUNDS: usize = 64;

/// The largest reflection response message accepted (a file descriptor set, in bytes).
const MAX_MESSAGE: usize = 64 << 20;

/// gRPC's UNIMPLEMENTED.
const UNIMPLEMENTED: u32 = 12;

#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(message, optional, tag = "2")]
    original_request: Option<ReflectionRequest>,
    #[prost(oneof = "Answer", tags = "4, 6, 7")]
    answer: Option<Answer>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Answer {
    #[prost(message, tag = "4")]
    Files(FileDescriptorResponse),
    #[prost(message, tag = "6")]
    Services(ListServiceResponse),
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    service: Vec<ServiceResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceResponse {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// What of a `google.protobuf.FileDescriptorProto` the fetch needs: its name and imports.
#[derive(Clone, PartialEq, Message)]
struct FileHead {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, repeated, tag = "3")]
    dependency: Vec<String>,
}

/// Fetches every service `source` lists, with the files they need, as serialized
/// `FileDescriptorProto`s. Runs on a thread of its own (with its own runtime), so it may be
/// called from anywhere, a runtime's thread included; the whole fetch is bounded by
/// `source.timeout`.
pub fn fetch(source: &ReflectionSource) -> Result<Vec<Vec<u8>>, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async {
                match tokio::time::timeout(source.timeout, fetch_files(source)).await {
                    Ok(r) => r,
                    Err(_) => Err(format!(
                        "no complete answer within {:?} (the plan's http.timeout)",
                        source.timeout
                    )),
                }
            })
        })
        .join()
        .unwrap_or_else(|_| Err("the reflection client failed".to_string()))
    })
}

async fn fetch_files(source: &ReflectionSource) -> Result<Vec<Vec<u8>>, String> {
    let addr = onrush_protocol::resolve_host("grpc", &source.host, source.port, None)
        .map_err(|e| format!("{e:#}"))?;
    let mut client = Client {
        conn: connect(source, addr).await?,
        authority: format!("{}:{}", source.host, source.port).into_bytes(),
        service: None,
    };
    let services: Vec<String> = client
        .round(vec![Ask::ListServices("*".to_string())])
        .await?
        .into_iter()
        .flat_map(|a| match a {
            Answer::Services(list) => list.service.into_iter().map(|s| s.name).collect(),
            _ => Vec::new(),
        })
        .filter(|name| !name.starts_with("grpc.reflection."))
        .collect();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut asks: Vec<Ask> = services
        .iter()
        .map(|s| Ask::FileContainingSymbol(s.clone()))
        .collect();
    for _ in 0..MAX_ROUNDS {
        if asks.is_empty() {
            return Ok(files.into_values().collect());
        }
        for answer in client.round(std::mem::take(&mut asks)).await? {
            let Answer::Files(got) = answer else {
                continue;
            };
            for bytes in got.file_descriptor_proto {
                let head = FileHead::decode(&bytes[..])
                    .map_err(|e| format!("a file descriptor it sent is not protobuf: {e}"))?;
                files.entry(head.name).or_insert(bytes);
            }
        }
        // The imports of every file, fetched or not yet.
        let mut missing: Vec<String> = Vec::new();
        for bytes in files.values() {
            let head = FileHead::decode(&bytes[..]).expect("decoded above");
            for dep in head.dependency {
                if !files.contains_key(&dep) && !missing.contains(&dep) {
                    missing.push(dep);
                }
            }
        }
        asks = missing.into_iter().map(Ask::FileByFilename).collect();
    }
    Err(format!(
        "imports still missing after {MAX_ROUNDS} rounds of file_by_filename"
    ))
}

/// Opens the connection: h2c, or TLS (the plan's `http.tls`, ALPN `h2`).
async fn connect(
    source: &ReflectionSource,
    addr: std::net::SocketAddr,
) -> Result<H2Connection, String> {
    let opts = ConnectOptions::default();
    let settings = H2Settings::default();
    let authority = format!("{}:{}", source.host, source.port);
    if !source.tls {
        return onrush_http2::connect_h2c(addr, &opts, authority.as_bytes(), &settings)
            .await
            .map_err(|e| e.to_string());
    }
    let mut options = onrush_proto_http::tls_options(&source.tls_settings);
    options.alpn = vec![b"h2".to_vec()];
    let client = onrush_http::TlsClient::new(&options).map_err(|e| format!("http.tls: {e}"))?;
    let session = client.session(
        onrush_proto_http::session_mode(source.tls_settings.session),
        1,
    );
    let (stream, _, _) = onrush_http::connect_tls_stream(addr, &opts, &session, &source.host)
        .await
        .map_err(|e| e.to_string())?;
    if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Err(format!("{addr} did not choose HTTP/2 (ALPN h2) over TLS"));
    }
    onrush_http2::handshake(
        stream,
        http::uri::Scheme::HTTPS,
        authority.as_bytes(),
        &settings,
    )
    .await
    .map_err(|e| e.to_string())
}

struct Client {
    conn: H2Connection,
    authority: Vec<u8>,
    /// The version of the protocol the server answered, once known.
    service: Option<&'static str>,
}

impl Client {
    /// One call: every request of `asks`, then every answer; an error answer fails the fetch.
    async fn round(&mut self, asks: Vec<Ask>) -> Result<Vec<Answer>, String> {
        let mut body = Vec::new();
        for ask in asks {
            let req = ReflectionRequest {
                host: String::new(),
                ask: Some(ask),
            };
            encode(&mut body, &req.encode_to_vec(), false);
        }
        let candidates: Vec<&'static str> = match self.service {
            Some(s) => vec![s],
            None => SERVICES.to_vec(),
        };
        let mut reply = Reply::default();
        for service in candidates {
            reply = self.call(service, &body).await?;
            if reply.status == 200 && reply.grpc_status == Some(UNIMPLEMENTED) {
                continue;
            }
            self.service = Some(service);
            break;
        }
        if reply.status != 200 {
            return Err(format!(
                "HTTP status {} to the reflection call (not a gRPC server?)",
                reply.status
            ));
        }
        match reply.grpc_status {
            Some(0) => {}
            Some(UNIMPLEMENTED) => {
                return Err(format!(
                    "the server does not serve reflection ({} and v1alpha: UNIMPLEMENTED{})",
                    SERVICES[0],
                    message_suffix(&reply.grpc_message)
                ))
            }
            Some(code) => {
                return Err(format!(
                    "the reflection call failed with gRPC status {code}{}",
                    message_suffix(&reply.grpc_message)
                ))
            }
            None => return Err("the reflection call ended without a grpc-status".to_string()),
        }
        if let Some(e) = reply.error {
            return Err(e);
        }
        let mut answers = Vec::with_capacity(reply.messages.len());
        for m in reply.messages {
            let resp = ReflectionResponse::decode(&m[..])
                .map_err(|e| format!("a reflection answer is not protobuf: {e}"))?;
            match resp.answer {
                Some(Answer::Error(e)) => {
                    let asked = match resp.original_request.and_then(|r| r.ask) {
                        Some(Ask::FileContainingSymbol(s)) => format!(" for the symbol {s}"),
                        Some(Ask::FileByFilename(f)) => format!(" for the file {f}"),
                        _ => String::new(),
                    };
                    return Err(format!(
                        "the server answered{asked}: {} (code {})",
                        e.error_message, e.error_code
                    ));
                }
                Some(a) => answers.push(a),
                None => {}
            }
        }
        Ok(answers)
    }

    async fn call(&mut self, service: &str, body: &[u8]) -> Result<Reply, String> {
        let path = format!("/{service}/ServerReflectionInfo");
        let req = Request {
            method: "POST",
            target: path.as_bytes(),
            host: &self.authority,
            headers:
                b"content-type: application/grpc\r\nte: trailers\r\nuser-agent: onrush-grpc\r\n",
            body: RequestBody::Bytes(body),
            close: false,
        };
        let mut reply = Reply::default();
        reply.deframer.reset(MAX_MESSAGE);
        self.conn
            .send(&req, &mut reply)
            .await
            .map_err(|e| format!("the reflection call failed: {e}"))?;
        Ok(reply)
    }
}

fn message_suffix(m: &str) -> String {
    if m.is_empty() {
        String::new()
    } else {
        format!(": {m}")
    }
}

/// A reflection call's response: its messages, whole.
#[derive(Default)]
struct Reply {
    status: u16,
    grpc_status: Option<u32>,
    grpc_message: String,
    deframer: Deframer,
    messages: Vec<Vec<u8>>,
    error: Option<String>,
}

impl Reply {
    fn fields(&mut self, headers: &Headers<'_>) {
        for (name, value) in headers.iter() {
            if name.eq_ignore_ascii_case(b"grpc-status") {
                self.grpc_status = Some(parse_status(value).unwrap_or(2));
            } else if name.eq_ignore_ascii_case(b"grpc-message") {
                self.grpc_message = decode_message(value);
            } else if name.eq_ignore_ascii_case(b"grpc-encoding") {
                self.deframer.gzip = value.eq_ignore_ascii_case(b"gzip");
            }
        }
    }
}

impl BodySink for Reply {
    fn data(&mut self, chunk: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let Reply {
            deframer, messages, ..
        } = self;
        if let Err(e) = deframer.push(chunk, |m| messages.push(m.to_vec())) {
            self.error = Some(format!("a malformed reflection answer: {e:?}"));
        }
    }

    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        self.status = status;
        self.fields(headers);
    }

    fn trailers(&mut self, headers: &Headers<'_>) {
        self.fields(headers);
    }

    fn end(&mut self) {
        if self.error.is_none() && self.deframer.finish().is_err() {
            self.error = Some("a reflection answer ended mid-message".to_string());
        }
    }
}
