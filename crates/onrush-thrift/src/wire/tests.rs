//! Byte vectors written by hand from the Thrift specifications
//! (doc/specs/thrift-binary-protocol.md and thrift-compact-protocol.md in Apache Thrift).

use super::*;

fn encode(proto: Protocol, f: impl FnOnce(&mut Encoder<'_>)) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = Vec::new();
    let mut e = Encoder::new(proto, &mut out, &mut stack);
    f(&mut e);
    out
}

#[test]
fn binary_message_header_and_fields() {
    let bytes = encode(Protocol::Binary, |e| {
        e.message_begin(b"add", message::CALL, 7);
        e.struct_begin();
        e.field_begin(ttype::I32, 1);
        e.i32(-2);
        e.field_begin(ttype::BOOL, 2);
        e.bool(true);
        e.field_begin(ttype::LIST, 3);
        e.list_begin(ttype::STRING, 1);
        e.binary(b"ab");
        e.field_begin(ttype::MAP, 4);
        e.map_begin(ttype::I16, ttype::DOUBLE, 1);
        e.i16(1);
        e.double(1.0);
        e.struct_end();
    });
    #[rustfmt::skip]
    let expected = vec![
        0x80, 0x01, 0x00, 0x01,             // version 1, type CALL
        0, 0, 0, 3, b'a', b'd', b'd',       // name
        0, 0, 0, 7,                         // seqid
        8, 0, 1, 0xff, 0xff, 0xff, 0xfe,    // i32 field 1 = -2
        2, 0, 2, 1,                         // bool field 2 = true
        15, 0, 3, 11, 0, 0, 0, 1, 0, 0, 0, 2, b'a', b'b', // list<string> ["ab"]
        13, 0, 4, 6, 4, 0, 0, 0, 1, 0, 1, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, // map<i16,double> {1: 1.0}
        0,                                  // stop
    ];
    assert_eq!(bytes, expected);
    let mut d = Decoder::new(Protocol::Binary, &bytes);
    let h = d.message_begin().unwrap();
    assert_eq!((h.name, h.kind, h.seqid), (&b"add"[..], message::CALL, 7));
    d.struct_begin();
    assert_eq!(d.field_begin().unwrap(), (ttype::I32, 1));
    assert_eq!(d.i32().unwrap(), -2);
    assert_eq!(d.field_begin().unwrap(), (ttype::BOOL, 2));
    assert!(d.bool().unwrap());
    assert_eq!(d.field_begin().unwrap(), (ttype::LIST, 3));
    assert_eq!(d.list_begin().unwrap(), (ttype::STRING, 1));
    assert_eq!(d.binary().unwrap(), b"ab");
    assert_eq!(d.field_begin().unwrap(), (ttype::MAP, 4));
    assert_eq!(d.map_begin().unwrap(), (ttype::I16, ttype::DOUBLE, 1));
    assert_eq!(d.i16().unwrap(), 1);
    assert_eq!(d.double().unwrap(), 1.0);
    assert_eq!(d.field_begin().unwrap().0, ttype::STOP);
    assert_eq!(d.position(), bytes.len());
}

#[test]
fn binary_truncated_needs_more_and_negative_size_is_malformed() {
    let mut d = Decoder::new(Protocol::Binary, &[0x80, 0x01, 0x00]);
    assert_eq!(d.message_begin(), Err(WireError::NeedMore));
    let mut d = Decoder::new(Protocol::Binary, &[11, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(d.list_begin(), Err(WireError::Malformed("a negative size")));
    let mut d = Decoder::new(Protocol::Binary, &[0x80, 0x02, 0, 1]);
    assert!(matches!(d.message_begin(), Err(WireError::Malformed(_))));
}

#[test]
fn compact_varint_zigzag() {
    // zigzag: 0 → 0, -1 → 1, 1 → 2, -2 → 3, 2147483647 → 4294967294
    assert_eq!(compact::zigzag(0), 0);
    assert_eq!(compact::zigzag(-1), 1);
    assert_eq!(compact::zigzag(1), 2);
    assert_eq!(compact::zigzag(-2), 3);
    assert_eq!(compact::zigzag(i32::MAX as i64), 4294967294);
    assert_eq!(compact::zigzag(i64::MIN), u64::MAX);
    // 300 as a varint: 0xAC 0x02 (LEB128)
    let bytes = encode(Protocol::Compact, |e| e.i64(150));
    assert_eq!(bytes, vec![0xac, 0x02]);
    let mut d = Decoder::new(Protocol::Compact, &bytes);
    assert_eq!(d.i64().unwrap(), 150);
    let bytes = encode(Protocol::Compact, |e| e.i64(i64::MIN));
    assert_eq!(bytes.len(), 10);
    assert_eq!(
        Decoder::new(Protocol::Compact, &bytes).i64().unwrap(),
        i64::MIN
    );
    // An 11-byte varint is malformed.
    let long = [0xff; 11];
    assert!(matches!(
        Decoder::new(Protocol::Compact, &long).i64(),
        Err(WireError::Malformed(_))
    ));
}

#[test]
fn compact_message_fields_bools_and_containers() {
    let bytes = encode(Protocol::Compact, |e| {
        e.message_begin(b"add", message::CALL, 300);
        e.struct_begin();
        e.field_begin(ttype::I32, 1); // delta 1: short form
        e.i32(-1);
        e.field_begin(ttype::BOOL, 2); // bool packed in the header
        e.bool(false);
        e.field_begin(ttype::STRING, 20); // delta 18: long form
        e.binary(b"x");
        e.field_begin(ttype::LIST, 21);
        e.list_begin(ttype::BOOL, 2);
        e.bool(true);
        e.bool(false);
        e.field_begin(ttype::LIST, 22);
        e.list_begin(ttype::BYTE, 15); // 15 elements: size in a varint
        for i in 0..15 {
            e.byte(i);
        }
        e.field_begin(ttype::MAP, 23);
        e.map_begin(ttype::STRING, ttype::I64, 1);
        e.binary(b"k");
        e.i64(1);
        e.field_begin(ttype::MAP, 24);
        e.map_begin(ttype::STRING, ttype::I64, 0);
        e.field_begin(ttype::STRUCT, 25);
        e.struct_begin();
        e.field_begin(ttype::DOUBLE, 1); // ids restart in a nested struct
        e.double(1.0);
        e.struct_end();
        e.field_begin(ttype::I16, 26); // and resume after it
        e.i16(3);
        e.struct_end();
    });
    #[rustfmt::skip]
    let mut expected = vec![
        0x82, 0x21,              // protocol id; version 1 | CALL << 5
        0xac, 0x02,              // seqid 300
        3, b'a', b'd', b'd',     // name
        0x15, 0x01,              // delta 1, i32; zigzag(-1)
        0x12,                    // delta 1, BOOLEAN_FALSE
        0x08, 0x28, 1, b'x',     // binary, id zigzag(20) = 40; "x"
        0x19, 0x21, 1, 2,        // delta 1, list; 2 x bool; true, false
        0x19, 0xf3, 15,          // delta 1, list; 15+ x byte; size 15
    ];
    expected.extend(0..15u8);
    #[rustfmt::skip]
    expected.extend_from_slice(&[
        0x1b, 0x01, 0x86, 1, b'k', 2, // delta 1, map; size 1; string→i64; "k" → 1
        0x1b, 0x00,              // empty map: one zero byte
        0x1c,                    // delta 1, struct
        0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // delta 1, double 1.0 little endian
        0x00,                    // nested stop
        0x14, 0x06,              // delta 1 from 25, i16 zigzag(3)
        0x00,
    ]);
    assert_eq!(bytes, expected);

    let mut d = Decoder::new(Protocol::Compact, &bytes);
    let h = d.message_begin().unwrap();
    assert_eq!((h.name, h.kind, h.seqid), (&b"add"[..], message::CALL, 300));
    d.struct_begin();
    assert_eq!(d.field_begin().unwrap(), (ttype::I32, 1));
    assert_eq!(d.i32().unwrap(), -1);
    assert_eq!(d.field_begin().unwrap(), (ttype::BOOL, 2));
    assert!(!d.bool().unwrap());
    assert_eq!(d.field_begin().unwrap(), (ttype::STRING, 20));
    assert_eq!(d.binary().unwrap(), b"x");
    assert_eq!(d.field_begin().unwrap(), (ttype::LIST, 21));
    assert_eq!(d.list_begin().unwrap(), (ttype::BOOL, 2));
    assert!(d.bool().unwrap());
    assert!(!d.bool().unwrap());
    assert_eq!(d.field_begin().unwrap(), (ttype::LIST, 22));
    assert_eq!(d.list_begin().unwrap(), (ttype::BYTE, 15));
    for i in 0..15 {
        assert_eq!(d.byte().unwrap(), i);
    }
    assert_eq!(d.field_begin().unwrap(), (ttype::MAP, 23));
    assert_eq!(d.map_begin().unwrap(), (ttype::STRING, ttype::I64, 1));
    assert_eq!(d.binary().unwrap(), b"k");
    assert_eq!(d.i64().unwrap(), 1);
    assert_eq!(d.field_begin().unwrap(), (ttype::MAP, 24));
    assert_eq!(d.map_begin().unwrap().2, 0);
    assert_eq!(d.field_begin().unwrap(), (ttype::STRUCT, 25));
    d.struct_begin();
    assert_eq!(d.field_begin().unwrap(), (ttype::DOUBLE, 1));
    assert_eq!(d.double().unwrap(), 1.0);
    assert_eq!(d.field_begin().unwrap().0, ttype::STOP);
    d.struct_end();
    assert_eq!(d.field_begin().unwrap(), (ttype::I16, 26));
    assert_eq!(d.i16().unwrap(), 3);
    assert_eq!(d.field_begin().unwrap().0, ttype::STOP);
    assert_eq!(d.position(), bytes.len());
}

#[test]
fn compact_rejects_bad_bytes() {
    assert!(matches!(
        Decoder::new(Protocol::Compact, &[0x80, 0x21]).message_begin(),
        Err(WireError::Malformed(_))
    ));
    // Type nibble 14 is no compact type.
    assert!(matches!(
        Decoder::new(Protocol::Compact, &[0x1e]).field_begin(),
        Err(WireError::Malformed(_))
    ));
    assert_eq!(
        Decoder::new(Protocol::Compact, &[0x82, 0x21, 0xac]).message_begin(),
        Err(WireError::NeedMore)
    );
}
