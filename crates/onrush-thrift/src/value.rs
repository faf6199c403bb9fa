//! A call's arguments as a typed value tree, built once when the plan loads: constants are
//! final values, and leaves written with templates ([`Value::Dynamic`]) are rendered at each
//! call by the caller's closure and converted to their type then. Field ids and wire types
//! are looked up once, here, never per call.

use crate::wire::{message, ttype, Encoder};

/// How a rendered leaf is turned into its type.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaf {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    /// string or binary: the rendered bytes as they are.
    Bytes,
    /// An enum: a value's name or its number; `(name, value)` pairs.
    Enum(Vec<(String, i32)>),
}

/// A value ready to encode; `T` is a per-call template.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<T> {
    Bool(bool),
    Byte(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    Double(f64),
    Bytes(Vec<u8>),
    Uuid([u8; 16]),
    /// Rendered per call, then converted as `Leaf` says.
    Dynamic(T, Leaf),
    /// A list or set: the elements' wire type and the elements.
    List(u8, Vec<Value<T>>),
    /// A map: key and value wire types, entries.
    Map(u8, u8, Vec<(Value<T>, Value<T>)>),
    Struct(Vec<FieldValue<T>>),
}

/// One field of a struct value: its id and wire type (from the IDL) and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldValue<T> {
    pub id: i16,
    pub ty: u8,
    pub value: Value<T>,
}

/// Renders a template leaf into the buffer (the caller's templates and variables).
pub type Render<'r, T, E> = &'r mut dyn FnMut(&T, &mut Vec<u8>) -> Result<(), E>;

/// Why a call could not be encoded.
#[derive(Debug, PartialEq)]
pub enum EncodeError<E> {
    /// The template could not be rendered (the caller's error, e.g. an unset variable).
    Render(E),
    /// A rendered leaf does not fit its type (`"abc"` for an i32): the message names the type.
    BadValue(&'static str),
}

/// Encodes a call (`message::CALL`, or `ONEWAY` when `oneway`) of `name` with `args` as the
/// argument struct. `scratch` holds one rendered leaf at a time; `render` renders a template.
pub fn encode_call<T, E>(
    e: &mut Encoder<'_>,
    name: &[u8],
    oneway: bool,
    seqid: i32,
    args: &[FieldValue<T>],
    scratch: &mut Vec<u8>,
    render: Render<'_, T, E>,
) -> Result<(), EncodeError<E>> {
    let kind = if oneway {
        message::ONEWAY
    } else {
        message::CALL
    };
    e.message_begin(name, kind, seqid);
    encode_struct(e, args, scratch, render)
}

fn encode_struct<T, E>(
    e: &mut Encoder<'_>,
    fields: &[FieldValue<T>],
    scratch: &mut Vec<u8>,
    render: Render<'_, T, E>,
) -> Result<(), EncodeError<E>> {
    e.struct_begin();
    for f in fields {
        e.field_begin(f.ty, f.id);
        encode_value(e, &f.value, scratch, render)?;
    }
    e.struct_end();
    Ok(())
}

fn encode_value<T, E>(
    e: &mut Encoder<'_>,
    v: &Value<T>,
    scratch: &mut Vec<u8>,
    render: Render<'_, T, E>,
) -> Result<(), EncodeError<E>> {
    match v {
        Value::Bool(b) => e.bool(*b),
        Value::Byte(b) => e.byte(*b),
        Value::I16(n) => e.i16(*n),
        Value::I32(n) => e.i32(*n),
        Value::I64(n) => e.i64(*n),
        Value::Double(d) => e.double(*d),
        Value::Bytes(b) => e.binary(b),
        Value::Uuid(u) => e.uuid(u),
        Value::Dynamic(t, leaf) => {
            scratch.clear();
            render(t, scratch).map_err(EncodeError::Render)?;
            encode_leaf(e, leaf, scratch).map_err(EncodeError::BadValue)?;
        }
        Value::List(elem, items) => {
            e.list_begin(*elem, items.len());
            for item in items {
                encode_value(e, item, scratch, render)?;
            }
        }
        Value::Map(k, val, entries) => {
            e.map_begin(*k, *val, entries.len());
            for (key, value) in entries {
                encode_value(e, key, scratch, render)?;
                encode_value(e, value, scratch, render)?;
            }
        }
        Value::Struct(fields) => encode_struct(e, fields, scratch, render)?,
    }
    Ok(())
}

fn encode_leaf(e: &mut Encoder<'_>, leaf: &Leaf, text: &[u8]) -> Result<(), &'static str> {
    if let Leaf::Bytes = leaf {
        e.binary(text);
        return Ok(());
    }
    let s = std::str::from_utf8(text).map_err(|_| "not UTF-8")?.trim();
    match leaf {
        Leaf::Bool => e.bool(parse_bool(s).ok_or("expected true or false for a bool")?),
        Leaf::Byte => e.byte(
            s.parse()
                .map_err(|_| "expected an integer -128..127 for a byte")?,
        ),
        Leaf::I16 => e.i16(s.parse().map_err(|_| "expected an i16 integer")?),
        Leaf::I32 => e.i32(s.parse().map_err(|_| "expected an i32 integer")?),
        Leaf::I64 => e.i64(s.parse().map_err(|_| "expected an i64 integer")?),
        Leaf::Double => e.double(s.parse().map_err(|_| "expected a number for a double")?),
        Leaf::Enum(values) => {
            let n = match values.iter().find(|(name, _)| name == s) {
                Some((_, n)) => *n,
                None => s
                    .parse::<i32>()
                    .ok()
                    .filter(|n| values.iter().any(|(_, v)| v == n))
                    .ok_or("expected one of the enum's names or values")?,
            };
            e.i32(n)
        }
        Leaf::Bytes => unreachable!("handled above"),
    }
    Ok(())
}

/// `true`/`false` (and `1`/`0`), as YAML and templates write them.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" | "1" => Some(true),
        "false" | "False" | "FALSE" | "0" => Some(false),
        _ => None,
    }
}

/// The wire type of a schema type.
pub fn wire_type(ty: &crate::Type) -> u8 {
    use crate::Type;
    match ty {
        Type::Bool => ttype::BOOL,
        Type::Byte => ttype::BYTE,
        Type::I16 => ttype::I16,
        Type::I32 | Type::Enum(_) => ttype::I32,
        Type::I64 => ttype::I64,
        Type::Double => ttype::DOUBLE,
        Type::String | Type::Binary => ttype::STRING,
        Type::Uuid => ttype::UUID,
        Type::List(_) => ttype::LIST,
        Type::Set(_) => ttype::SET,
        Type::Map(..) => ttype::MAP,
        Type::Struct(_) => ttype::STRUCT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Decoder, Protocol};

    #[test]
    fn dynamic_leaves_render_and_convert() {
        let args = vec![
            FieldValue {
                id: 1,
                ty: ttype::I32,
                value: Value::Dynamic("7", Leaf::I32),
            },
            FieldValue {
                id: 2,
                ty: ttype::I32,
                value: Value::Dynamic(
                    "SUB",
                    Leaf::Enum(vec![("ADD".into(), 1), ("SUB".into(), 2)]),
                ),
            },
            FieldValue {
                id: 3,
                ty: ttype::LIST,
                value: Value::List(ttype::STRING, vec![Value::Bytes(b"a".to_vec())]),
            },
        ];
        let (mut out, mut stack, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
        let mut e = Encoder::new(Protocol::Binary, &mut out, &mut stack);
        let mut render = |t: &&str, out: &mut Vec<u8>| -> Result<(), ()> {
            out.extend_from_slice(t.as_bytes());
            Ok(())
        };
        encode_call(&mut e, b"f", false, 1, &args, &mut scratch, &mut render).unwrap();
        let mut d = Decoder::new(Protocol::Binary, &out);
        d.message_begin().unwrap();
        assert_eq!(d.field_begin().unwrap(), (ttype::I32, 1));
        assert_eq!(d.i32().unwrap(), 7);
        assert_eq!(d.field_begin().unwrap(), (ttype::I32, 2));
        assert_eq!(d.i32().unwrap(), 2);

        let bad = vec![FieldValue {
            id: 1,
            ty: ttype::I32,
            value: Value::Dynamic("x1", Leaf::I32),
        }];
        out.clear();
        let mut e = Encoder::new(Protocol::Compact, &mut out, &mut stack);
        assert_eq!(
            encode_call(&mut e, b"f", false, 1, &bad, &mut scratch, &mut render),
            Err(EncodeError::BadValue("expected an i32 integer"))
        );
    }
}
