//! Following redirects on the same origin: where a `Location` points, and the headers that no
//! longer apply when a redirect turns the request into a GET.

use crate::target::HttpTarget;

/// The origin-form target a `Location` points to, when it stays on `target`'s origin.
pub(crate) fn same_origin_target(
    location: &[u8],
    target: &HttpTarget,
    current: &[u8],
) -> Option<Vec<u8>> {
    let loc = location.trim_ascii();
    if loc.starts_with(b"//") {
        return None;
    }
    if loc.starts_with(b"/") {
        return Some(loc.to_vec());
    }
    for scheme in [&b"http://"[..], b"https://"] {
        if let Some(rest) = loc.strip_prefix(scheme) {
            if (scheme == b"https://") != target.tls {
                return None;
            }
            let end = rest
                .iter()
                .position(|b| matches!(b, b'/' | b'?'))
                .unwrap_or(rest.len());
            if !rest[..end].eq_ignore_ascii_case(&target.host_header) {
                return None;
            }
            let path = &rest[end..];
            return Some(if path.starts_with(b"/") {
                path.to_vec()
            } else {
                [&b"/"[..], path].concat()
            });
        }
    }
    if loc.contains(&b':') && !loc.contains(&b'/') {
        return None;
    }
    // Relative to the current path's directory.
    let path_end = current
        .iter()
        .position(|b| *b == b'?')
        .unwrap_or(current.len());
    let dir_end = current[..path_end]
        .iter()
        .rposition(|b| *b == b'/')
        .map_or(1, |i| i + 1);
    Some([&current[..dir_end], loc].concat())
}

/// A status that redirects (RFC 9110 §15.4: 301, 302, 303, 307, 308).
pub(crate) fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Removes header lines named `name` from preformatted header lines.
pub(crate) fn remove_header(headers: &mut Vec<u8>, name: &[u8]) {
    let mut out = Vec::with_capacity(headers.len());
    for line in headers.split_inclusive(|b| *b == b'\n') {
        let n = line.iter().position(|b| *b == b':').unwrap_or(0);
        if !line[..n].eq_ignore_ascii_case(name) {
            out.extend_from_slice(line);
        }
    }
    *headers = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(tls: bool) -> HttpTarget {
        HttpTarget {
            addr: "127.0.0.1:8080".parse().unwrap(),
            host_header: b"127.0.0.1:8080".to_vec(),
            tls,
            server_name: "127.0.0.1".into(),
        }
    }

    #[test]
    fn redirect_targets() {
        let t = target(false);
        let cur = b"/a/b?x=1";
        assert_eq!(same_origin_target(b"/c", &t, cur).unwrap(), b"/c");
        assert_eq!(same_origin_target(b"d?y", &t, cur).unwrap(), b"/a/d?y");
        assert_eq!(
            same_origin_target(b"http://127.0.0.1:8080/e", &t, cur).unwrap(),
            b"/e"
        );
        assert_eq!(
            same_origin_target(b"http://127.0.0.1:8080", &t, cur).unwrap(),
            b"/"
        );
        assert!(same_origin_target(b"http://example.com/e", &t, cur).is_none());
        assert!(same_origin_target(b"https://127.0.0.1:8080/e", &t, cur).is_none());
        assert!(same_origin_target(b"//other/x", &t, cur).is_none());
    }

    #[test]
    fn removes_headers() {
        let mut h = b"Content-Type: a\r\nX: 1\r\ncontent-type: b\r\n".to_vec();
        remove_header(&mut h, b"content-type");
        assert_eq!(h, b"X: 1\r\n");
    }
}
