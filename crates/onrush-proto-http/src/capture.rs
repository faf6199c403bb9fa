//! What is kept of a response while it streams in: the head when asked (Set-Cookie always),
//! the body up to a limit, a digest of the whole body. Everything else is counted, not kept.

use std::ops::Range;

use onrush_http1::{BodySink, Headers};
use onrush_plan::HashAlgorithm;
use sha2::Digest;

use crate::step::HttpStep;

/// What is kept of the current response.
#[derive(Default)]
pub(crate) struct Capture {
    keep_headers: bool,
    keep_body: bool,
    limit: usize,
    pub(crate) status: u16,
    /// Header names (lower case) and values, concatenated; `headers` indexes it.
    pub(crate) head: Vec<u8>,
    pub(crate) headers: Vec<(Range<usize>, Range<usize>)>,
    pub(crate) body: Vec<u8>,
    pub(crate) size: u64,
    hasher: Option<Hasher>,
}

enum Hasher {
    Md5(md5::Md5),
    Sha256(sha2::Sha256),
}

impl Capture {
    pub(crate) fn reset(&mut self, step: &HttpStep) {
        self.keep_headers = step.keep_headers;
        self.keep_body = step.keep_body;
        self.limit = step.body_limit;
        self.status = 0;
        self.head.clear();
        self.headers.clear();
        self.body.clear();
        self.size = 0;
        // Only when a digest is asked for or was: assigning the `Option<Hasher>` (~200 bytes,
        // built on the stack, then moved in) cost ~50 instructions per request even as `None`.
        if step.hash.is_some() || self.hasher.is_some() {
            self.hasher = step.hash.map(|h| match h {
                HashAlgorithm::Md5 => Hasher::Md5(md5::Md5::new()),
                HashAlgorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            });
        }
    }

    fn push_header(&mut self, name: &[u8], value: &[u8]) {
        let n = self.head.len();
        self.head.extend(name.iter().map(u8::to_ascii_lowercase));
        let v = self.head.len();
        self.head.extend_from_slice(value);
        self.headers.push((n..v, v..self.head.len()));
    }

    pub(crate) fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| &self.head[n.clone()] == name.as_bytes())
            .map(|(_, v)| &self.head[v.clone()])
    }

    pub(crate) fn hash_hex(&mut self) -> Option<String> {
        let digest: Vec<u8> = match self.hasher.take()? {
            Hasher::Md5(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        };
        Some(digest.iter().map(|b| format!("{b:02x}")).collect())
    }
}

impl BodySink for Capture {
    #[inline]
    fn data(&mut self, chunk: &[u8]) {
        self.size += chunk.len() as u64;
        if self.keep_body && self.body.len() < self.limit {
            let take = (self.limit - self.body.len()).min(chunk.len());
            self.body.extend_from_slice(&chunk[..take]);
        }
        match &mut self.hasher {
            Some(Hasher::Md5(h)) => h.update(chunk),
            Some(Hasher::Sha256(h)) => h.update(chunk),
            None => {}
        }
    }

    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        self.status = status;
        self.head.clear();
        self.headers.clear();
        // Set-Cookie is always kept (the cookie jar reads it); everything only when asked.
        for (name, value) in headers.iter() {
            if self.keep_headers || name.eq_ignore_ascii_case(b"set-cookie") {
                self.push_header(name, value);
            }
        }
    }
}
