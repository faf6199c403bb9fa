//! JSONPath: a lazy fast path over the raw bytes for simple paths, serde_json_path otherwise.
//!
//! A path is "simple" when every segment is a child segment with exactly one selector that is
//! a member name, a non-negative index or a wildcard (`$.a.b[0].c`, `$['x']`, `$.items[*].id`).
//! Such a path is evaluated over the body without building values: the evaluator walks into
//! the members/elements it needs and skips everything else with a byte scanner that only
//! tracks strings and bracket depth. Output values are produced exactly as the serde_json_path
//! fallback produces them (strings decoded, numbers/literals as serde_json prints them,
//! containers as compact serde_json text, object wildcards in serde_json's key order).
//!
//! Differences from the full parse, on documents that are not valid JSON or not I-JSON:
//! values located before a syntax error are still found (the fallback finds nothing), and
//! for a duplicated member name the first occurrence wins (serde_json keeps the last).

use std::ops::ControlFlow;

use memchr::memchr2;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    Name(Vec<u8>),
    Index(usize),
    Wild,
}

/// Parses a path already validated by serde_json_path; `None` if it is not simple.
pub fn simple_path(path: &str) -> Option<Vec<Seg>> {
    let s = path.as_bytes();
    if s.first() != Some(&b'$') {
        return None;
    }
    let mut i = 1;
    let mut segs = Vec::new();
    let ws = |i: &mut usize| {
        while *i < s.len() && matches!(s[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    loop {
        ws(&mut i);
        if i >= s.len() {
            return Some(segs);
        }
        match s[i] {
            b'.' => {
                i += 1;
                if s.get(i) == Some(&b'.') {
                    return None;
                }
                if s.get(i) == Some(&b'*') {
                    i += 1;
                    segs.push(Seg::Wild);
                    continue;
                }
                let st = i;
                while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_' || s[i] >= 0x80)
                {
                    i += 1;
                }
                if i == st {
                    return None;
                }
                segs.push(Seg::Name(s[st..i].to_vec()));
            }
            b'[' => {
                i += 1;
                ws(&mut i);
                let seg = match *s.get(i)? {
                    b'*' => {
                        i += 1;
                        Seg::Wild
                    }
                    q @ (b'\'' | b'"') => {
                        let st = i + 1;
                        let len = s[st..].iter().position(|&c| c == q || c == b'\\')?;
                        if s[st + len] != q {
                            return None;
                        }
                        i = st + len + 1;
                        Seg::Name(s[st..st + len].to_vec())
                    }
                    b'0'..=b'9' => {
                        let st = i;
                        while i < s.len() && s[i].is_ascii_digit() {
                            i += 1;
                        }
                        Seg::Index(std::str::from_utf8(&s[st..i]).ok()?.parse().ok()?)
                    }
                    _ => return None,
                };
                ws(&mut i);
                if s.get(i) != Some(&b']') {
                    return None;
                }
                i += 1;
                segs.push(seg);
            }
            _ => return None,
        }
    }
}

pub enum Stop {
    /// The caller asked to stop.
    Break,
    /// The document is not JSON where we looked.
    Invalid,
}

type R<T> = Result<T, Stop>;

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `i` at the opening quote; returns the position after the closing quote.
fn skip_string(b: &[u8], i: usize) -> R<usize> {
    let mut j = i + 1;
    // Keys and most values are short: look at a few bytes before paying for memchr's setup.
    let short_end = b.len().min(j + 24);
    while j < short_end {
        match b[j] {
            b'"' => return Ok(j + 1),
            b'\\' => break,
            _ => j += 1,
        }
    }
    loop {
        let p = memchr2(b'"', b'\\', b.get(j..).ok_or(Stop::Invalid)?).ok_or(Stop::Invalid)?;
        if b[j + p] == b'"' {
            return Ok(j + p + 1);
        }
        j += p + 2;
    }
}

/// Skips to just after the bracket closing the container that `j` is inside of.
fn skip_rest(b: &[u8], j: usize) -> R<usize> {
    scan_container(b, j, 1)
}

/// Byte classes for the container scanner: 0 other, 1 `"`, 2 `{`/`[`, 3 `}`/`]`, 4 `\\`.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = 1;
    t[b'{' as usize] = 2;
    t[b'[' as usize] = 2;
    t[b'}' as usize] = 3;
    t[b']' as usize] = 3;
    t[b'\\' as usize] = 4;
    t
};

/// From `j` inside a container nested `depth` deep, returns the position after the bracket
/// that closes it. One table lookup per byte (measured ~2x faster than jumping from string
/// to string with memchr on typical API documents, where strings are short).
fn scan_container(b: &[u8], j: usize, mut depth: usize) -> R<usize> {
    let mut in_str = false;
    let mut escaped = false;
    for (k, &c) in b.iter().enumerate().skip(j) {
        let class = CLASS[c as usize];
        if class == 0 {
            escaped = false;
            continue;
        }
        if in_str {
            if escaped {
                escaped = false;
            } else if class == 4 {
                escaped = true;
            } else if class == 1 {
                in_str = false;
            }
            continue;
        }
        match class {
            1 => in_str = true,
            2 => depth += 1,
            3 => {
                depth -= 1;
                if depth == 0 {
                    return Ok(k + 1);
                }
            }
            _ => {}
        }
    }
    Err(Stop::Invalid)
}

/// `i` at the first byte of a value; returns the position after it.
pub fn skip_value(b: &[u8], i: usize) -> R<usize> {
    match b.get(i).copied().ok_or(Stop::Invalid)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => scan_container(b, i + 1, 1),
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
            let mut j = i + 1;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            Ok(j)
        }
        _ => Err(Stop::Invalid),
    }
}

/// Lazy evaluator state.
pub struct Lazy<'b, 'f> {
    pub b: &'b [u8],
    pub segs: &'b [Seg],
    pub found: &'f mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    pub scratch: Vec<u8>,
}

impl Lazy<'_, '_> {
    pub fn run(&mut self) -> R<()> {
        let i = ws(self.b, 0);
        self.eval(i, 0, false).map(|_| ())
    }

    fn emit(&mut self, i: usize, end: usize) -> R<()> {
        let b = self.b;
        let raw = &b[i..end];
        self.scratch.clear();
        let out: &[u8] = match raw[0] {
            b'"' => {
                let inner = &raw[1..raw.len() - 1];
                if memchr::memchr(b'\\', inner).is_none() {
                    if std::str::from_utf8(inner).is_err() {
                        return Err(Stop::Invalid);
                    }
                    inner
                } else {
                    let s: String = serde_json::from_slice(raw).map_err(|_| Stop::Invalid)?;
                    self.scratch.extend_from_slice(s.as_bytes());
                    &self.scratch
                }
            }
            b'-' | b'0'..=b'9' => {
                let digits = if raw[0] == b'-' { &raw[1..] } else { raw };
                let canonical = !digits.is_empty()
                    && digits.len() <= 18
                    && digits.iter().all(u8::is_ascii_digit)
                    && (digits[0] != b'0' || digits.len() == 1)
                    && raw != b"-0";
                if canonical {
                    raw
                } else {
                    let n: serde_json::Number =
                        serde_json::from_slice(raw).map_err(|_| Stop::Invalid)?;
                    self.scratch.extend_from_slice(n.to_string().as_bytes());
                    &self.scratch
                }
            }
            b't' | b'f' | b'n' => match raw {
                b"true" | b"false" | b"null" => raw,
                _ => return Err(Stop::Invalid),
            },
            _ => {
                let v: Value = serde_json::from_slice(raw).map_err(|_| Stop::Invalid)?;
                serde_json::to_writer(&mut self.scratch, &v).map_err(|_| Stop::Invalid)?;
                &self.scratch
            }
        };
        if (self.found)(out).is_break() {
            return Err(Stop::Break);
        }
        Ok(())
    }

    /// Evaluates `segs[k..]` on the value at `i`. Returns the end of that value when
    /// `need_end` (or when it was cheap to know), `None` otherwise.
    fn eval(&mut self, i: usize, k: usize, need_end: bool) -> R<Option<usize>> {
        let b = self.b;
        let Some(seg) = self.segs.get(k) else {
            let end = skip_value(b, i)?;
            self.emit(i, end)?;
            return Ok(Some(end));
        };
        match (b.get(i).copied(), seg) {
            (Some(b'{'), Seg::Name(name)) => {
                let mut j = ws(b, i + 1);
                if b.get(j) == Some(&b'}') {
                    return Ok(Some(j + 1));
                }
                loop {
                    let (key_end, vstart) = self.member(j)?;
                    let key = &b[j + 1..key_end - 1];
                    let hit = if memchr::memchr(b'\\', key).is_none() {
                        key == &name[..]
                    } else {
                        serde_json::from_slice::<String>(&b[j..key_end])
                            .map_err(|_| Stop::Invalid)?
                            .as_bytes()
                            == &name[..]
                    };
                    let vend = if hit {
                        match self.eval(vstart, k + 1, need_end)? {
                            Some(e) if need_end => e,
                            _ => return Ok(None),
                        }
                    } else {
                        skip_value(b, vstart)?
                    };
                    match self.after_item(vend, b'}')? {
                        Ok(end) => return Ok(Some(end)),
                        // First occurrence wins: skip the rest of the object.
                        Err(next) if hit => return skip_rest(b, next).map(Some),
                        Err(next) => j = next,
                    }
                }
            }
            (Some(b'['), Seg::Index(_) | Seg::Wild) => {
                let mut j = ws(b, i + 1);
                if b.get(j) == Some(&b']') {
                    return Ok(Some(j + 1));
                }
                let mut n = 0usize;
                loop {
                    let vend = match seg {
                        Seg::Index(want) if *want == n => match self.eval(j, k + 1, need_end)? {
                            Some(e) if need_end => {
                                return match self.after_item(e, b']')? {
                                    Ok(end) => Ok(Some(end)),
                                    Err(next) => skip_rest(b, next).map(Some),
                                };
                            }
                            _ => return Ok(None),
                        },
                        Seg::Index(_) => skip_value(b, j)?,
                        _ => self.eval(j, k + 1, true)?.ok_or(Stop::Invalid)?,
                    };
                    match self.after_item(vend, b']')? {
                        Ok(end) => return Ok(Some(end)),
                        Err(next) => j = next,
                    }
                    n += 1;
                }
            }
            (Some(b'{'), Seg::Wild) => {
                // serde_json's Map is a BTreeMap: visit members in key order, last duplicate wins.
                let mut members: Vec<(String, usize)> = Vec::new();
                let mut j = ws(b, i + 1);
                let end = if b.get(j) == Some(&b'}') {
                    j + 1
                } else {
                    loop {
                        let (key_end, vstart) = self.member(j)?;
                        let key: String =
                            serde_json::from_slice(&b[j..key_end]).map_err(|_| Stop::Invalid)?;
                        members.push((key, vstart));
                        let vend = skip_value(b, vstart)?;
                        match self.after_item(vend, b'}')? {
                            Ok(end) => break end,
                            Err(next) => j = next,
                        }
                    }
                };
                members.reverse();
                members.sort_by(|a, b| a.0.cmp(&b.0)); // stable: last duplicate first
                members.dedup_by(|a, b| a.0 == b.0);
                for (_, v) in members {
                    self.eval(v, k + 1, true)?;
                }
                Ok(Some(end))
            }
            (Some(_), _) => skip_value(b, i).map(Some),
            (None, _) => Err(Stop::Invalid),
        }
    }

    /// `j` at a member's key; returns (end of key, start of value).
    fn member(&self, j: usize) -> R<(usize, usize)> {
        let b = self.b;
        if b.get(j) != Some(&b'"') {
            return Err(Stop::Invalid);
        }
        let key_end = skip_string(b, j)?;
        let c = ws(b, key_end);
        if b.get(c) != Some(&b':') {
            return Err(Stop::Invalid);
        }
        Ok((key_end, ws(b, c + 1)))
    }

    /// After an item ending at `vend`: `Ok(Ok(end))` at the closing bracket, `Ok(Err(next))`
    /// with the start of the next item after a comma.
    fn after_item(&self, vend: usize, close: u8) -> R<Result<usize, usize>> {
        let b = self.b;
        let j = ws(b, vend);
        match b.get(j) {
            Some(&c) if c == close => Ok(Ok(j + 1)),
            Some(b',') => Ok(Err(ws(b, j + 1))),
            _ => Err(Stop::Invalid),
        }
    }
}

/// Emits the nodes of a serde_json_path query result the same way the lazy path does.
pub fn emit_value(
    v: &Value,
    scratch: &mut Vec<u8>,
    found: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    match v {
        Value::String(s) => found(s.as_bytes()),
        _ => {
            scratch.clear();
            if serde_json::to_writer(&mut *scratch, v).is_err() {
                return ControlFlow::Continue(());
            }
            found(scratch)
        }
    }
}
