//! Percent-encoding for request bodies and targets built by the caller: the
//! `application/x-www-form-urlencoded` serializer and RFC 3986 component encoding. Both append
//! to a caller-owned buffer, so a reused buffer makes them allocation-free.

const HEX: &[u8; 16] = b"0123456789ABCDEF";

#[inline]
fn push_escaped(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// Appends the `application/x-www-form-urlencoded` serialization of `pairs` to `out`, as the
/// WHATWG URL standard's urlencoded serializer (and so a browser submitting a form) does:
/// `name=value` pairs joined by `&`; in names and values, ASCII letters, digits and `*-._` are
/// kept, a space becomes `+`, every other byte becomes `%XX` (upper-case hex). Bytes are taken
/// as they are (encode text as UTF-8 first).
///
/// ```
/// let mut body = Vec::new();
/// onrush_http::form_urlencode([(&b"q"[..], &b"a b&c"[..]), (b"n", b"1")].into_iter(), &mut body);
/// assert_eq!(body, b"q=a+b%26c&n=1");
/// ```
pub fn form_urlencode<'a>(pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>, out: &mut Vec<u8>) {
    for (i, (name, value)) in pairs.enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        form_component(name, out);
        out.push(b'=');
        form_component(value, out);
    }
}

fn form_component(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    for &b in input {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(b),
            b' ' => out.push(b'+'),
            _ => push_escaped(out, b),
        }
    }
}

/// Appends `input` to `out` percent-encoded for use as one URI component (a path segment, a
/// query name or value): RFC 3986 unreserved characters (ASCII letters, digits, `-._~`) are
/// kept, every other byte becomes `%XX` (upper-case hex), a space included (`%20`).
///
/// ```
/// let mut t = b"/search?q=".to_vec();
/// onrush_http::percent_encode_component("café & co/1".as_bytes(), &mut t);
/// assert_eq!(t, b"/search?q=caf%C3%A9%20%26%20co%2F1");
/// ```
pub fn percent_encode_component(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    for &b in input {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b),
            _ => push_escaped(out, b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> String {
        let mut out = Vec::new();
        form_urlencode(
            pairs.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
            &mut out,
        );
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn urlencoded_like_a_browser() {
        assert_eq!(form(&[]), "");
        assert_eq!(form(&[("a", "1")]), "a=1");
        assert_eq!(form(&[("a", ""), ("", "b")]), "a=&=b");
        assert_eq!(
            form(&[("name", "John Smith"), ("q", "a+b=c&d")]),
            "name=John+Smith&q=a%2Bb%3Dc%26d"
        );
        // Kept: alphanumerics and *-._ ; '~' is escaped by the WHATWG serializer.
        assert_eq!(form(&[("k", "AZaz09*-._~")]), "k=AZaz09*-._%7E");
        assert_eq!(form(&[("é", "€/?#%")]), "%C3%A9=%E2%82%AC%2F%3F%23%25");
        assert_eq!(form(&[("nl", "a\r\nb\0")]), "nl=a%0D%0Ab%00");
        let mut out = Vec::new();
        form_urlencode(std::iter::once((&[0xffu8][..], &b" "[..])), &mut out);
        assert_eq!(out, b"%FF=+");
    }

    #[test]
    fn uri_component() {
        let enc = |s: &[u8]| {
            let mut out = b"x".to_vec();
            percent_encode_component(s, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(enc(b""), "x");
        assert_eq!(enc(b"AZaz09-._~"), "xAZaz09-._~");
        assert_eq!(enc(b"a b+c"), "xa%20b%2Bc");
        assert_eq!(
            enc(b"!*'();:@&=+$,/?#[]"),
            "x%21%2A%27%28%29%3B%3A%40%26%3D%2B%24%2C%2F%3F%23%5B%5D"
        );
        assert_eq!(enc("ü".as_bytes()), "x%C3%BC");
        assert_eq!(enc(&[0, 0x7f, 0x80, 0xff]), "x%00%7F%80%FF");
        // Every byte: unreserved kept, all others escaped, and decoding gives the input back.
        let all: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        percent_encode_component(&all, &mut out);
        let mut back = Vec::new();
        let mut i = 0;
        while i < out.len() {
            if out[i] == b'%' {
                let h = std::str::from_utf8(&out[i + 1..i + 3]).unwrap();
                back.push(u8::from_str_radix(h, 16).unwrap());
                i += 3;
            } else {
                back.push(out[i]);
                i += 1;
            }
        }
        assert_eq!(back, all);
    }
}
