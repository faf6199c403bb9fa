//! Header lines as both protocols take them: preformatted `Name: value\r\n` lines in one
//! reused buffer. HTTP/1.1 copies them into the request head as they are; HTTP/2 splits them
//! into HPACK fields. Checking them once, here, when they are built, is what keeps a template
//! from injecting headers or a second request into either.

/// A header that [`push_header`] refused, because sending it would break the request framing
/// (a CR or LF would let a template inject headers or a second request).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid header: {reason}")]
pub struct InvalidHeader {
    reason: &'static str,
}

/// Appends `name: value\r\n` to `buf`.
///
/// The name must be a non-empty RFC 9110 token (letters, digits and ``!#$%&'*+-.^_`|~``);
/// the value must not contain CR, LF or NUL. On error `buf` is left unchanged.
pub fn push_header(buf: &mut Vec<u8>, name: &[u8], value: &[u8]) -> Result<(), InvalidHeader> {
    if name.is_empty() {
        return Err(InvalidHeader {
            reason: "the header name is empty",
        });
    }
    if !name.iter().all(|&b| is_tchar(b)) {
        return Err(InvalidHeader {
            reason: "the header name contains a character that is not allowed in a name (space, colon, CR, LF, control, ...)",
        });
    }
    if value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(InvalidHeader {
            reason: "the header value contains CR, LF or NUL, which would inject headers",
        });
    }
    buf.reserve(name.len() + value.len() + 4);
    buf.extend_from_slice(name);
    buf.extend_from_slice(b": ");
    buf.extend_from_slice(value);
    buf.extend_from_slice(b"\r\n");
    Ok(())
}

/// Whether `s` is a non-empty RFC 9110 token (§5.6.2), as a method or a header name must be.
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// RFC 9110 §5.6.2 token characters.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_validation() {
        let mut b = Vec::new();
        push_header(&mut b, b"X-Id", b"a b\tc").unwrap();
        assert_eq!(b, b"X-Id: a b\tc\r\n");
        for (name, value) in [
            (&b""[..], &b"v"[..]),
            (b"X Id", b"v"),
            (b"X:Id", b"v"),
            (b"X\r\nEvil", b"v"),
            (b"X", b"v\r\nEvil: 1"),
            (b"X", b"v\nEvil: 1"),
            (b"X", b"v\0"),
        ] {
            assert!(
                push_header(&mut b, name, value).is_err(),
                "{name:?} {value:?}"
            );
        }
        assert_eq!(b, b"X-Id: a b\tc\r\n", "buffer unchanged on error");
        let e = push_header(&mut b, b"X", b"\r").unwrap_err();
        assert!(e.to_string().contains("CR, LF or NUL"));
    }

    #[test]
    fn tokens() {
        assert!(is_token(b"GET"));
        assert!(is_token(b"X-Id"));
        assert!(!is_token(b""));
        assert!(!is_token(b"GE T"));
        assert!(!is_token(b"X:Id"));
    }
}
