//! Sans-I/O codec for Redis replies (RESP2 and RESP3) and commands.
//!
//! The caller owns the socket and the buffer: it appends received bytes, calls
//! [`scan`] until it returns a [`Frame`], handles `buf[..frame.len]` and drops
//! those bytes. `scan` only validates and measures, so it never allocates;
//! [`write_json`] renders a reply that `scan` accepted.
//!
//! JSON mapping used by [`write_json`]:
//!
//! | RESP type                                   | JSON                                         |
//! |---------------------------------------------|----------------------------------------------|
//! | `+` simple, `$` bulk, `=` verbatim string   | string (verbatim without its `txt:` prefix)  |
//! | `:` integer                                 | number                                       |
//! | `(` big number                              | string of its digits                         |
//! | `,` double                                  | number (shortest exact form: `,3` → `3.0`, `,1e300` → `1e300`), or the strings `"inf"`, `"-inf"`, `"nan"` |
//! | `_`, `$-1`, `*-1` null                      | `null`                                       |
//! | `#` boolean                                 | `true` / `false`                             |
//! | `*` array, `~` set, `>` push                | array                                        |
//! | `%` map                                     | object; a key that is not a string becomes a string holding its JSON text (`1` → `"1"`) |
//! | `-` error, `!` blob error (any level)       | `{"error": "TEXT"}`                          |
//! | `\|` attribute                              | omitted; the reply it annotates is written   |
//!
//! Text that is not UTF-8 is replaced lossily (U+FFFD); control characters are
//! escaped. RESP3 streamed aggregates/strings (`?` lengths) are rejected as
//! malformed: Redis never sends them to clients.

use std::io::Write as _;
use std::ops::Range;

/// Hard bound on nesting, whatever [`Limits::max_depth`] says: `scan` keeps its
/// stack in a fixed array so that it never allocates.
const STACK_CAP: usize = 128;
/// Longest line holding a length, integer, boolean or null: an i64 needs 20
/// bytes, so a peer that sends more without CRLF is broken, not slow.
const NUM_LINE: usize = 32;

/// Limits that keep a reply's memory bounded (a bulk string or aggregate beyond them is an error, not an allocation).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Longest bulk/blob/verbatim string, and longest simple line.
    pub max_bulk: usize,
    /// Most children one aggregate may declare (a map's count is its pairs).
    pub max_elements: usize,
    /// Most aggregates open at once (a flat array is depth 1); capped at 128.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        // 512 MiB is Redis's own proto-max-bulk-len default.
        Limits {
            max_bulk: 512 << 20,
            max_elements: 1 << 20,
            max_depth: 32,
        }
    }
}

/// Appends one command as a RESP array of bulk strings (what every Redis client sends).
pub fn encode_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    // One reservation up front: each arg costs its bytes plus a `$N\r\n` header and CRLF.
    out.reserve(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    encode_command_iter(out, args.iter().copied());
}

/// Same, for args given as an iterator of byte slices (so callers can render into one buffer and pass ranges).
///
/// The array header uses `args.len()`, so the iterator must report its length truthfully.
pub fn encode_command_iter<'a, I: ExactSizeIterator<Item = &'a [u8]>>(out: &mut Vec<u8>, args: I) {
    push_array(out, args.len());
    for arg in args {
        push_bulk(out, arg);
    }
}

/// Appends the header of an array of `n` elements (`*N\r\n`): a command's first line.
pub fn push_array(out: &mut Vec<u8>, n: usize) {
    push_header(out, b'*', n);
}

/// Appends one bulk string (`$LEN\r\nBYTES\r\n`): a command's argument.
pub fn push_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    push_header(out, b'$', bytes.len());
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Writes `<tag><n>\r\n` without going through `fmt`, which is slow for this.
fn push_header(out: &mut Vec<u8>, tag: u8, n: usize) {
    out.push(tag);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// One complete reply found at the start of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Bytes of the whole reply, attributes that precede it included.
    pub len: usize,
    /// For a top-level error reply (`-` or `!`): where its text is in the buffer.
    pub error: Option<Range<usize>>,
}

/// Why a buffer does not start with a valid reply; `offset` is where the offending element starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RespError {
    Malformed { offset: usize, what: &'static str },
    TooLarge { offset: usize, what: &'static str },
    TooDeep { offset: usize },
}

impl std::fmt::Display for RespError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Malformed { offset, what } => write!(f, "malformed RESP at {offset}: {what}"),
            Self::TooLarge { offset, what } => write!(f, "RESP {what} over limit at {offset}"),
            Self::TooDeep { offset } => write!(f, "RESP nesting over limit at {offset}"),
        }
    }
}

impl std::error::Error for RespError {}

/// Finds the end of the first complete reply in `buf` without allocating: Ok(None) when more bytes are needed.
///
/// Every prefix of a valid reply gives Ok(None). An error means the connection
/// is unusable: RESP has no way to resynchronise.
pub fn scan(buf: &[u8], limits: &Limits) -> Result<Option<Frame>, RespError> {
    match scan_frame(buf, limits) {
        Ok(frame) => Ok(Some(frame)),
        Err(Stop::More) => Ok(None),
        Err(Stop::Bad(e)) => Err(e),
    }
}

/// Why scanning stopped short of a frame: lets `?` carry "need more bytes" as well as errors.
enum Stop {
    More,
    Bad(RespError),
}

fn malformed(offset: usize, what: &'static str) -> Stop {
    Stop::Bad(RespError::Malformed { offset, what })
}

fn too_large(offset: usize, what: &'static str) -> Stop {
    Stop::Bad(RespError::TooLarge { offset, what })
}

fn scan_frame(buf: &[u8], limits: &Limits) -> Result<Frame, Stop> {
    let max_depth = limits.max_depth.min(STACK_CAP);
    // Iterative, not recursive, so hostile nesting costs no call stack. Per open
    // aggregate: how many children are still missing, and (bit in `attr`) whether
    // it is an attribute, which is not one of its parent's children.
    let mut left = [0usize; STACK_CAP];
    let (mut attr, mut depth, mut pos, mut error) = (0u128, 0, 0, None);
    loop {
        let start = pos;
        let tag = *buf.get(pos).ok_or(Stop::More)?;
        // (children, is_attribute) of an aggregate header; scalars give (0, false).
        let (n, is_attr) = match tag {
            b'+' | b'-' | b'(' | b',' | b':' | b'#' | b'_' => {
                let text_line = matches!(tag, b'+' | b'-' | b'(' | b',');
                let cap = if text_line { limits.max_bulk } else { NUM_LINE };
                let cr = find_line(buf, start, cap)?;
                let text = &buf[start + 1..cr];
                let (ok, what) = match tag {
                    b'(' => (is_big_number(text), "invalid big number"),
                    b',' => (parse_double(text).is_some(), "invalid double"),
                    b':' => (parse_i64(text).is_some(), "invalid integer"),
                    b'#' => (text == b"t" || text == b"f", "invalid boolean"),
                    b'_' => (text.is_empty(), "invalid null"),
                    _ => (true, ""),
                };
                if !ok {
                    return Err(malformed(start, what));
                }
                if tag == b'-' && depth == 0 {
                    error = Some(start + 1..cr);
                }
                pos = cr + 2;
                (0, false)
            }
            b'$' | b'!' | b'=' => {
                let (len, after) = read_len(buf, start, tag == b'$', limits.max_bulk)?;
                pos = after;
                if let Some(n) = len {
                    // Saturating: an end past usize::MAX is simply never in the buffer.
                    pos = after.saturating_add(n).saturating_add(2);
                    let (text, crlf) = buf.get(after..pos).ok_or(Stop::More)?.split_at(n);
                    if crlf != b"\r\n" {
                        return Err(malformed(start, "bulk string without CRLF"));
                    }
                    // write_json strips the format prefix ("txt:"), so it must be there.
                    if tag == b'=' && text.get(3) != Some(&b':') {
                        return Err(malformed(start, "verbatim string without format"));
                    }
                    if tag == b'!' && depth == 0 {
                        error = Some(after..after + n);
                    }
                }
                (0, false)
            }
            b'*' | b'%' | b'~' | b'>' | b'|' => {
                let (len, after) = read_len(buf, start, tag == b'*', limits.max_elements)?;
                pos = after;
                let per_entry = if matches!(tag, b'%' | b'|') { 2 } else { 1 };
                // Saturating: so many children could never all arrive anyway.
                (len.unwrap_or(0).saturating_mul(per_entry), tag == b'|')
            }
            _ => return Err(malformed(start, "unknown type byte")),
        };
        if n > 0 {
            if depth >= max_depth {
                return Err(Stop::Bad(RespError::TooDeep { offset: start }));
            }
            left[depth] = n;
            attr = (attr & !(1 << depth)) | (u128::from(is_attr) << depth);
            depth += 1;
            continue;
        }
        if is_attr {
            continue; // an empty attribute: the reply it annotates is still to come
        }
        // A value is complete: count it in the enclosing aggregates, closing each one it fills.
        loop {
            if depth == 0 {
                return Ok(Frame { len: pos, error });
            }
            left[depth - 1] -= 1;
            if left[depth - 1] > 0 {
                break;
            }
            depth -= 1;
            if attr & (1 << depth) != 0 {
                break; // a finished attribute annotates the next value; it is not one itself
            }
        }
    }
}

/// Finds the CR ending the line after the type byte at `start`. A line longer
/// than `cap` fails rather than waits, so a peer that never sends CRLF is not
/// buffered forever: a number that long is malformed, a text line over the limit.
fn find_line(buf: &[u8], start: usize, cap: usize) -> Result<usize, Stop> {
    let from = start + 1;
    let end = from.saturating_add(cap).saturating_add(1).min(buf.len());
    let Some(i) = memchr::memchr2(b'\r', b'\n', &buf[from..end]) else {
        return Err(match end - from > cap {
            false => Stop::More,
            true if cap == NUM_LINE => malformed(start, "number too long"),
            true => too_large(start, "line"),
        });
    };
    match (buf[from + i], buf.get(from + i + 1)) {
        (b'\r', Some(b'\n')) => Ok(from + i),
        (b'\r', None) => Err(Stop::More),
        _ => Err(malformed(start, "CR and LF not paired")),
    }
}

/// Reads the length after the type byte at `start`: None is the `-1` null
/// (only where `null_ok`); also returns where the payload starts.
fn read_len(
    buf: &[u8],
    start: usize,
    null_ok: bool,
    max: usize,
) -> Result<(Option<usize>, usize), Stop> {
    let cr = find_line(buf, start, NUM_LINE)?;
    let n = parse_i64(&buf[start + 1..cr]).ok_or_else(|| malformed(start, "invalid length"))?;
    if n == -1 && null_ok {
        return Ok((None, cr + 2));
    }
    let n = usize::try_from(n).map_err(|_| malformed(start, "negative length"))?;
    if n > max {
        let bulk = matches!(buf[start], b'$' | b'!' | b'=');
        let what = if bulk { "bulk string" } else { "aggregate" };
        return Err(too_large(start, what));
    }
    Ok((Some(n), cr + 2))
}

/// Strict decimal i64 (no overflow, at least one digit).
fn parse_i64(s: &[u8]) -> Option<i64> {
    // Rust's parser checks all that but also takes a leading `+`, which RESP does not.
    if s.first() == Some(&b'+') {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn is_big_number(s: &[u8]) -> bool {
    let digits = s.strip_prefix(b"-").unwrap_or(s);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// Accepts what Rust's float parser accepts (incl. `inf`, `-inf`, `nan`), without allocating.
fn parse_double(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Writes one complete reply (`reply` is exactly a frame found by `scan`) as JSON text to `out`.
///
/// Bytes after the first reply are ignored. Input that `scan` would not accept
/// gives `null` rather than a panic or half-written JSON.
pub fn write_json(reply: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    if json_value(reply, &mut 0, out, 0).is_none() {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

/// The first word of an error reply's text (`ERR`, `WRONGTYPE`, `NOAUTH`, `MOVED` ...), for classifying failures.
pub fn error_kind(text: &[u8]) -> &[u8] {
    let end = text.iter().position(u8::is_ascii_whitespace);
    &text[..end.unwrap_or(text.len())]
}

/// Renders the value at `*pos` and moves past it; None if the bytes are not a valid reply.
fn json_value(b: &[u8], pos: &mut usize, out: &mut Vec<u8>, depth: usize) -> Option<()> {
    // Recursion is fine here: the reply was scanned, and this cap stops garbage input.
    if depth > STACK_CAP {
        return None;
    }
    let mut tag = *b.get(*pos)?;
    *pos += 1;
    // JSON has no place for attributes: render them to check them, then drop the text.
    while tag == b'|' {
        let n = take_count(b, pos, false)??;
        let mark = out.len();
        for _ in 0..n.checked_mul(2)? {
            json_value(b, pos, out, depth + 1)?;
        }
        out.truncate(mark);
        tag = *b.get(*pos)?;
        *pos += 1;
    }
    match tag {
        b'+' | b'(' => json_str(take_line(b, pos)?, out),
        b'-' => json_error(take_line(b, pos)?, out),
        b':' => {
            let s = take_line(b, pos)?;
            parse_i64(s)?;
            out.extend_from_slice(s);
        }
        b',' => json_double(take_line(b, pos)?, out)?,
        b'#' => match take_line(b, pos)? {
            b"t" => out.extend_from_slice(b"true"),
            b"f" => out.extend_from_slice(b"false"),
            _ => return None,
        },
        b'_' => {
            take_line(b, pos)?;
            out.extend_from_slice(b"null");
        }
        b'$' | b'!' | b'=' => {
            let Some(n) = take_count(b, pos, tag == b'$')? else {
                out.extend_from_slice(b"null");
                return Some(());
            };
            let s = b.get(*pos..pos.checked_add(n)?)?;
            if b.get(*pos + n..*pos + n + 2)? != b"\r\n" {
                return None;
            }
            *pos += n + 2;
            match tag {
                b'$' => json_str(s, out),
                b'!' => json_error(s, out),
                _ => json_str(s.get(4..)?, out),
            }
        }
        b'*' | b'~' | b'>' | b'%' => {
            let Some(n) = take_count(b, pos, tag == b'*')? else {
                out.extend_from_slice(b"null");
                return Some(());
            };
            let map = tag == b'%';
            out.push(if map { b'{' } else { b'[' });
            // Each child consumes at least one byte, so a lying count ends at the buffer's end.
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                if map {
                    json_key(b, pos, out, depth + 1)?;
                    out.push(b':');
                }
                json_value(b, pos, out, depth + 1)?;
            }
            out.push(if map { b'}' } else { b']' });
        }
        _ => return None,
    }
    Some(())
}

/// JSON keys must be strings: a key whose JSON is not a string is quoted as text.
fn json_key(b: &[u8], pos: &mut usize, out: &mut Vec<u8>, depth: usize) -> Option<()> {
    let mark = out.len();
    json_value(b, pos, out, depth)?;
    if out.get(mark) != Some(&b'"') {
        let text = out.split_off(mark); // rare (Redis keys are strings), so allocating is fine
        json_str(&text, out);
    }
    Some(())
}

/// The rest of the line at `*pos`, moving past its CRLF.
fn take_line<'a>(b: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let rest = b.get(*pos..)?;
    let i = memchr::memchr(b'\r', rest)?;
    if rest.get(i + 1) != Some(&b'\n') {
        return None;
    }
    *pos += i + 2;
    Some(&rest[..i])
}

/// A length line: Some(None) is the `-1` null where `null_ok`.
fn take_count(b: &[u8], pos: &mut usize, null_ok: bool) -> Option<Option<usize>> {
    match parse_i64(take_line(b, pos)?)? {
        -1 if null_ok => Some(None),
        n => usize::try_from(n).ok().map(Some),
    }
}

fn json_double(s: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let v = parse_double(s)?;
    if v.is_nan() {
        out.extend_from_slice(b"\"nan\"");
    } else if v.is_infinite() {
        let text: &[u8] = if v > 0.0 { b"\"inf\"" } else { b"\"-inf\"" };
        out.extend_from_slice(text);
    } else {
        // Debug is the shortest text that reads back as `v`, and switches to
        // exponent form for huge or tiny values: always a valid JSON number.
        write!(out, "{v:?}").ok()?;
    }
    Some(())
}

fn json_error(text: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"error\":");
    json_str(text, out);
    out.push(b'}');
}

/// A JSON string: invalid UTF-8 becomes U+FFFD (as `from_utf8_lossy`, without its allocation).
fn json_str(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for chunk in s.utf8_chunks() {
        escape_into(chunk.valid().as_bytes(), out);
        if !chunk.invalid().is_empty() {
            out.extend_from_slice("\u{FFFD}".as_bytes());
        }
    }
    out.push(b'"');
}

/// Copies `s`, escaping what JSON forbids raw in strings; runs of plain bytes are copied at once.
fn escape_into(s: &[u8], out: &mut Vec<u8>) {
    let mut run = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&s[run..i]);
        if esc.is_empty() {
            _ = write!(out, "\\u{c:04x}"); // writing to a Vec cannot fail
        } else {
            out.extend_from_slice(esc);
        }
        run = i + 1;
    }
    out.extend_from_slice(&s[run..]);
}

#[cfg(test)]
#[path = "resp_tests.rs"]
mod tests;
