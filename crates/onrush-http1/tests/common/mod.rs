//! A canned HTTP/1.1 "server" for the integration tests: it reads requests on 127.0.0.1 and
//! answers with exact byte sequences chosen by the test, so the framing is under control.
#![allow(dead_code)] // each test binary uses a different part

use std::io;
use std::net::SocketAddr;

use onrush_http1::{Request, RequestBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub async fn listener() -> (TcpListener, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    (l, addr)
}

/// Reads requests from one connection, keeping bytes beyond the current request.
pub struct Reader {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

/// A received request: its head (up to and including the blank line) and body.
pub struct Received {
    pub head: Vec<u8>,
    pub body_len: u64,
    /// FNV-1a of the body, so large uploads need not be kept.
    pub body_hash: u64,
}

impl Received {
    pub fn head_str(&self) -> String {
        String::from_utf8_lossy(&self.head).into_owned()
    }
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.head_str();
        head.split("\r\n").skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

pub fn fnv(hash: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *hash ^= u64::from(b);
        *hash = hash.wrapping_mul(0x100_0000_01b3);
    }
}

pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

pub fn fnv_of(bytes: &[u8]) -> u64 {
    let mut h = FNV_START;
    fnv(&mut h, bytes);
    h
}

impl Reader {
    pub fn new(stream: TcpStream) -> Self {
        Reader {
            stream,
            buf: Vec::new(),
        }
    }

    /// The next request, or None at EOF between requests.
    pub async fn request(&mut self) -> io::Result<Option<Received>> {
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                };
            }
            self.buf.extend_from_slice(&chunk[..n]);
        };
        let head: Vec<u8> = self.buf.drain(..head_end).collect();
        let mut r = Received {
            head,
            body_len: 0,
            body_hash: FNV_START,
        };
        let mut remaining: u64 = r.header("content-length").map_or(0, |v| v.parse().unwrap());
        let take = (remaining as usize).min(self.buf.len());
        fnv(&mut r.body_hash, &self.buf[..take]);
        self.buf.drain(..take);
        remaining -= take as u64;
        r.body_len = take as u64;
        let mut chunk = vec![0u8; 64 * 1024];
        while remaining > 0 {
            let want = (remaining as usize).min(chunk.len());
            let n = self.stream.read(&mut chunk[..want]).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            fnv(&mut r.body_hash, &chunk[..n]);
            remaining -= n as u64;
            r.body_len += n as u64;
        }
        Ok(Some(r))
    }

    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }
}

pub fn get<'a>(target: &'a [u8], host: &'a [u8]) -> Request<'a> {
    Request {
        method: "GET",
        target,
        host,
        headers: b"",
        body: RequestBody::Empty,
        close: false,
    }
}

pub const OK2: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
