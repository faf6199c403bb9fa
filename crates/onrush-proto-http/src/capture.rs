//! What is kept of a response while it streams in: the head when asked (Set-Cookie always, a
//! redirect's Location when redirects are followed), the body up to a limit, a digest of the
//! whole body. Everything else is counted, not kept.

use std::ops::Range;

use onrush_http1::{BodySink, Headers};
use onrush_plan::HashAlgorithm;
use sha2::Digest;

use crate::redirect::is_redirect;
use crate::step::HttpStep;

/// What is kept of the current response.
#[derive(Default)]
pub(crate) struct Capture {
    keep_headers: bool,
    /// Keep `Alt-Svc` (the scenario's `version` is `auto`, which upgrades on it).
    keep_alt_svc: bool,
    /// Keep a redirect's `Location` (the step follows redirects).
    keep_location: bool,
    keep_body: bool,
    /// `--debug`: keep everything ([`keep_all`](Self::keep_all)).
    debug: bool,
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
    /// A capture that keeps every response's `Alt-Svc` when `alt_svc` (for `version: auto`).
    pub(crate) fn keeping_alt_svc(alt_svc: bool) -> Capture {
        Capture {
            keep_alt_svc: alt_svc,
            ..Capture::default()
        }
    }

    pub(crate) fn reset(&mut self, step: &HttpStep) {
        self.keep_headers = step.keep_headers || self.debug;
        self.keep_location = step.redirects > 0;
        self.keep_body = step.keep_body || self.debug;
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

    /// Keeps every header and the body up to the step's limit of every response from now on
    /// (`--debug`), whatever the step needs.
    pub(crate) fn keep_all(&mut self) {
        self.debug = true;
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
        if self.keep_headers {
            for (name, value) in headers.iter() {
                self.push_header(name, value);
            }
            return;
        }
        // Set-Cookie is always kept (the cookie jar reads it), a redirect's Location when the
        // step follows redirects (`follow` reads it); the rest only when a check or an
        // extractor asks (`keep_headers`). Lower-casing and copying every header of every
        // response to find a Location cost ~600 instructions per request of a step with
        // `redirects` (callgrind, docs/benchmarks.md): JMeter plans are imported with them.
        let location = self.keep_location && is_redirect(status);
        for (name, value) in headers.iter() {
            let keep = match name.len() {
                10 => name.eq_ignore_ascii_case(b"set-cookie"),
                8 => location && name.eq_ignore_ascii_case(b"location"),
                7 => self.keep_alt_svc && name.eq_ignore_ascii_case(b"alt-svc"),
                _ => false,
            };
            if keep {
                self.push_header(name, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(capture: &mut Capture, status: u16) -> Vec<(String, String)> {
        let raw = [
            httparse::Header {
                name: "Content-Type",
                value: b"text/plain",
            },
            httparse::Header {
                name: "Location",
                value: b"/next",
            },
            httparse::Header {
                name: "Set-Cookie",
                value: b"a=1",
            },
            httparse::Header {
                name: "Date",
                value: b"today",
            },
        ];
        capture.head(status, &Headers::new(&raw));
        capture
            .headers
            .iter()
            .map(|(n, v)| {
                let text = |r: &Range<usize>| {
                    String::from_utf8_lossy(&capture.head[r.clone()]).into_owned()
                };
                (text(n), text(v))
            })
            .collect()
    }

    fn pair(name: &str, value: &str) -> (String, String) {
        (name.to_string(), value.to_string())
    }

    #[test]
    fn only_set_cookie_is_kept_unless_more_is_asked() {
        let mut capture = Capture::default();
        assert_eq!(kept(&mut capture, 302), [pair("set-cookie", "a=1")]);
        assert_eq!(kept(&mut capture, 200), [pair("set-cookie", "a=1")]);
    }

    #[test]
    fn a_redirects_location_is_kept_when_redirects_are_followed() {
        let mut capture = Capture {
            keep_location: true,
            ..Capture::default()
        };
        for status in [301, 302, 303, 307, 308] {
            assert_eq!(
                kept(&mut capture, status),
                [pair("location", "/next"), pair("set-cookie", "a=1")],
                "{status}"
            );
            assert_eq!(capture.header("location"), Some(&b"/next"[..]));
        }
        // Not a redirect: its Location is not followed, so not kept.
        assert_eq!(kept(&mut capture, 201), [pair("set-cookie", "a=1")]);
    }

    #[test]
    fn every_header_is_kept_when_a_check_or_an_extractor_asks() {
        let mut capture = Capture {
            keep_headers: true,
            ..Capture::default()
        };
        assert_eq!(
            kept(&mut capture, 200),
            [
                pair("content-type", "text/plain"),
                pair("location", "/next"),
                pair("set-cookie", "a=1"),
                pair("date", "today"),
            ]
        );
    }
}
