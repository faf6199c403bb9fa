//! `multipart/form-data` request bodies (RFC 7578), built once and streamed for every request.
//!
//! [`Multipart::new`] lays the body out as segments: in-memory bytes (boundaries, part headers,
//! text fields, all coalesced) and files (path and the size read from their metadata then).
//! The `Content-Length` is known up front; at send time each file is opened, its size checked
//! against the one recorded (a changed file fails the request rather than send a wrong
//! length), and its bytes streamed through the connection's write buffer in 64 KiB reads.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::PathBuf;

/// One part of a [`Multipart`] body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// A form field: `Content-Disposition: form-data; name="name"`, the value as the content.
    Text {
        /// The field name.
        name: String,
        /// The field value (bytes, sent as they are).
        value: Vec<u8>,
    },
    /// A file field: `Content-Disposition: form-data; name="name"; filename="file_name"` and
    /// `Content-Type: content_type`, the content streamed from `path` at each send.
    File {
        /// The field name.
        name: String,
        /// The file name announced to the server.
        file_name: String,
        /// The part's Content-Type, e.g. `application/octet-stream` or `image/png`.
        content_type: String,
        /// The file on disk.
        path: PathBuf,
    },
}

/// One piece of a [`Multipart`] body, see [`Multipart::pieces`].
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    /// Bytes laid out when the body was built (boundaries, part heads, text values).
    Bytes(&'a [u8]),
    /// A file to stream, of the size it had when the body was built.
    File {
        /// The file on disk.
        path: &'a std::path::Path,
        /// Its size then.
        len: u64,
    },
}

#[derive(Debug, Clone)]
enum Segment {
    Bytes(Vec<u8>),
    File { path: PathBuf, len: u64 },
}

/// A `multipart/form-data` body: build once, send with `RequestBody::Multipart(&m)` as often as
/// needed (nothing is rebuilt or allocated per request).
#[derive(Debug, Clone)]
pub struct Multipart {
    boundary: String,
    /// `Content-Type: multipart/form-data; boundary=...\r\n`.
    content_type_line: Vec<u8>,
    segments: Vec<Segment>,
    len: u64,
}

impl Multipart {
    /// Lays out `parts` in order with a fresh random boundary (`onrush-` and 32 hex digits)
    /// that appears in no text value, name, file name or content type. Reads each file's size
    /// from its metadata.
    ///
    /// Errors (`InvalidInput`): a content type with CR, LF or NUL. Errors from the file system:
    /// a file that can't be read (its path is in the message) or is not a regular file.
    ///
    /// Names and file names are escaped as browsers do (WHATWG): `"` → `%22`, CR → `%0D`,
    /// LF → `%0A`.
    pub fn new(parts: Vec<Part>) -> io::Result<Multipart> {
        let sizes = check_parts(&parts)?;
        let boundary = loop {
            let b = random_boundary();
            if !clashes(&parts, &b) {
                break b;
            }
        };
        Ok(Self::layout(parts, boundary, &sizes))
    }

    /// Same as [`new`](Self::new) with a boundary chosen by the caller (tests, reproducible
    /// bodies). The boundary must be 1-70 characters of RFC 2046's set (letters, digits,
    /// `'()+_,-./:=?`) and appear in no text value, name, file name or content type, else
    /// `InvalidInput`.
    pub fn with_boundary(parts: Vec<Part>, boundary: &str) -> io::Result<Multipart> {
        let valid = !boundary.is_empty()
            && boundary.len() <= 70
            && boundary
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"'()+_,-./:=?".contains(&b));
        if !valid {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid multipart boundary {boundary:?}"),
            ));
        }
        if clashes(&parts, boundary) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the multipart boundary {boundary:?} appears in a part's text"),
            ));
        }
        let sizes = check_parts(&parts)?;
        Ok(Self::layout(parts, boundary.to_owned(), &sizes))
    }

    fn layout(parts: Vec<Part>, boundary: String, sizes: &[u64]) -> Multipart {
        let mut segments = Vec::new();
        let mut cur = Vec::new();
        let mut len = 0u64;
        let mut sizes = sizes.iter();
        for p in parts {
            cur.extend_from_slice(b"--");
            cur.extend_from_slice(boundary.as_bytes());
            cur.extend_from_slice(b"\r\nContent-Disposition: form-data; name=\"");
            match p {
                Part::Text { name, value } => {
                    escape_name(name.as_bytes(), &mut cur);
                    cur.extend_from_slice(b"\"\r\n\r\n");
                    cur.extend_from_slice(&value);
                    cur.extend_from_slice(b"\r\n");
                }
                Part::File {
                    name,
                    file_name,
                    content_type,
                    path,
                } => {
                    escape_name(name.as_bytes(), &mut cur);
                    cur.extend_from_slice(b"\"; filename=\"");
                    escape_name(file_name.as_bytes(), &mut cur);
                    cur.extend_from_slice(b"\"\r\nContent-Type: ");
                    cur.extend_from_slice(content_type.as_bytes());
                    cur.extend_from_slice(b"\r\n\r\n");
                    len += cur.len() as u64;
                    segments.push(Segment::Bytes(std::mem::take(&mut cur)));
                    let flen = *sizes.next().expect("one size per file part");
                    len += flen;
                    segments.push(Segment::File { path, len: flen });
                    cur.extend_from_slice(b"\r\n");
                }
            }
        }
        cur.extend_from_slice(b"--");
        cur.extend_from_slice(boundary.as_bytes());
        cur.extend_from_slice(b"--\r\n");
        len += cur.len() as u64;
        segments.push(Segment::Bytes(cur));
        let mut content_type_line = b"Content-Type: multipart/form-data; boundary=".to_vec();
        content_type_line.extend_from_slice(boundary.as_bytes());
        content_type_line.extend_from_slice(b"\r\n");
        Multipart {
            boundary,
            content_type_line,
            segments,
            len,
        }
    }

    /// The boundary (without the leading `--`).
    pub fn boundary(&self) -> &str {
        &self.boundary
    }

    /// The `Content-Type` header value: `multipart/form-data; boundary=...`.
    pub fn content_type(&self) -> &str {
        let line =
            &self.content_type_line["Content-Type: ".len()..self.content_type_line.len() - 2];
        std::str::from_utf8(line).expect("ASCII")
    }

    /// The body length in bytes, sent as `Content-Length` (file sizes as read by `new`).
    pub fn content_length(&self) -> u64 {
        self.len
    }

    /// The whole header line, `Content-Type: multipart/form-data; boundary=...\r\n`, laid out
    /// once so that an HTTP/1.1 head copies it without formatting.
    pub fn content_type_line(&self) -> &[u8] {
        &self.content_type_line
    }

    /// The body in order, as in-memory pieces and files to stream (through HTTP/1.1's write
    /// buffer, or as HTTP/2 DATA frames); their sizes add up to [`Multipart::content_length`].
    pub fn pieces(&self) -> impl Iterator<Item = Piece<'_>> {
        self.segments.iter().map(|s| match s {
            Segment::Bytes(b) => Piece::Bytes(b),
            Segment::File { path, len } => Piece::File { path, len: *len },
        })
    }
}

/// Checks content types and reads the file sizes, in order.
fn check_parts(parts: &[Part]) -> io::Result<Vec<u64>> {
    let mut sizes = Vec::new();
    for p in parts {
        if let Part::File {
            content_type, path, ..
        } = p
        {
            if content_type
                .bytes()
                .any(|b| b == b'\r' || b == b'\n' || b == 0)
            {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("multipart content type {content_type:?} contains CR, LF or NUL"),
                ));
            }
            let meta = std::fs::metadata(path).map_err(|e| {
                io::Error::new(e.kind(), format!("multipart file {}: {e}", path.display()))
            })?;
            if !meta.is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("multipart file {} is not a regular file", path.display()),
                ));
            }
            sizes.push(meta.len());
        }
    }
    Ok(sizes)
}

/// Whether `boundary` appears in any text the parts put in the body (file contents excepted).
fn clashes(parts: &[Part], boundary: &str) -> bool {
    let b = boundary.as_bytes();
    parts.iter().any(|p| match p {
        Part::Text { name, value } => contains(name.as_bytes(), b) || contains(value, b),
        Part::File {
            name,
            file_name,
            content_type,
            ..
        } => [name, file_name, content_type]
            .iter()
            .any(|s| contains(s.as_bytes(), b)),
    })
}

/// WHATWG multipart/form-data name escaping: `"`, CR and LF percent-encoded.
fn escape_name(s: &[u8], out: &mut Vec<u8>) {
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"%22"),
            b'\r' => out.extend_from_slice(b"%0D"),
            b'\n' => out.extend_from_slice(b"%0A"),
            _ => out.push(b),
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// `onrush-` and 32 hex digits from the standard library's randomly seeded hasher (128 bits:
/// a clash with file content is as likely as guessing a UUID).
fn random_boundary() -> String {
    use std::fmt::Write;
    let mut s = String::from("onrush-");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    for i in 0..2u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(nanos);
        h.write_u64(i);
        let _ = write!(s, "{:016x}", h.finish());
    }
    s
}
