//! Built-in template functions (`${uuid()}`, `${random_int(1, 100)}`, ...), evaluated per render.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use base64::Engine;

use super::{RenderContext, Template, Unset};

/// A function call compiled at plan load.
#[derive(Clone, PartialEq, Eq)]
pub enum Func {
    /// `random_int(min, max)`: uniform in `[min, max]`.
    RandomInt {
        min: i64,
        max: i64,
    },
    /// `random_string(len[, charset])`.
    RandomString {
        len: u32,
        charset: Box<[u8]>,
    },
    /// `uuid()`: a random (version 4) UUID.
    Uuid,
    /// `counter([name])`: 1, 2, 3, ... per VU.
    Counter {
        index: usize,
    },
    /// `global_counter([name])`: 1, 2, 3, ... shared by all VUs of all threads.
    GlobalCounter(GlobalCounter),
    /// `now_ms()` / `now_s()`: Unix time.
    NowMs,
    NowS,
    /// `now(format)`: UTC time formatted with strftime specifiers.
    NowFormat(Box<str>),
    /// `choice(a, b, ...)`: one of the arguments, uniformly.
    Choice(Box<[Template]>),
    /// An encoding or hash of the rendered argument.
    Apply {
        transform: Transform,
        arg: Template,
    },
    /// A function exported by the plan's JavaScript (`scripts:`): `func` indexes the plan's
    /// script functions; `name` is what the plan wrote.
    Script {
        func: u32,
        name: Box<str>,
        args: Box<[Template]>,
    },
}

/// A counter shared by all threads (one relaxed atomic add per use).
#[derive(Clone, Default)]
pub struct GlobalCounter(pub Arc<AtomicU64>);

impl PartialEq for GlobalCounter {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for GlobalCounter {}

/// What [`Func::Apply`] does to its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Base64,
    Base64Url,
    UrlEncode,
    Md5,
    Sha1,
    Sha256,
    Lower,
    Upper,
}

impl Transform {
    pub fn by_name(name: &str) -> Option<Transform> {
        Some(match name {
            "base64" => Transform::Base64,
            "base64url" => Transform::Base64Url,
            "urlencode" => Transform::UrlEncode,
            "md5" => Transform::Md5,
            "sha1" => Transform::Sha1,
            "sha256" => Transform::Sha256,
            "lower" => Transform::Lower,
            "upper" => Transform::Upper,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Transform::Base64 => "base64",
            Transform::Base64Url => "base64url",
            Transform::UrlEncode => "urlencode",
            Transform::Md5 => "md5",
            Transform::Sha1 => "sha1",
            Transform::Sha256 => "sha256",
            Transform::Lower => "lower",
            Transform::Upper => "upper",
        }
    }

    /// Appends the transformed `input` to `out`.
    pub fn apply(self, input: &[u8], out: &mut Vec<u8>) {
        use sha2::Digest;
        match self {
            Transform::Base64 => {
                base64::engine::general_purpose::STANDARD.encode_string_bytes(input, out)
            }
            Transform::Base64Url => {
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_string_bytes(input, out)
            }
            Transform::UrlEncode => url_encode(input, out),
            Transform::Md5 => hex(&md5::Md5::digest(input), out),
            Transform::Sha1 => hex(&sha1::Sha1::digest(input), out),
            Transform::Sha256 => hex(&sha2::Sha256::digest(input), out),
            Transform::Lower => out.extend(input.iter().map(u8::to_ascii_lowercase)),
            Transform::Upper => out.extend(input.iter().map(u8::to_ascii_uppercase)),
        }
    }
}

/// base64's `encode_string` appends to a `String`; this appends to bytes.
trait EncodeBytes {
    fn encode_string_bytes(&self, input: &[u8], out: &mut Vec<u8>);
}

impl<E: Engine> EncodeBytes for E {
    fn encode_string_bytes(&self, input: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(
            start + base64::encoded_len(input.len(), true).unwrap_or(0),
            0,
        );
        let n = self.encode_slice(input, &mut out[start..]).unwrap_or(0);
        out.truncate(start + n);
    }
}

/// RFC 3986 percent-encoding of everything but unreserved characters.
pub fn url_encode(input: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in input {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
    }
}

fn hex(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.extend_from_slice(&[HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
    }
}

impl Func {
    /// True for functions whose result depends only on their arguments (folded at load when the
    /// arguments are constant).
    pub fn is_pure(&self) -> bool {
        matches!(self, Func::Apply { .. })
    }

    pub fn render(&self, ctx: &RenderContext, out: &mut Vec<u8>) -> Result<(), Unset> {
        let vars = ctx.vars();
        match self {
            Func::RandomInt { min, max } => {
                let span = (*max as i128 - *min as i128 + 1) as u128;
                let r = if span > u64::MAX as u128 {
                    vars.random() as i128
                } else {
                    vars.random_below(span as u64) as i128
                };
                let n = (*min as i128 + r) as i64;
                out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            }
            Func::RandomString { len, charset } => {
                for _ in 0..*len {
                    out.push(charset[vars.random_below(charset.len() as u64) as usize]);
                }
            }
            Func::Uuid => {
                let (a, b) = (vars.random(), vars.random());
                let mut bytes = [0u8; 16];
                bytes[..8].copy_from_slice(&a.to_be_bytes());
                bytes[8..].copy_from_slice(&b.to_be_bytes());
                bytes[6] = (bytes[6] & 0x0f) | 0x40;
                bytes[8] = (bytes[8] & 0x3f) | 0x80;
                for (i, b) in bytes.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        out.push(b'-');
                    }
                    hex(&[*b], out);
                }
            }
            Func::Counter { index } => {
                let n = vars.next_counter(*index);
                out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            }
            Func::GlobalCounter(c) => {
                // Across the agents of a distributed run, agent `part` of `parts` gives the
                // values ≡ part + 1 (mod parts): unique over all agents, none shared.
                let (part, parts) = onrush_data::share::process_share();
                let n = c.0.fetch_add(1, Ordering::Relaxed) * parts + part + 1;
                out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            }
            Func::NowMs => {
                let ms = chrono::Utc::now().timestamp_millis();
                out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes());
            }
            Func::NowS => {
                let s = chrono::Utc::now().timestamp();
                out.extend_from_slice(itoa::Buffer::new().format(s).as_bytes());
            }
            Func::NowFormat(format) => {
                let _ = write!(out, "{}", chrono::Utc::now().format(format));
            }
            Func::Choice(options) => {
                let i = vars.random_below(options.len() as u64) as usize;
                options[i].render(ctx, out)?;
            }
            Func::Apply { transform, arg } => {
                // The argument is rendered first; a small allocation, only for steps that use
                // an encoding or hash of a per-request value.
                let mut input = Vec::with_capacity(arg.max_len_hint());
                arg.render(ctx, &mut input)?;
                transform.apply(&input, out);
            }
            Func::Script { func, args, .. } => {
                let mut values = Vec::with_capacity(args.len());
                for a in args.iter() {
                    let mut v = Vec::new();
                    a.render(ctx, &mut v)?;
                    values.push(v);
                }
                if !crate::script::call(*func, &values, ctx, out) {
                    return Err(Unset {
                        slot: crate::script::SCRIPT_FAILED,
                    });
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Func::RandomInt { min, max } => write!(f, "${{random_int({min}, {max})}}"),
            Func::RandomString { len, charset } => write!(
                f,
                "${{random_string({len}, {:?})}}",
                String::from_utf8_lossy(charset)
            ),
            Func::Uuid => f.write_str("${uuid()}"),
            Func::Counter { index } => write!(f, "${{counter(#{index})}}"),
            Func::GlobalCounter(_) => f.write_str("${global_counter()}"),
            Func::NowMs => f.write_str("${now_ms()}"),
            Func::NowS => f.write_str("${now_s()}"),
            Func::NowFormat(s) => write!(f, "${{now({s:?})}}"),
            Func::Choice(o) => {
                f.write_str("${choice(")?;
                for (i, t) in o.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{:?}", t.to_string())?;
                }
                f.write_str(")}")
            }
            Func::Apply { transform, arg } => {
                write!(f, "${{{}({:?})}}", transform.name(), arg.to_string())
            }
            Func::Script { name, args, .. } => {
                write!(f, "${{{name}(")?;
                for (i, t) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{:?}", t.to_string())?;
                }
                f.write_str(")}")
            }
        }
    }
}
