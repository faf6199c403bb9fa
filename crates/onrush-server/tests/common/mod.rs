//! A deliberately plain HTTP/1.1 client over `std::net::TcpStream` for the tests: raw bytes in,
//! parsed responses out, so the tests see exactly what goes over the wire (framing headers,
//! chunked encoding, connection close) rather than what a client library makes of it.

#![allow(dead_code)]

pub mod h2client;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use onrush_server::{ServerConfig, ServerHandle};

/// Starts a server on 127.0.0.1 with a free port.
pub fn server(threads: usize) -> ServerHandle {
    onrush_server::start(ServerConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        threads,
    })
    .expect("server starts")
}

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body, unless the request asked to discard it (then empty; see `body_len`).
    pub body: Vec<u8>,
    pub body_len: u64,
    /// True when every body byte at offset i was `i % 256` (the `/bytes` pattern); not checked
    /// (false) when the body was discarded, to keep huge downloads fast in debug builds.
    pub pattern_ok: bool,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("utf-8 body")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

pub struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Client {
            reader: BufReader::with_capacity(256 * 1024, stream),
        }
    }

    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    /// Writes raw bytes (a request, or several pipelined ones).
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).expect("write");
    }

    /// Sends a request with a Content-Length body (none when `body` is empty and the method is
    /// GET or HEAD) and reads the response, keeping the body.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        self.send(method, path, headers, body);
        self.read_response(method == "HEAD", false)
    }

    pub fn get(&mut self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    /// GET whose body is only counted, not kept.
    pub fn get_discard(&mut self, path: &str) -> Response {
        self.send("GET", path, &[], b"");
        self.read_response(false, true)
    }

    pub fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (name, value) in headers {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
        let chunked = headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
        if !chunked && (!body.is_empty() || !matches!(method, "GET" | "HEAD")) {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        self.write_raw(&bytes);
    }

    /// Reads one response; `head` says the request was HEAD (no body whatever the headers).
    pub fn read_response(&mut self, head: bool, discard: bool) -> Response {
        let status_line = self.line();
        let mut parts = status_line.splitn(3, ' ');
        assert_eq!(
            parts.next(),
            Some("HTTP/1.1"),
            "status line {status_line:?}"
        );
        let status: u16 = parts.next().unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let line = self.line();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("header line");
            headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
        }
        let mut resp = Response {
            status,
            headers,
            body: Vec::new(),
            body_len: 0,
            pattern_ok: true,
        };
        if head || matches!(status, 100..=199 | 204 | 304) {
            return resp;
        }
        resp.pattern_ok = !discard;
        let mut sink = Sink {
            resp: &mut resp,
            discard,
        };
        let te = sink.resp.header("transfer-encoding").map(str::to_owned);
        let cl = sink
            .resp
            .header("content-length")
            .map(|v| v.parse::<u64>().unwrap());
        if te.is_some_and(|te| te.contains("chunked")) {
            loop {
                let size_line = self.line();
                let size = u64::from_str_radix(size_line.split(';').next().unwrap().trim(), 16)
                    .expect("chunk size");
                if size == 0 {
                    // Trailers (none expected) end with an empty line.
                    while !self.line().is_empty() {}
                    break;
                }
                self.copy(size, &mut sink);
                assert_eq!(self.line(), "", "CRLF after chunk");
            }
        } else if let Some(len) = cl {
            self.copy(len, &mut sink);
        } else {
            panic!("response without Content-Length or chunked encoding");
        }
        resp
    }

    /// True when the server closed the connection (EOF) before `timeout`.
    pub fn closed_by_server(&mut self, timeout: Duration) -> bool {
        self.stream().set_read_timeout(Some(timeout)).unwrap();
        let mut buf = [0u8; 1];
        matches!(self.reader.read(&mut buf), Ok(0))
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).expect("read line");
        assert!(n > 0, "connection closed while reading a line");
        line.trim_end_matches(['\r', '\n']).to_owned()
    }

    fn copy(&mut self, mut len: u64, sink: &mut Sink<'_>) {
        while len > 0 {
            let buf = self.reader.fill_buf().expect("read body");
            assert!(!buf.is_empty(), "connection closed inside a body");
            let n = buf.len().min(len as usize);
            sink.push(&buf[..n]);
            self.reader.consume(n);
            len -= n as u64;
        }
    }
}

struct Sink<'a> {
    resp: &'a mut Response,
    discard: bool,
}

impl Sink<'_> {
    fn push(&mut self, data: &[u8]) {
        let start = self.resp.body_len;
        if self.resp.pattern_ok {
            self.resp.pattern_ok = data
                .iter()
                .enumerate()
                .all(|(i, b)| *b == (start + i as u64) as u8);
        }
        self.resp.body_len += data.len() as u64;
        if !self.discard {
            self.resp.body.extend_from_slice(data);
        }
    }
}

/// The `/stats` numbers, read on a fresh connection (which `/stats` does not count).
pub fn stats(addr: SocketAddr) -> (u64, u64) {
    let v = Client::connect(addr).get("/stats").json();
    (
        v["requests"].as_u64().unwrap(),
        v["connections"].as_u64().unwrap(),
    )
}

/// Resident memory of this process, in KiB (Linux only; 0 elsewhere).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
