//! The built-in modules (`onrush/crypto`, `onrush/encoding`) and the native functions behind
//! them, at native speed: a script signs a request with `hmac('sha256', key, body)` in Rust
//! (ring), not in JavaScript.

use base64::Engine as _;
use rquickjs::{Ctx, Exception, Function, Object, Result};

/// The source of a built-in module, by the name scripts import it with.
pub fn source(name: &str) -> Option<&'static str> {
    Some(match name {
        "onrush/crypto" => {
            "const n = globalThis.__onrush_native;\n\
             export const hmac = n.hmac, md5 = n.md5, sha1 = n.sha1, sha256 = n.sha256,\n\
               sha512 = n.sha512, randomBytes = n.randomBytes;\n"
        }
        "onrush/encoding" => {
            "const n = globalThis.__onrush_native;\n\
             export const base64 = n.base64, base64url = n.base64url, unbase64 = n.unbase64,\n\
               hex = n.hex, urlencode = n.urlencode, urldecode = n.urldecode;\n"
        }
        _ => return None,
    })
}

/// The names scripts may import from, for messages.
pub const MODULES: &[&str] = &["onrush/crypto", "onrush/encoding"];

fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

fn digest(ctx: &Ctx<'_>, alg: &str, data: &[u8]) -> Result<String> {
    use ring::digest::{digest, SHA1_FOR_LEGACY_USE_ONLY, SHA256, SHA512};
    Ok(match alg {
        "md5" => {
            use md5::Digest;
            hex(&md5::Md5::digest(data))
        }
        "sha1" => hex(digest(&SHA1_FOR_LEGACY_USE_ONLY, data).as_ref()),
        "sha256" => hex(digest(&SHA256, data).as_ref()),
        "sha512" => hex(digest(&SHA512, data).as_ref()),
        other => {
            return Err(Exception::throw_type(
                ctx,
                &format!("unknown hash {other:?}: expected 'md5', 'sha1', 'sha256' or 'sha512'"),
            ))
        }
    })
}

/// Installs `globalThis.__onrush_native`, what the built-in modules export.
pub fn install(ctx: &Ctx<'_>) -> Result<()> {
    let n = Object::new(ctx.clone())?;
    n.set(
        "hmac",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'_>, alg: String, key: String, data: String| -> Result<String> {
                use ring::hmac::{self, HMAC_SHA1_FOR_LEGACY_USE_ONLY, HMAC_SHA256, HMAC_SHA512};
                let alg = match alg.as_str() {
                    "sha1" => HMAC_SHA1_FOR_LEGACY_USE_ONLY,
                    "sha256" => HMAC_SHA256,
                    "sha512" => HMAC_SHA512,
                    other => {
                        return Err(Exception::throw_type(
                            &ctx,
                            &format!("hmac: unknown algorithm {other:?}: expected 'sha1', 'sha256' or 'sha512'"),
                        ))
                    }
                };
                let key = hmac::Key::new(alg, key.as_bytes());
                Ok(hex(hmac::sign(&key, data.as_bytes()).as_ref()))
            },
        )?,
    )?;
    for alg in ["md5", "sha1", "sha256", "sha512"] {
        n.set(
            alg,
            Function::new(ctx.clone(), move |ctx: Ctx<'_>, data: String| {
                digest(&ctx, alg, data.as_bytes())
            })?,
        )?;
    }
    n.set(
        "randomBytes",
        Function::new(ctx.clone(), |ctx: Ctx<'_>, len: u32| -> Result<String> {
            use ring::rand::{SecureRandom, SystemRandom};
            if len > 65536 {
                return Err(Exception::throw_range(
                    &ctx,
                    "randomBytes: at most 65536 bytes",
                ));
            }
            let mut b = vec![0u8; len as usize];
            SystemRandom::new()
                .fill(&mut b)
                .map_err(|_| Exception::throw_internal(&ctx, "randomBytes: no random source"))?;
            Ok(hex(&b))
        })?,
    )?;
    n.set(
        "base64",
        Function::new(ctx.clone(), |s: String| {
            base64::engine::general_purpose::STANDARD.encode(s)
        })?,
    )?;
    n.set(
        "base64url",
        Function::new(ctx.clone(), |s: String| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
        })?,
    )?;
    n.set(
        "unbase64",
        Function::new(ctx.clone(), |ctx: Ctx<'_>, s: String| -> Result<String> {
            let e = base64::engine::general_purpose::STANDARD;
            let bytes = e
                .decode(s.trim_end_matches('='))
                .or_else(|_| {
                    base64::engine::general_purpose::STANDARD_NO_PAD.decode(s.trim_end_matches('='))
                })
                .or_else(|_| {
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s.trim_end_matches('='))
                })
                .map_err(|e| Exception::throw_type(&ctx, &format!("unbase64: {e}")))?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        })?,
    )?;
    n.set(
        "hex",
        Function::new(ctx.clone(), |s: String| hex(s.as_bytes()))?,
    )?;
    n.set(
        "urlencode",
        Function::new(ctx.clone(), |s: String| {
            let mut out = Vec::new();
            onrush_template::url_encode(s.as_bytes(), &mut out);
            String::from_utf8_lossy(&out).into_owned()
        })?,
    )?;
    n.set(
        "urldecode",
        Function::new(ctx.clone(), |s: String| url_decode(&s))?,
    )?;
    ctx.globals().set("__onrush_native", n)?;
    Ok(())
}

fn url_decode(s: &str) -> String {
    fn digit(c: u8) -> Option<u8> {
        (c as char).to_digit(16).map(|d| d as u8)
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => match (digit(b[i + 1]), digit(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn url_decoding() {
        assert_eq!(super::url_decode("a%20b+c%2"), "a b c%2");
        assert_eq!(super::url_decode("%41"), "A");
    }
}
