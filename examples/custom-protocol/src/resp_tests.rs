use super::*;
use std::io::{Read, Write};

fn lim() -> Limits {
    Limits::default()
}

fn json(reply: &[u8]) -> String {
    let mut out = Vec::new();
    write_json(reply, &mut out);
    String::from_utf8(out).unwrap()
}

/// Valid replies (one of every type and then some) and their JSON.
#[rustfmt::skip]
const VALID: &[(&[u8], &str)] = &[
    (b"+OK\r\n", r#""OK""#), (b"+\r\n", r#""""#), (b"+caf\xc3\xa9\r\n", "\"caf\u{e9}\""),
    (b"-ERR no\r\n", r#"{"error":"ERR no"}"#),
    (b":0\r\n", "0"), (b":-42\r\n", "-42"),
    (b":-9223372036854775808\r\n", "-9223372036854775808"),
    (b":9223372036854775807\r\n", "9223372036854775807"),
    (b"$5\r\nhello\r\n", r#""hello""#), (b"$4\r\na\r\nb\r\n", r#""a\r\nb""#), (b"$0\r\n\r\n", r#""""#),
    (b"$6\r\n\"\\\t\x01\x1f\x7f\r\n", "\"\\\"\\\\\\t\\u0001\\u001f\x7f\""),
    (b"$4\r\na\xffb\xc3\r\n", "\"a\u{FFFD}b\u{FFFD}\""),
    (b"$-1\r\n", "null"), (b"*-1\r\n", "null"), (b"_\r\n", "null"), (b"*0\r\n", "[]"),
    (b"*3\r\n:1\r\n$1\r\na\r\n*2\r\n$-1\r\n*0\r\n", r#"[1,"a",[null,[]]]"#),
    (b"*2\r\n+OK\r\n-WRONGTYPE x\r\n", r#"["OK",{"error":"WRONGTYPE x"}]"#),
    (b"#t\r\n", "true"), (b"#f\r\n", "false"),
    (b",1.5\r\n", "1.5"), (b",3\r\n", "3.0"), (b",-2.5e-3\r\n", "-0.0025"), (b",.5\r\n", "0.5"),
    (b",1e300\r\n", "1e300"), (b",inf\r\n", r#""inf""#), (b",-inf\r\n", r#""-inf""#),
    (b",nan\r\n", r#""nan""#),
    (b"(3492890328409238509324850943850943825024385\r\n", r#""3492890328409238509324850943850943825024385""#),
    (b"(-1\r\n", r#""-1""#),
    (b"=15\r\ntxt:Some string\r\n", r#""Some string""#), (b"=4\r\nmkd:\r\n", r#""""#),
    (b"!21\r\nSYNTAX invalid syntax\r\n", r#"{"error":"SYNTAX invalid syntax"}"#),
    (b"*2\r\n!3\r\nERR\r\n_\r\n", r#"[{"error":"ERR"},null]"#),
    (b"%2\r\n+a\r\n:1\r\n$1\r\nb\r\n#f\r\n", r#"{"a":1,"b":false}"#), (b"%0\r\n", "{}"),
    // Map keys that are not strings become strings holding their JSON.
    (b"%5\r\n:1\r\n+a\r\n*2\r\n:2\r\n+x\r\n+b\r\n_\r\n+c\r\n-E k\r\n+d\r\n$1\r\n\"\r\n+e\r\n",
     r#"{"1":"a","[2,\"x\"]":"b","null":"c","{\"error\":\"E k\"}":"d","\"":"e"}"#),
    (b"~2\r\n+x\r\n,2\r\n", r#"["x",2.0]"#),
    (b">3\r\n+message\r\n+ch\r\n$2\r\nhi\r\n", r#"["message","ch","hi"]"#),
    // Attributes count in the frame but are left out of the JSON.
    (b"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.19\r\n$1\r\nb\r\n,0.05\r\n*2\r\n:2039\r\n:9543\r\n",
     "[2039,9543]"),
    (b"*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n", "[1,2]"),
    (b"|0\r\n|1\r\n+a\r\n+b\r\n+OK\r\n", r#""OK""#),
    (b"|1\r\n+a\r\n-ERR b\r\n-ERR c\r\n", r#"{"error":"ERR c"}"#),
];

#[test]
fn every_type_and_every_split_point() {
    for &(raw, want) in VALID {
        let show = String::from_utf8_lossy(raw);
        for i in 0..raw.len() {
            assert_eq!(scan(&raw[..i], &lim()), Ok(None), "prefix {i} of {show:?}");
        }
        let frame = scan(raw, &lim()).unwrap().unwrap();
        assert_eq!(frame.len, raw.len(), "{show:?}");
        let more = [raw, b"+next\r\n"].concat();
        assert_eq!(scan(&more, &lim()), Ok(Some(frame)), "{show:?}");
        assert_eq!(json(raw), want, "{show:?}");
    }
}

#[test]
fn top_level_errors() {
    let err = |raw: &[u8]| scan(raw, &lim()).unwrap().unwrap().error;
    assert_eq!(err(b"-ERR no\r\n"), Some(1..7));
    assert_eq!(err(b"!21\r\nSYNTAX invalid syntax\r\n"), Some(5..26));
    assert_eq!(err(b"|1\r\n+a\r\n-ERR b\r\n-ERR c\r\n"), Some(17..22));
    assert_eq!(err(b"*2\r\n+OK\r\n-WRONGTYPE x\r\n"), None, "nested");
    assert_eq!(err(b"+ERR\r\n"), None);
    assert_eq!(error_kind(b"ERR unknown command"), b"ERR");
    assert_eq!(error_kind(b"MOVED 3999 127.0.0.1:6381"), b"MOVED");
    assert_eq!(error_kind(b"NOAUTH"), b"NOAUTH");
    assert_eq!(error_kind(b"SYNTAX\nx"), b"SYNTAX");
    assert_eq!(error_kind(b""), b"");
}

const SMALL: Limits = Limits {
    max_bulk: 4,
    max_elements: 2,
    max_depth: 2,
};
const HUGE: Limits = Limits {
    max_bulk: usize::MAX,
    max_elements: usize::MAX,
    max_depth: usize::MAX,
};
const DEPTH1: Limits = Limits {
    max_depth: 1,
    ..SMALL
};
/// What `scan` says, with a frame reduced to its length.
type Scanned = Result<Option<usize>, RespError>;

const fn too_large(what: &'static str) -> Scanned {
    Err(RespError::TooLarge { offset: 4, what })
}

/// Input, limits, and what `scan` must say (the frame's length).
#[rustfmt::skip]
const LIMITED: &[(&[u8], Limits, Scanned)] = &[
    (b"$4\r\nabcd\r\n", SMALL, Ok(Some(10))),
    // Limits apply as soon as a header is complete, before its payload arrives.
    (b"*1\r\n$5\r\n", SMALL, too_large("bulk string")),
    (b"*1\r\n!5\r\n", SMALL, too_large("bulk string")),
    (b"*1\r\n*3\r\n", SMALL, too_large("aggregate")),
    (b"*1\r\n%3\r\n", SMALL, too_large("aggregate")),
    // A simple line that never ends cannot grow the buffer forever.
    (b"*1\r\n+abcde", SMALL, too_large("line")),
    (b"*1\r\n*1\r\n*1\r\n", SMALL, Err(RespError::TooDeep { offset: 8 })),
    (b"*1\r\n*1\r\n*0\r\n", SMALL, Ok(Some(12))),
    // An attribute closes before the array it annotates opens.
    (b"|1\r\n+a\r\n+b\r\n*1\r\n:1\r\n", DEPTH1, Ok(Some(20))),
    (b"*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", DEPTH1, Err(RespError::TooDeep { offset: 4 })),
    // Lengths near i64::MAX must not overflow anything.
    (b"$9223372036854775807\r\n", HUGE, Ok(None)),
    (b"*1\r\n%9223372036854775807\r\n", HUGE, Ok(None)),
];

#[test]
fn limits() {
    for (raw, limits, want) in LIMITED {
        let got = scan(raw, limits).map(|f| f.map(|f| f.len));
        assert_eq!(&got, want, "{:?}", String::from_utf8_lossy(raw));
    }
    let nested = b"*1\r\n".repeat(200);
    let deep = |limits| scan(&nested, &limits).unwrap_err();
    assert_eq!(deep(lim()), RespError::TooDeep { offset: 32 * 4 });
    assert_eq!(
        deep(HUGE),
        RespError::TooDeep { offset: 128 * 4 },
        "hard cap"
    );
    assert_eq!(lim().max_bulk, 512 * 1024 * 1024);
}

#[rustfmt::skip]
const MALFORMED: &[&[u8]] = &[
    b"?", b"x\r\n", b"\r\n", b"*?\r\n", b"$?\r\n", b"~?\r\n", b";4\r\n", b"$-2\r\n", b"*-2\r\n",
    b"%-1\r\n", b"~-1\r\n", b"!-1\r\n", b"=-1\r\n", b"$\r\n", b"$+1\r\n", b"$1 \r\n", b":\r\n",
    b":-\r\n", b":+1\r\n", b":1.5\r\n", b":9223372036854775808\r\n", b":-9223372036854775809\r\n",
    b"#x\r\n", b"#\r\n", b"#tt\r\n", b"_x\r\n", b",abc\r\n", b",\r\n", b"(12a\r\n", b"(\r\n",
    b"(-\r\n", b"=3\r\ntxt\r\n", b"=4\r\ntxt;\r\n", b"$3\r\nabcXY", b"$3\r\nabc\rX", b"+a\rb",
    b"+a\nb\r\n", b"-a\n", b":1\rx", b"*2\r\n+ok\r\nX", b":123456789012345678901234567890123",
    b"$000000000000000000000000000000001\r\n",
];

#[test]
fn malformed() {
    for &case in MALFORMED {
        let got = scan(case, &lim());
        let ok = matches!(got, Err(RespError::Malformed { .. }));
        assert!(ok, "{case:?}: {got:?}");
    }
    let e = scan(b"*2\r\n:1\r\n#x\r\n", &lim()).unwrap_err();
    assert_eq!(e.to_string(), "malformed RESP at 8: invalid boolean");
    let e: Box<dyn std::error::Error> = Box::new(RespError::TooDeep { offset: 3 });
    assert_eq!(e.to_string(), "RESP nesting over limit at 3");
    // Garbage after a complete reply is the next reply's problem.
    assert_eq!(scan(b"+a\r\n?", &lim()).unwrap().unwrap().len, 4);
    // write_json on what scan rejects still writes JSON.
    assert_eq!(json(b"*2\r\n:1\r\n"), "null");
    assert_eq!(json(b""), "null");
    // Hostile nesting needs no stack in scan and hits write_json's cap.
    assert_eq!(json(&b"*1\r\n".repeat(100_000)), "null");
    assert_eq!(scan(&b"|0\r\n".repeat(100_000), &lim()), Ok(None));
    assert_eq!(
        json(&[&b"|0\r\n".repeat(100_000)[..], b":1\r\n"].concat()),
        "1"
    );
}

#[test]
fn encode() {
    let mut out = b"x".to_vec();
    encode_command(&mut out, &[b"SET", b"k", b"", b"a\r\nb"]);
    assert_eq!(
        out,
        b"x*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$4\r\na\r\nb\r\n"
    );
    let mut again = b"x".to_vec();
    let rendered = b"SETka\r\nb";
    let ranges = [0..3, 3..4, 4..4, 4..8];
    encode_command_iter(&mut again, ranges.into_iter().map(|r| &rendered[r]));
    assert_eq!(again, out);
    out.clear();
    encode_command(&mut out, &[]);
    assert_eq!(out, b"*0\r\n");
    out.clear();
    encode_command(&mut out, &[&[7u8; 1234567][..]]);
    assert!(out.starts_with(b"*1\r\n$1234567\r\n\x07"));
    // A command is itself a RESP array, so scan frames it.
    assert_eq!(scan(&out, &lim()).unwrap().unwrap().len, out.len());
}

/// xorshift64: enough to spread test inputs, without a crate.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Appends one random valid reply (attributes included) to `out`.
fn gen(r: &mut Rng, depth: usize, out: &mut Vec<u8>) {
    match r.below(if depth < 4 { 8 } else { 2 }) {
        0 | 1 => out.extend_from_slice(VALID[r.below(VALID.len())].0),
        2 => {
            let bytes: Vec<u8> = (0..r.below(6))
                .map(|_| b"a\r\n\"\\\xff"[r.below(6)])
                .collect();
            out.extend_from_slice(format!("${}\r\n", bytes.len()).as_bytes());
            out.extend_from_slice(&bytes);
            out.extend_from_slice(b"\r\n");
        }
        k => {
            let (tag, n) = (b"*%~>|"[k - 3], r.below(4));
            out.extend_from_slice(format!("{}{n}\r\n", tag as char).as_bytes());
            let pairs = matches!(tag, b'%' | b'|');
            // An attribute is followed by the reply it annotates.
            for _ in 0..n * (1 + usize::from(pairs)) + usize::from(tag == b'|') {
                gen(r, depth + 1, out);
            }
        }
    }
}

#[test]
fn random_valid_replies() {
    let mut r = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..400 {
        let mut raw = Vec::new();
        gen(&mut r, 0, &mut raw);
        for i in 0..raw.len() {
            assert_eq!(scan(&raw[..i], &lim()), Ok(None));
        }
        assert_eq!(scan(&raw, &lim()).unwrap().unwrap().len, raw.len());
        assert!(json_value(&raw, &mut 0, &mut Vec::new(), 0).is_some());
    }
}

#[test]
fn fuzz_no_panic() {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let alphabet = b"+-:$*_#,(!=%~>|?;0123456789-1\r\n\r\ntfinax:";
    let small = Limits {
        max_bulk: 16,
        max_elements: 4,
        max_depth: 3,
    };
    for round in 0..30_000 {
        let mut buf = Vec::new();
        match round % 3 {
            0 => buf.extend((0..r.below(24)).map(|_| r.below(256) as u8)),
            1 => buf.extend((0..r.below(24)).map(|_| alphabet[r.below(alphabet.len())])),
            _ => {
                gen(&mut r, 0, &mut buf);
                for _ in 0..=r.below(3) {
                    let at = r.below(buf.len() + 1);
                    match r.below(4) {
                        0 => buf.truncate(at),
                        1 => buf.insert(at, alphabet[r.below(alphabet.len())]),
                        2 if at < buf.len() => buf[at] = r.below(256) as u8,
                        _ if at < buf.len() => _ = buf.remove(at),
                        _ => {}
                    }
                }
            }
        }
        for limits in [lim(), small] {
            match scan(&buf, &limits) {
                Ok(Some(f)) => {
                    assert!(f.len > 0 && f.len <= buf.len());
                    let error_ok = f.error.as_ref().is_none_or(|e| e.end < f.len);
                    assert!(error_ok && f.error.as_ref().is_none_or(|e| e.start <= e.end));
                    assert_eq!(scan(&buf[..f.len], &limits), Ok(Some(f.clone())));
                    let rendered = json_value(&buf[..f.len], &mut 0, &mut Vec::new(), 0);
                    assert!(rendered.is_some(), "scan took, write_json not: {buf:?}");
                }
                Ok(None) => {}
                Err(
                    RespError::Malformed { offset, .. }
                    | RespError::TooLarge { offset, .. }
                    | RespError::TooDeep { offset },
                ) => assert!(offset < buf.len()),
            }
        }
        let mut out = Vec::new();
        write_json(&buf, &mut out);
        assert!(std::str::from_utf8(&out).is_ok());
    }
}

/// Kills the redis-server child (by its PID) however the test ends.
struct Server(std::process::Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Commands in order, the reply's type byte, and its JSON (a trailing `...`: a prefix of it).
#[rustfmt::skip]
const SESSION: &[(&[&str], u8, &str)] = &[
    (&["SET", "k", "v\"\n"], b'+', r#""OK""#),
    (&["GET", "k"], b'$', r#""v\"\n""#),
    (&["INCR", "counter"], b':', "1"),
    (&["GET", "missing"], b'$', "null"),
    (&["LPUSH", "list", "a", "b", "c"], b':', "3"),
    (&["LRANGE", "list", "0", "-1"], b'*', r#"["c","b","a"]"#),
    (&["HSET", "h", "f1", "v1", "f2", "v2"], b':', "2"),
    (&["HGETALL", "h"], b'*', r#"["f1","v1","f2","v2"]"#),
    (&["BLPOP", "nolist", "0.01"], b'*', "null"),
    (&["GET", "list"], b'-', WRONGTYPE),
    (&["NOSUCHCMD", "x"], b'-', r#"{"error":"ERR unknown command 'NOSUCHCMD'..."#),
    (&["MULTI"], b'+', r#""OK""#),
    (&["INCR", "counter"], b'+', r#""QUEUED""#),
    (&["SET", "s", "x"], b'+', r#""QUEUED""#),
    (&["LPUSH", "k", "x"], b'+', r#""QUEUED""#),
    (&["EXEC"], b'*', r#"[2,"OK",{"error":"WRONGTYPE Operation against a key holding the wrong kind of value"}]"#),
    (&["HELLO", "3"], b'%', r#"{"server":"redis","version":"..."#),
    (&["HGETALL", "h"], b'%', r#"{"f1":"v1","f2":"v2"}"#),
    (&["GET", "missing"], b'_', "null"),
    (&["SADD", "set", "m1"], b':', "1"),
    (&["SMEMBERS", "set"], b'~', r#"["m1"]"#),
    (&["ZADD", "z", "1.5", "a", "inf", "b", "-inf", "c"], b':', "3"),
    (&["ZSCORE", "z", "a"], b',', "1.5"),
    (&["ZSCORE", "z", "b"], b',', r#""inf""#),
    (&["ZSCORE", "z", "c"], b',', r#""-inf""#),
    (&["CLIENT", "INFO"], b'=', r#""id=..."#),
    (&["EVAL", "redis.setresp(3); return true", "0"], b'#', "true"),
    (&["EVAL", "redis.setresp(3); return false", "0"], b'#', "false"),
    (&["EVAL", "redis.setresp(3); return {double=0.25}", "0"], b',', "0.25"),
    (&["EVAL", "redis.setresp(3); return {big_number='12345678901234567890123'}", "0"], b'(',
     r#""12345678901234567890123""#),
    (&["GET", "list"], b'-', WRONGTYPE),
    (&["SUBSCRIBE", "ch"], b'>', r#"["subscribe","ch",1]"#),
];
const WRONGTYPE: &str =
    r#"{"error":"WRONGTYPE Operation against a key holding the wrong kind of value"}"#;

#[test]
fn real_redis_server() {
    use std::time::{Duration, Instant};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener); // free the port for redis-server
    let child = std::process::Command::new("/usr/bin/redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start /usr/bin/redis-server");
    let _server = Server(child);
    let started = Instant::now();
    let mut sock = loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(e) if started.elapsed() > Duration::from_secs(10) => panic!("redis-server: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = Vec::new();
    for &(args, tag, want) in SESSION {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let mut cmd = Vec::new();
        encode_command(&mut cmd, &args);
        sock.write_all(&cmd).unwrap();
        let frame = loop {
            if let Some(frame) = scan(&buf, &lim()).unwrap() {
                break frame;
            }
            let mut chunk = [0u8; 4096];
            let n = sock.read(&mut chunk).unwrap();
            assert!(n > 0, "redis-server closed the connection");
            buf.extend_from_slice(&chunk[..n]);
        };
        let raw: Vec<u8> = buf.drain(..frame.len).collect();
        let got = json(&raw);
        let show = String::from_utf8_lossy(&raw);
        match want.strip_suffix("...") {
            Some(prefix) => assert!(got.starts_with(prefix), "{args:?}: {got}"),
            None => assert_eq!(got, want, "{args:?}: {show:?}"),
        }
        assert_eq!(raw[0], tag, "{args:?}: {show:?}");
        // Only a top-level error sets `error`, and its first word is the JSON's.
        assert_eq!(frame.error.is_some(), tag == b'-', "{args:?}");
        if let Some(text) = frame.error {
            let kind = String::from_utf8_lossy(error_kind(&raw[text])).into_owned();
            assert!(got.starts_with(&format!(r#"{{"error":"{kind} "#)), "{got}");
        }
    }
}
