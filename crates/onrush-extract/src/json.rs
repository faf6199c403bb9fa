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

/// Byte classes for the scalar container scanner: 0 other, 1 `"`, 2 `{`/`[`, 3 `}`/`]`,
/// 4 `\\`.
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
/// that closes it.
///
/// Works on 64-byte blocks (simdjson-style): per block, bit masks of `"`, `\\`, opening and
/// closing brackets (SSE2 on x86_64, SWAR elsewhere); escaped characters from the backslash
/// runs, the "inside a string" mask as the prefix XOR of the unescaped quotes, then only the
/// brackets outside strings count. A block whose closing brackets cannot bring the depth to
/// zero is skipped with two popcounts; otherwise its brackets are walked bit by bit. A
/// backslash outside a string (not JSON) hands over to the byte-wise scanner, so results are
/// identical to it on any input.
fn scan_container(b: &[u8], j: usize, mut depth: usize) -> R<usize> {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    if j >= b.len() {
        return Err(Stop::Invalid);
    }
    let mut pos = j;
    // All ones when the block starts inside a string.
    let mut in_str = 0u64;
    // 1 when the first byte of the block is escaped by a backslash ending the previous one.
    let mut prev_escaped = 0u64;
    let mut tail = [0u8; 64];
    while pos < b.len() {
        let block: &[u8; 64] = match b.get(pos..pos + 64) {
            Some(s) => s.try_into().unwrap(),
            None => {
                // Last, partial block: zero padding matches nothing.
                let n = b.len() - pos;
                tail[..n].copy_from_slice(&b[pos..]);
                &tail
            }
        };
        let m = masks(block);
        let (escaped, carry) = if m.backslash == 0 {
            (prev_escaped, 0)
        } else {
            let bs = m.backslash & !prev_escaped;
            let follows = (bs << 1) | prev_escaped;
            let odd_starts = bs & !EVEN & !follows;
            let (even_starts, overflow) = odd_starts.overflowing_add(bs);
            ((EVEN ^ (even_starts << 1)) & follows, u64::from(overflow))
        };
        let string = prefix_xor(m.quote & !escaped) ^ in_str;
        if m.backslash & !string != 0 {
            return scan_container_scalar(b, pos, depth, in_str != 0, prev_escaped != 0);
        }
        in_str = ((string as i64) >> 63) as u64;
        prev_escaped = carry;
        let open = m.open & !string;
        let close = m.close & !string;
        let closes = close.count_ones() as usize;
        if closes < depth {
            depth = depth + open.count_ones() as usize - closes;
        } else {
            let mut s = open | close;
            while s != 0 {
                let t = s.trailing_zeros();
                if open >> t & 1 != 0 {
                    depth += 1;
                } else {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(pos + t as usize + 1);
                    }
                }
                s &= s - 1;
            }
        }
        pos += 64;
    }
    Err(Stop::Invalid)
}

/// Bit `i` set where byte `i` of the block is the character.
struct Masks {
    quote: u64,
    backslash: u64,
    /// `{` or `[`
    open: u64,
    /// `}` or `]`
    close: u64,
}

/// Running XOR from bit 0 up: bit `i` = parity of the set bits at `0..=i`.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks(block: &[u8; 64]) -> Masks {
    // SAFETY: SSE2 is part of the x86_64 baseline, so it is always available.
    unsafe { masks_sse2(block) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks(block: &[u8; 64]) -> Masks {
    masks_swar(block)
}

/// # Safety
/// SSE2 must be available (always true on x86_64).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn masks_sse2(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::*;
    let quote = _mm_set1_epi8(b'"' as i8);
    let backslash = _mm_set1_epi8(b'\\' as i8);
    // `{`/`[` and `}`/`]` differ only in bit 0x20.
    let case = _mm_set1_epi8(0x20);
    let open = _mm_set1_epi8(b'{' as i8);
    let close = _mm_set1_epi8(b'}' as i8);
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
    };
    for k in 0..4 {
        // Unaligned 16-byte load at 16 * k (k < 4): inside the 64-byte block.
        let v = _mm_loadu_si128(block.as_ptr().add(16 * k).cast());
        let f = _mm_or_si128(v, case);
        let bit = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u16) << (16 * k);
        m.quote |= bit(_mm_cmpeq_epi8(v, quote));
        m.backslash |= bit(_mm_cmpeq_epi8(v, backslash));
        m.open |= bit(_mm_cmpeq_epi8(f, open));
        m.close |= bit(_mm_cmpeq_epi8(f, close));
    }
    m
}

/// Portable version of the masks: eight bytes at a time in a `u64`.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn masks_swar(block: &[u8; 64]) -> Masks {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // 0x80 in each byte of `w` equal to `c` (exact: no false positives).
    fn eq(w: u64, c: u8) -> u64 {
        let x = w ^ (ONES * u64::from(c));
        !(((x & LOW7) + LOW7) | x | LOW7)
    }
    // The 0x80 bits of the eight bytes gathered into the low 8 bits (byte i -> bit i).
    fn gather(m: u64) -> u64 {
        (m >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
    }
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
    };
    for (k, w) in block.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(w.try_into().unwrap());
        let f = w | (ONES * 0x20);
        m.quote |= gather(eq(w, b'"')) << (8 * k);
        m.backslash |= gather(eq(w, b'\\')) << (8 * k);
        m.open |= gather(eq(f, b'{')) << (8 * k);
        m.close |= gather(eq(f, b'}')) << (8 * k);
    }
    m
}

/// The byte-wise scanner (one table lookup per byte), from `j` inside a container nested
/// `depth` deep, inside a string when `in_str`, after an escaping backslash when `escaped`.
/// Used by [`scan_container`] for input with a backslash outside strings, and by the tests
/// as the reference.
fn scan_container_scalar(
    b: &[u8],
    j: usize,
    mut depth: usize,
    mut in_str: bool,
    mut escaped: bool,
) -> R<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Gen(u64);
    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn fast(b: &[u8], j: usize, depth: usize) -> Option<usize> {
        scan_container(b, j, depth).ok()
    }

    /// The scanner this crate used before the block scanner: the byte-wise one from the start.
    fn reference(b: &[u8], j: usize, depth: usize) -> Option<usize> {
        scan_container_scalar(b, j, depth, false, false).ok()
    }

    fn check_all_starts(b: &[u8]) {
        for j in 0..=b.len() + 1 {
            for depth in 1..4 {
                assert_eq!(
                    fast(b, j, depth),
                    reference(b, j, depth),
                    "j={j} depth={depth} in {:?}",
                    String::from_utf8_lossy(b)
                );
            }
        }
    }

    #[test]
    fn block_scanner_matches_bytewise_on_random_bytes() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        // Heavy on the characters that matter, some arbitrary bytes.
        let alphabet = b"\"\\{}[]ab ,:\"\"\\\\";
        for _ in 0..3000 {
            let len = (g.next() % 260) as usize;
            let doc: Vec<u8> = (0..len)
                .map(|_| {
                    let r = g.next();
                    if r.is_multiple_of(5) {
                        (r >> 8) as u8
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    }
                })
                .collect();
            check_all_starts(&doc);
        }
    }

    fn gen_json(g: &mut Gen, depth: usize, out: &mut Vec<u8>) {
        let strings: [&[u8]; 8] = [
            br#""""#,
            br#""a\"b""#,
            br#""\\""#,
            br#""\\\"\\""#,
            br#""x\\\\\\\\\"y{[""#,
            br#""}]\u00e9\n""#,
            "\"ü€ end\"".as_bytes(),
            br#""a fairly long string value that crosses a 64-byte block, with \"quotes\" and \\ in it""#,
        ];
        match g.next() % 10 {
            0..=3 if depth < 6 => {
                let (open, close) = if g.next().is_multiple_of(2) {
                    (b'[', b']')
                } else {
                    (b'{', b'}')
                };
                out.push(open);
                for i in 0..g.next() % 6 {
                    if i > 0 {
                        out.extend_from_slice(if g.next().is_multiple_of(2) {
                            b","
                        } else {
                            b" ,\n  "
                        });
                    }
                    if open == b'{' {
                        out.extend_from_slice(strings[g.next() as usize % strings.len()]);
                        out.push(b':');
                    }
                    gen_json(g, depth + 1, out);
                }
                out.push(close);
            }
            4..=6 => out.extend_from_slice(strings[g.next() as usize % strings.len()]),
            7 => out.extend_from_slice(b"-12.5e3"),
            8 => out.extend_from_slice(b"true"),
            _ => {
                // A backslash run of any length in a string, so runs end on every bit of a block.
                out.push(b'"');
                for _ in 0..g.next() % 70 {
                    out.push(b'x');
                }
                for _ in 0..g.next() % 9 {
                    out.extend_from_slice(b"\\\\");
                }
                out.extend_from_slice(b"\\\\\"");
            }
        }
    }

    #[test]
    fn block_scanner_matches_bytewise_on_generated_json_and_truncations() {
        let mut g = Gen(42);
        let mut containers = 0;
        for _ in 0..1500 {
            let mut doc = b"[".to_vec();
            gen_json(&mut g, 0, &mut doc);
            doc.push(b']');
            let end = fast(&doc, 1, 1);
            assert_eq!(end, reference(&doc, 1, 1));
            assert_eq!(end, Some(doc.len()), "{:?}", String::from_utf8_lossy(&doc));
            containers += 1;
            if doc.len() < 400 {
                check_all_starts(&doc);
            }
            for cut in 0..doc.len() {
                let t = &doc[..cut];
                assert_eq!(fast(t, 1, 1), reference(t, 1, 1));
                assert_eq!(skip_value(t, 0).ok(), None);
            }
        }
        assert_eq!(containers, 1500);
    }

    #[test]
    fn backslash_runs_across_block_boundaries() {
        for start in 50..70 {
            for run in 0..70 {
                for tail in [&b"\"]"[..], b"\"x\"]", b"]\"]", b"\"}]]"] {
                    let mut doc = b"[".to_vec();
                    doc.resize(start, b' ');
                    doc.push(b'"');
                    doc.resize(doc.len() + run, b'\\');
                    doc.extend_from_slice(tail);
                    let mut also = doc.clone();
                    also.extend_from_slice(b"\"]]");
                    for d in [&doc, &also] {
                        for depth in 1..3 {
                            assert_eq!(fast(d, 1, depth), reference(d, 1, depth), "{start} {run}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn backslash_outside_strings_uses_the_bytewise_scanner() {
        for doc in [
            &br#"[\"]"]"#[..],
            br#"[1, \"a]", "b"]"#,
            br#"[\\"]"]"#,
            br#"["a\"", \ ]"#,
        ] {
            check_all_starts(doc);
        }
        let mut long = vec![b' '; 100];
        long[0] = b'[';
        long[70] = b'\\';
        long[71] = b'"';
        long.extend_from_slice(b"]\"]");
        check_all_starts(&long);
    }

    #[test]
    fn swar_masks_match_simd_masks() {
        let mut g = Gen(7);
        for _ in 0..20_000 {
            let mut block = [0u8; 64];
            for x in &mut block {
                let r = g.next();
                *x = if r.is_multiple_of(2) {
                    b"\"\\{}[];{|\x00\xff"[(r >> 8) as usize % 11]
                } else {
                    (r >> 8) as u8
                };
            }
            let (a, b) = (masks(&block), masks_swar(&block));
            assert_eq!(
                (a.quote, a.backslash, a.open, a.close),
                (b.quote, b.backslash, b.open, b.close)
            );
            let bit = |c: u8| {
                block
                    .iter()
                    .enumerate()
                    .filter(|(_, &x)| c == x)
                    .fold(0u64, |m, (i, _)| m | 1 << i)
            };
            assert_eq!(b.quote, bit(b'"'));
            assert_eq!(b.backslash, bit(b'\\'));
            assert_eq!(b.open, bit(b'{') | bit(b'['));
            assert_eq!(b.close, bit(b'}') | bit(b']'));
        }
    }
}
