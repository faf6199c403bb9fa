//! RFC 6265's examples (§3.1) and the edge cases of §5.1-5.4.

use super::*;

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// 2020-01-01T00:00:00Z.
const NOW: u64 = 1_577_836_800;

fn header(jar: &CookieJar, host: &str, path: &str, secure: bool, now: SystemTime) -> String {
    let mut out = Vec::new();
    let any = jar.header_value(host, path.as_bytes(), secure, now, &mut out);
    assert_eq!(any, !out.is_empty());
    String::from_utf8(out).unwrap()
}

fn get(jar: &CookieJar, host: &str, path: &str) -> String {
    header(jar, host, path, false, t(NOW))
}

fn store(jar: &mut CookieJar, value: &str, host: &str, path: &str) {
    jar.store(value.as_bytes(), host, path.as_bytes(), t(NOW));
}

#[test]
fn rfc6265_section_3_1_examples() {
    // Host-only cookie.
    let mut jar = CookieJar::new();
    store(&mut jar, "SID=31d4d96e407aad42", "example.com", "/");
    assert_eq!(get(&jar, "example.com", "/"), "SID=31d4d96e407aad42");
    assert_eq!(
        get(&jar, "example.com", "/any/path"),
        "SID=31d4d96e407aad42"
    );
    assert_eq!(get(&jar, "www.example.com", "/"), "");

    // Path and Domain: sent to subdomains too.
    let mut jar = CookieJar::new();
    store(
        &mut jar,
        "SID=31d4d96e407aad42; Path=/; Domain=example.com",
        "example.com",
        "/",
    );
    assert_eq!(get(&jar, "www.example.com", "/x"), "SID=31d4d96e407aad42");
    assert_eq!(get(&jar, "example.com", "/"), "SID=31d4d96e407aad42");

    // Secure + HttpOnly, and a domain cookie: both over TLS, only lang over plain HTTP.
    let mut jar = CookieJar::new();
    store(
        &mut jar,
        "SID=31d4d96e407aad42; Path=/; Secure; HttpOnly",
        "example.com",
        "/",
    );
    store(
        &mut jar,
        "lang=en-US; Path=/; Domain=example.com",
        "example.com",
        "/",
    );
    assert_eq!(
        header(&jar, "example.com", "/", true, t(NOW)),
        "SID=31d4d96e407aad42; lang=en-US"
    );
    assert_eq!(
        header(&jar, "example.com", "/", false, t(NOW)),
        "lang=en-US"
    );

    // Expires, then removal with a date in the past.
    let mut jar = CookieJar::new();
    let before = t(1_600_000_000); // 2020-09-13
    jar.store(
        b"lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT",
        "example.com",
        b"/",
        before,
    );
    assert_eq!(
        header(&jar, "example.com", "/", false, before),
        "lang=en-US"
    );
    let after = t(1_623_233_894); // 2021-06-09T10:18:14Z exactly: expired
    assert_eq!(header(&jar, "example.com", "/", false, after), "");
    jar.store(
        b"lang=; Expires=Sun, 06 Nov 1994 08:49:37 GMT",
        "example.com",
        b"/",
        before,
    );
    assert!(jar.is_empty());
}

#[test]
fn cookie_dates() {
    let date = |s: &str| {
        parse_cookie_date(s.as_bytes()).map(|t| {
            t.duration_since(UNIX_EPOCH)
                .map_or(-1, |d| d.as_secs() as i64)
        })
    };
    assert_eq!(date("Wed, 09 Jun 2021 10:18:14 GMT"), Some(1_623_233_894));
    assert_eq!(date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
    // RFC 850 and asctime forms, two-digit years, odd delimiters.
    assert_eq!(date("Sunday, 06-Nov-94 08:49:37 GMT"), Some(784_111_777));
    assert_eq!(date("Sun Nov  6 08:49:37 1994"), Some(784_111_777));
    assert_eq!(date("06 november 1994 8:49:37"), Some(784_111_777));
    assert_eq!(date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(date("Fri, 01 Jan 2038 00:00:00 GMT"), Some(2_145_916_800));
    assert_eq!(date("Mon, 01 Jan 69 00:00:00 GMT"), Some(3_124_224_000)); // 2069
    assert_eq!(date("Tue, 29 Feb 2000 12:00:00 GMT"), Some(951_825_600));
    assert_eq!(date("Mon, 01 Jan 1900 00:00:00 GMT"), Some(-1)); // before the epoch
    for bad in [
        "",
        "garbage",
        "Wed, 09 Jun 2021 GMT",       // no time
        "Wed, 09 2021 10:18:14 GMT",  // no month
        "Wed, 32 Jun 2021 10:18:14",  // day
        "Wed, 31 Jun 2021 10:18:14",  // 30 days in June
        "Wed, 29 Feb 2021 10:18:14",  // not a leap year
        "Wed, 09 Jun 2021 24:00:00",  // hour
        "Wed, 09 Jun 2021 10:60:00",  // minute
        "Wed, 09 Jun 1600 10:00:00",  // before 1601
        "Wed, 09 Jun 12345 10:00:00", // 5-digit year
    ] {
        assert_eq!(date(bad), None, "{bad:?}");
    }
}

#[test]
fn max_age_wins_and_deletes() {
    let mut jar = CookieJar::new();
    // Max-Age wins over Expires, in either order.
    store(
        &mut jar,
        "a=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=60",
        "h.test",
        "/",
    );
    store(
        &mut jar,
        "b=2; Max-Age=60; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
        "h.test",
        "/",
    );
    assert_eq!(get(&jar, "h.test", "/"), "a=1; b=2");
    assert_eq!(header(&jar, "h.test", "/", false, t(NOW + 59)), "a=1; b=2");
    assert_eq!(header(&jar, "h.test", "/", false, t(NOW + 60)), "");
    // Max-Age=0 and negative delete.
    store(&mut jar, "a=x; Max-Age=0", "h.test", "/");
    assert_eq!(get(&jar, "h.test", "/"), "b=2");
    store(&mut jar, "b=x; Max-Age=-1", "h.test", "/");
    assert!(jar.is_empty());
    // An invalid Max-Age is ignored (session cookie); a huge one doesn't overflow.
    store(&mut jar, "c=3; Max-Age=soon", "h.test", "/");
    store(
        &mut jar,
        "d=4; Max-Age=99999999999999999999999",
        "h.test",
        "/",
    );
    assert_eq!(
        header(&jar, "h.test", "/", false, t(NOW + 1_000_000_000)),
        "c=3; d=4"
    );
    // An invalid Expires is ignored too.
    store(&mut jar, "e=5; Expires=never", "h.test", "/");
    assert_eq!(get(&jar, "h.test", "/"), "c=3; d=4; e=5");
    jar.clear();
    assert!(jar.is_empty());
    assert_eq!(get(&jar, "h.test", "/"), "");
}

#[test]
fn replace_keeps_creation_order() {
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1", "h.test", "/");
    store(&mut jar, "b=2", "h.test", "/");
    store(&mut jar, "a=3", "h.test", "/");
    assert_eq!(get(&jar, "h.test", "/"), "a=3; b=2");
    assert_eq!(jar.len(), 2);
    // Same name, other path: another cookie.
    store(&mut jar, "a=4; Path=/docs", "h.test", "/");
    assert_eq!(get(&jar, "h.test", "/docs/x"), "a=4; a=3; b=2");
    // Same name and path, host-only vs domain cookie of the same domain: replaced.
    store(&mut jar, "b=5; Domain=h.test", "h.test", "/");
    assert_eq!(get(&jar, "h.test", "/"), "a=3; b=5");
    assert_eq!(get(&jar, "www.h.test", "/"), "b=5");
}

#[test]
fn paths() {
    let mut jar = CookieJar::new();
    store(&mut jar, "root=1; Path=/", "h.test", "/");
    store(&mut jar, "docs=1; Path=/docs", "h.test", "/");
    store(&mut jar, "slash=1; Path=/docs/", "h.test", "/");
    assert_eq!(get(&jar, "h.test", "/docs"), "docs=1; root=1");
    assert_eq!(get(&jar, "h.test", "/docs/"), "slash=1; docs=1; root=1");
    assert_eq!(
        get(&jar, "h.test", "/docs/a/b?x=/y"),
        "slash=1; docs=1; root=1"
    );
    assert_eq!(get(&jar, "h.test", "/docsx"), "root=1");
    assert_eq!(get(&jar, "h.test", "/doc"), "root=1");
    assert_eq!(get(&jar, "h.test", "/DOCS"), "root=1"); // case-sensitive
    assert_eq!(get(&jar, "h.test", "/docs?q"), "docs=1; root=1");

    // Default path: the request path up to its last '/'.
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1", "h.test", "/app/login?next=/x/y");
    store(&mut jar, "b=1; Path=relative", "h.test", "/app/sub/page");
    store(&mut jar, "c=1; Path=", "h.test", "/top");
    store(&mut jar, "d=1", "h.test", "");
    let paths: Vec<&[u8]> = jar.iter().map(|(_, _, _, p)| p).collect();
    assert_eq!(paths, [&b"/app/sub"[..], b"/app", b"/", b"/"]);
    assert_eq!(get(&jar, "h.test", "/app/sub/x"), "b=1; a=1; c=1; d=1");
    assert_eq!(get(&jar, "h.test", "/app"), "a=1; c=1; d=1");
    assert_eq!(get(&jar, "h.test", "/"), "c=1; d=1");
    assert_eq!(get(&jar, "h.test", ""), "c=1; d=1");
}

#[test]
fn sending_order_longer_paths_first_then_creation() {
    let mut jar = CookieJar::new();
    store(&mut jar, "z=1; Path=/", "h.test", "/");
    store(&mut jar, "y=1; Path=/a/b", "h.test", "/");
    store(&mut jar, "x=1; Path=/a", "h.test", "/");
    store(&mut jar, "w=1; Path=/a/b", "h.test", "/");
    store(&mut jar, "v=1; Path=/", "h.test", "/");
    assert_eq!(get(&jar, "h.test", "/a/b/c"), "y=1; w=1; x=1; z=1; v=1");
}

#[test]
fn domains() {
    let mut jar = CookieJar::new();
    // Leading dot ignored, case folded; sent to the domain and its subdomains only.
    store(&mut jar, "a=1; Domain=.Example.COM", "www.example.com", "/");
    assert_eq!(get(&jar, "example.com", "/"), "a=1");
    assert_eq!(get(&jar, "a.b.example.com", "/"), "a=1");
    assert_eq!(get(&jar, "WWW.Example.Com", "/"), "a=1");
    assert_eq!(get(&jar, "badexample.com", "/"), "");
    assert_eq!(get(&jar, "example.org", "/"), "");
    // A Domain the host doesn't domain-match: ignored.
    store(&mut jar, "b=1; Domain=other.com", "www.example.com", "/");
    store(&mut jar, "c=1; Domain=www.example.com", "example.com", "/");
    store(&mut jar, "d=1; Domain=ample.com", "example.com", "/");
    assert_eq!(jar.len(), 1);
    // Public-suffix-like single labels: refused, except the host itself (host-only).
    store(&mut jar, "e=1; Domain=com", "example.com", "/");
    assert_eq!(jar.len(), 1);
    let mut jar = CookieJar::new();
    store(&mut jar, "f=1; Domain=localhost", "localhost", "/");
    assert_eq!(get(&jar, "localhost", "/"), "f=1");
    assert_eq!(get(&jar, "x.localhost", "/"), "");
    // An empty Domain attribute is ignored (host-only).
    let mut jar = CookieJar::new();
    store(&mut jar, "g=1; Domain=", "example.com", "/");
    assert_eq!(get(&jar, "www.example.com", "/"), "");
    assert_eq!(get(&jar, "example.com", "/"), "g=1");
    // The last Domain attribute wins.
    store(
        &mut jar,
        "h=1; Domain=nope.org; Domain=example.com",
        "example.com",
        "/",
    );
    assert_eq!(get(&jar, "www.example.com", "/"), "h=1");
}

#[test]
fn ip_hosts_are_host_only() {
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1", "127.0.0.1", "/");
    store(&mut jar, "b=1; Domain=127.0.0.1", "127.0.0.1", "/");
    store(&mut jar, "c=1; Domain=0.0.1", "127.0.0.1", "/");
    store(&mut jar, "d=1; Domain=1", "127.0.0.1", "/");
    assert_eq!(get(&jar, "127.0.0.1", "/"), "a=1; b=1");
    assert!(jar.iter().all(|(_, _, d, _)| d == "127.0.0.1"));
    assert_eq!(get(&jar, "127.0.0.2", "/"), "");
    assert_eq!(get(&jar, "x.127.0.0.1", "/"), "");
    store(&mut jar, "v6=1", "[::1]", "/");
    assert_eq!(get(&jar, "[::1]", "/"), "v6=1");
    // A domain cookie for a name never matches an IP host.
    let mut jar = CookieJar::new();
    store(&mut jar, "e=1; Domain=0.1", "10.0.0.1", "/");
    assert!(jar.is_empty());
}

#[test]
fn parsing_edge_cases() {
    let mut jar = CookieJar::new();
    for ignored in [
        "",
        "novalue",
        "=value",
        " = x",
        "bad\u{1}name=1",
        "n=bad\u{7f}value",
    ] {
        store(&mut jar, ignored, "h.test", "/");
    }
    assert!(jar.is_empty());
    // Whitespace trimmed; '=' in the value kept; quotes kept; unknown attributes ignored;
    // attribute names case-insensitive.
    store(&mut jar, "  sp  =  a b  ; SECURE ; foo=bar", "h.test", "/");
    store(&mut jar, "eq=a=b==; HttpOnly", "h.test", "/");
    store(&mut jar, "q=\"quoted\"", "h.test", "/");
    store(&mut jar, "empty=", "h.test", "/");
    assert_eq!(
        header(&jar, "h.test", "/", true, t(NOW)),
        "sp=a b; eq=a=b==; q=\"quoted\"; empty="
    );
    assert_eq!(get(&jar, "h.test", "/"), "eq=a=b==; q=\"quoted\"; empty=");
    // Too large.
    let big = format!("big={}", "x".repeat(5000));
    store(&mut jar, &big, "h.test", "/");
    assert_eq!(jar.len(), 4);
}

#[test]
fn limits_evict_the_oldest() {
    let mut jar = CookieJar::new();
    for i in 0..60 {
        store(&mut jar, &format!("c{i}={i}"), "h.test", "/");
    }
    assert_eq!(jar.len(), PER_DOMAIN);
    let first = jar.iter().next().unwrap().0.to_vec();
    assert_eq!(first, b"c10");
    // Another domain is not affected.
    store(&mut jar, "o=1", "other.test", "/");
    assert_eq!(jar.len(), PER_DOMAIN + 1);
}

#[test]
fn empty_jar_writes_nothing() {
    let jar = CookieJar::new();
    let mut out = b"keep".to_vec();
    assert!(!jar.header_value("h.test", b"/", true, t(NOW), &mut out));
    assert_eq!(out, b"keep");
    // A jar whose cookies don't apply writes nothing either.
    let mut jar = CookieJar::new();
    store(&mut jar, "a=1; Path=/x", "h.test", "/");
    assert!(!jar.header_value("h.test", b"/", true, t(NOW), &mut out));
    assert_eq!(out, b"keep");
}
