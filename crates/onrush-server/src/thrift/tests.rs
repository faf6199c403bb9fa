//! A connection's message handling without sockets: every protocol × transport, multiplexed
//! names, oneway, unknown methods and bad input. The socket path is tested end to end by the
//! CLI's `builtin` suite (onrush as the client) and Apache's Python library.

use onrush_thrift::wire::{message, ttype, Decoder, Encoder, Protocol};

use super::*;

fn call(
    proto: Protocol,
    transport: Transport,
    name: &str,
    kind: u8,
    args: &[(i16, Val)],
) -> Vec<u8> {
    let (mut out, mut stack) = (Vec::new(), Vec::new());
    if transport == Transport::Framed {
        out.extend_from_slice(&[0; 4]);
    }
    let mut e = Encoder::new(proto, &mut out, &mut stack);
    e.message_begin(name.as_bytes(), kind, 7);
    write_struct(&mut e, args);
    if transport == Transport::Framed {
        let len = (out.len() - 4) as u32;
        out[..4].copy_from_slice(&len.to_be_bytes());
    }
    out
}

/// Feeds `input` to a fresh connection; returns what it answered and whether it stayed open.
fn feed(calc: &Calculator, transport: Transport, input: &[u8]) -> (Vec<u8>, bool) {
    let shared = Shared::new(1);
    let mut conn = Conn {
        calc,
        out: Vec::new(),
        stack: Vec::new(),
        log: Log::default(),
    };
    let mut start = 0;
    loop {
        match conn.next(transport, &input[start..], &shared, 0) {
            Ok(Some(used)) => start += used,
            Ok(None) => return (conn.out, true),
            Err(()) => return (conn.out, false),
        }
    }
}

/// Decodes a reply's header and result struct.
fn reply(proto: Protocol, transport: Transport, bytes: &[u8]) -> (String, u8, Val) {
    let body = match transport {
        Transport::Framed => {
            let len = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
            assert_eq!(len + 4, bytes.len(), "one frame");
            &bytes[4..]
        }
        Transport::Buffered => bytes,
    };
    let mut d = Decoder::new(proto, body);
    let h = d.message_begin().unwrap();
    assert_eq!(h.seqid, 7);
    let v = read_struct(&mut d, 0).unwrap();
    assert_eq!(d.position(), body.len());
    (String::from_utf8(h.name.to_vec()).unwrap(), h.kind, v)
}

#[test]
fn every_protocol_and_transport_and_multiplexed() {
    let calc = Calculator::load().unwrap();
    for proto in [Protocol::Binary, Protocol::Compact] {
        for transport in [Transport::Framed, Transport::Buffered] {
            for name in ["add", "Calculator:add"] {
                let args = [(1, Val::I32(40)), (2, Val::I32(2))];
                let input = call(proto, transport, name, message::CALL, &args);
                let (out, open) = feed(&calc, transport, &input);
                assert!(open);
                let (name, kind, v) = reply(proto, transport, &out);
                assert_eq!((name.as_str(), kind), ("add", message::REPLY));
                assert_eq!(
                    v,
                    Val::Struct(vec![(0, Val::I32(42))]),
                    "{proto:?} {transport:?}"
                );
            }
        }
    }
}

#[test]
fn pipelined_calls_oneway_and_exceptions() {
    let calc = Calculator::load().unwrap();
    let (p, t) = (Protocol::Compact, Transport::Buffered);
    let mut input = call(p, t, "zip", message::ONEWAY, &[(1, Val::I32(1))]);
    input.extend(call(p, t, "ping", message::CALL, &[]));
    let (out, open) = feed(&calc, t, &input);
    assert!(open);
    // Only ping is answered: an empty result struct.
    assert_eq!(
        reply(p, t, &out),
        ("ping".into(), message::REPLY, Val::Struct(vec![]))
    );

    let work = Val::Struct(vec![(1, Val::I32(1)), (2, Val::I32(0)), (3, Val::I32(4))]);
    let input = call(
        p,
        t,
        "calculate",
        message::CALL,
        &[(1, Val::I32(1)), (2, work)],
    );
    let (_, kind, v) = reply(p, t, &feed(&calc, t, &input).0);
    assert_eq!(kind, message::REPLY);
    assert_eq!(
        v.field(1).and_then(|ex| ex.field(2)),
        Some(&Val::Bytes(b"Cannot divide by 0".to_vec()))
    );

    let (out, open) = feed(&calc, t, &call(p, t, "divide", message::CALL, &[]));
    assert!(
        open,
        "an unknown method is answered, the connection goes on"
    );
    let (_, kind, v) = reply(p, t, &out);
    assert_eq!(kind, message::EXCEPTION);
    assert_eq!(v.int(2), Some(UNKNOWN_METHOD as i64));
}

#[test]
fn summarize_fills_every_stats_field() {
    let calc = Calculator::load().unwrap();
    let (p, t) = (Protocol::Binary, Transport::Framed);
    let w = |a, b, op, c: Option<&str>| {
        let mut f = vec![(1, Val::I32(a)), (2, Val::I32(b)), (3, Val::I32(op))];
        if let Some(c) = c {
            f.push((4, Val::Bytes(c.into())));
        }
        Val::Struct(f)
    };
    let args = [
        (
            1,
            Val::List(
                ttype::STRUCT,
                vec![w(1, 2, 1, None), w(3, 4, 3, Some("big"))],
            ),
        ),
        (
            2,
            Val::Map(
                ttype::STRING,
                ttype::I32,
                vec![
                    (Val::Bytes(b"a".to_vec()), Val::I32(1)),
                    (Val::Bytes(b"b".to_vec()), Val::I32(2)),
                ],
            ),
        ),
        (3, Val::Bool(true)),
    ];
    let (_, _, v) = reply(
        p,
        t,
        &feed(&calc, t, &call(p, t, "summarize", message::CALL, &args)).0,
    );
    let stats = v.field(0).unwrap();
    assert_eq!(
        stats.field(1),
        Some(&Val::List(ttype::I64, vec![Val::I64(3), Val::I64(12)]))
    );
    assert_eq!(
        stats.field(3),
        Some(&Val::set(ttype::STRING, vec![Val::Bytes(b"big".to_vec())]))
    );
    assert_eq!(stats.field(4), Some(&Val::Bool(true)));
    assert_eq!(stats.field(5), Some(&Val::Double(1.5)));
    assert_eq!(stats.int(6), Some(3));
}

#[test]
fn bad_input_closes_the_connection() {
    let calc = Calculator::load().unwrap();
    let framed = |payload: &[u8]| {
        let mut v = (payload.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(payload);
        v
    };
    // Garbage after a Thrift-looking prefix, in a frame and buffered.
    let garbage = [0x80, 0x01, 0x00, 0x01, 0xff, 0xff, 0xff, 0xf0, 1, 2, 3];
    assert_eq!(
        feed(&calc, Transport::Framed, &framed(&garbage)),
        (vec![], false)
    );
    assert_eq!(feed(&calc, Transport::Buffered, &garbage), (vec![], false));
    // A frame over the limit, zero or negative: closed on its length alone.
    let big = ((MAX_MESSAGE + 1) as u32).to_be_bytes();
    assert_eq!(feed(&calc, Transport::Framed, &big), (vec![], false));
    assert_eq!(
        feed(&calc, Transport::Framed, &[0, 0, 0, 0]),
        (vec![], false)
    );
    assert_eq!(feed(&calc, Transport::Framed, &[0xff; 4]), (vec![], false));
    // A frame whose payload is not a Thrift message, or holds more than one message.
    assert_eq!(
        feed(&calc, Transport::Framed, &framed(b"hello")),
        (vec![], false)
    );
    let mut two = call(
        Protocol::Binary,
        Transport::Buffered,
        "ping",
        message::CALL,
        &[],
    );
    two.extend(two.clone());
    assert!(!feed(&calc, Transport::Framed, &framed(&two)).1);
    // A reply sent to the server is not a call.
    let r = call(
        Protocol::Binary,
        Transport::Buffered,
        "ping",
        message::REPLY,
        &[],
    );
    assert_eq!(feed(&calc, Transport::Buffered, &r), (vec![], false));
    // A buffered message that never ends: waited for up to MAX_MESSAGE bytes, then closed.
    let mut endless = call(
        Protocol::Binary,
        Transport::Buffered,
        "add",
        message::CALL,
        &[],
    );
    endless.pop(); // the stop byte
    endless.extend_from_slice(&[ttype::STRING, 0, 9, 0x7f, 0, 0, 0]);
    assert_eq!(feed(&calc, Transport::Buffered, &endless), (vec![], true));
    endless.resize(MAX_MESSAGE + 10, b'x');
    assert_eq!(feed(&calc, Transport::Buffered, &endless), (vec![], false));
    // What came before a bad message is answered.
    let mut input = call(
        Protocol::Binary,
        Transport::Framed,
        "ping",
        message::CALL,
        &[],
    );
    input.extend(framed(b"junk!"));
    let (out, open) = feed(&calc, Transport::Framed, &input);
    assert!(!open);
    assert_eq!(
        reply(Protocol::Binary, Transport::Framed, &out).1,
        message::REPLY
    );
}
