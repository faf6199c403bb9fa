//! `Connection::send_prepared` against `Connection::send`, over the same scripted stream.

use super::*;
use crate::PreparedRequest;

/// What a send left: the bytes written, their count, and the response's framing.
type Sent = (Vec<u8>, usize, u64, u16, u64, bool);

async fn sent(req: &Request<'_>, prepared: bool, response: &[u8]) -> Sent {
    let mut conn = Connection::new(Mock::answering([[response]]));
    let r = if prepared {
        let p = PreparedRequest::new(req).expect("preparable");
        conn.send_prepared(&p, &mut Discard).await.unwrap()
    } else {
        conn.send(req, &mut Discard).await.unwrap()
    };
    let io = &conn.io;
    let writes = io.writes;
    (
        io.written.clone(),
        writes,
        r.bytes_out,
        r.status,
        r.body_bytes,
        r.keep_alive,
    )
}

#[tokio::test]
async fn a_prepared_request_goes_out_as_send_would_write_it() {
    let body = vec![b'b'; 16 * 1024];
    let mut cases: Vec<(Request<'_>, &[u8])> = vec![
        (get("GET"), OK2),
        // A HEAD's response has no body, whatever its Content-Length says.
        (get("HEAD"), b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"),
        (get("POST"), OK2),
        (get("DELETE"), OK2),
    ];
    let mut r = get("PUT");
    r.body = RequestBody::Bytes(&body);
    r.headers = b"X-A: 1\r\nX-B: 2\r\n";
    cases.push((r, OK2));
    let mut r = get("DELETE");
    r.body = RequestBody::Bytes(b"");
    cases.push((r, OK2));
    // `Connection: close`: the connection is not kept.
    let mut r = get("GET");
    r.close = true;
    cases.push((
        r,
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
    ));
    for (req, response) in &cases {
        let by_send = sent(req, false, response).await;
        let by_prepared = sent(req, true, response).await;
        assert_eq!(by_prepared, by_send, "{} {:?}", req.method, req.body);
        assert_eq!(by_prepared.1, 1, "one write");
        assert_eq!(by_prepared.2, by_prepared.0.len() as u64, "bytes_out");
    }
    assert!(!sent(&cases[6].0, true, cases[6].1).await.5, "close");
    assert_eq!(sent(&cases[1].0, true, cases[1].1).await.4, 0, "HEAD");
}

#[tokio::test]
async fn a_prepared_request_is_sent_again_and_again_on_a_kept_connection() {
    let req = get("GET");
    let p = PreparedRequest::new(&req).unwrap();
    let mut conn = Connection::new(Mock::answering([[OK2]; 3]));
    for i in 1..=3 {
        let r = conn.send_prepared(&p, &mut Discard).await.unwrap();
        assert_eq!((r.status, r.body_bytes, r.keep_alive), (200, 2, true));
        assert_eq!(conn.io.written, p.bytes().repeat(i));
    }
    // The connection's rules are send's: a closed one refuses, and a reset before the
    // response on a reused one is stale.
    let e = conn.send_prepared(&p, &mut Discard).await.unwrap_err();
    assert!(e.is_stale_reuse(), "{e}");
    let e = conn.send_prepared(&p, &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
}

#[test]
fn what_send_would_refuse_or_write_apart_is_not_prepared() {
    let mut req = get("GET");
    req.target = b"/a b";
    assert!(
        PreparedRequest::new(&req).is_none(),
        "invalid: send fails it"
    );
    let mut req = get("POST");
    let big = vec![0u8; 16 * 1024 + 1];
    req.body = RequestBody::Bytes(&big);
    assert!(
        PreparedRequest::new(&req).is_none(),
        "head and body in two writes"
    );
    req.body = RequestBody::File(std::path::Path::new("/dev/null"));
    assert!(PreparedRequest::new(&req).is_none());
}
