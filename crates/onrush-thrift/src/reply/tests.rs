//! Replies built with the encoder (checked byte by byte against the specs in wire/tests.rs)
//! and decoded back, in both protocols.

use super::*;
use crate::wire::Encoder;
use crate::{Field, Requiredness, StructDef, StructKind};

fn schema() -> (Schema, Function) {
    let field = |id, name: &str, ty| Field {
        id,
        name: name.into(),
        req: Requiredness::Default,
        ty,
        default: None,
    };
    let schema = Schema {
        structs: vec![
            StructDef {
                name: "Point".into(),
                kind: StructKind::Struct,
                fields: vec![
                    field(1, "x", Type::I32),
                    field(
                        2,
                        "tags",
                        Type::Map(Box::new(Type::I32), Box::new(Type::String)),
                    ),
                    field(3, "op", Type::Enum(0)),
                ],
            },
            StructDef {
                name: "Oops".into(),
                kind: StructKind::Exception,
                fields: vec![field(1, "why", Type::String)],
            },
        ],
        enums: vec![crate::EnumDef {
            name: "Op".into(),
            values: vec![("ADD".into(), 1)],
        }],
        services: vec![],
        consts: vec![],
        files: vec![],
    };
    let f = Function {
        name: "get".into(),
        oneway: false,
        returns: Some(Type::List(Box::new(Type::Struct(0)))),
        args: vec![],
        throws: vec![field(1, "oops", Type::Struct(1))],
    };
    (schema, f)
}

fn reply(proto: Protocol, kind: u8, body: impl FnOnce(&mut Encoder<'_>)) -> Vec<u8> {
    let (mut out, mut stack) = (Vec::new(), Vec::new());
    let mut e = Encoder::new(proto, &mut out, &mut stack);
    e.message_begin(b"get", kind, 5);
    e.struct_begin();
    body(&mut e);
    e.struct_end();
    out
}

#[test]
fn success_exception_and_application_exception() {
    let (schema, f) = schema();
    for proto in [Protocol::Binary, Protocol::Compact] {
        let ok = reply(proto, message::REPLY, |e| {
            e.field_begin(ttype::LIST, 0);
            e.list_begin(ttype::STRUCT, 1);
            e.struct_begin();
            e.field_begin(ttype::I32, 1);
            e.i32(-3);
            e.field_begin(ttype::I64, 9); // unknown to the IDL: skipped
            e.i64(1);
            e.field_begin(ttype::MAP, 2);
            e.map_begin(ttype::I32, ttype::STRING, 1);
            e.i32(7);
            e.binary(b"q\"");
            e.field_begin(ttype::I32, 3);
            e.i32(1);
            e.struct_end();
        });
        let mut json = Vec::new();
        let r = decode_reply(proto, &ok, b"get", 5, &f, &schema, Some(&mut json)).unwrap();
        assert_eq!(
            r,
            Reply {
                outcome: Outcome::Success,
                consumed: ok.len()
            }
        );
        assert_eq!(
            String::from_utf8(json).unwrap(),
            r#"[{"x":-3,"tags":{"7":"q\""},"op":"ADD"}]"#
        );
        // Every shorter prefix needs more bytes (the buffered transport reads on).
        for cut in 0..ok.len() {
            assert_eq!(
                decode_reply(proto, &ok[..cut], b"get", 5, &f, &schema, None),
                Err(WireError::NeedMore),
                "{proto:?} cut at {cut}"
            );
        }
        assert!(matches!(
            decode_reply(proto, &ok, b"get", 6, &f, &schema, None),
            Err(WireError::Malformed(_))
        ));

        let thrown = reply(proto, message::REPLY, |e| {
            e.field_begin(ttype::STRUCT, 1);
            e.struct_begin();
            e.field_begin(ttype::STRING, 1);
            e.binary(b"no");
            e.struct_end();
        });
        let mut json = Vec::new();
        let r = decode_reply(proto, &thrown, b"get", 5, &f, &schema, Some(&mut json)).unwrap();
        assert_eq!(r.outcome, Outcome::Exception(0));
        assert_eq!(json, br#"{"why":"no"}"#);

        let app = reply(proto, message::EXCEPTION, |e| {
            e.field_begin(ttype::STRING, 1);
            e.binary(b"Unknown function x");
            e.field_begin(ttype::I32, 2);
            e.i32(1);
        });
        let mut json = Vec::new();
        let r = decode_reply(proto, &app, b"get", 5, &f, &schema, Some(&mut json)).unwrap();
        assert_eq!(r.outcome, Outcome::Application(1));
        assert_eq!(json, br#"{"message":"Unknown function x","type":1}"#);

        let empty = reply(proto, message::REPLY, |_| {});
        assert!(matches!(
            decode_reply(proto, &empty, b"get", 5, &f, &schema, None),
            Err(WireError::Malformed(_))
        ));
    }
}

#[test]
fn hostile_nesting_is_malformed_not_a_stack_overflow() {
    let (schema, f) = schema();
    let mut bytes = reply(Protocol::Binary, message::REPLY, |_| {});
    bytes.truncate(bytes.len() - 1);
    bytes.extend_from_slice(&[ttype::LIST, 0, 0]);
    for _ in 0..10_000 {
        bytes.extend_from_slice(&[ttype::LIST, 0, 0, 0, 1]);
    }
    assert!(matches!(
        decode_reply(Protocol::Binary, &bytes, b"get", 5, &f, &schema, None),
        Err(WireError::Malformed(_))
    ));
}
