//! A Thrift value read off the wire by its wire types alone (no schema), and written back with
//! [`onrush_thrift::wire::Encoder`]. The server reads a call's argument struct into this tree,
//! then picks the fields it needs by the ids the IDL gives them ([`super::calc`]); fields it
//! does not know, or of another type than declared, are ignored, as Apache's generated code
//! skips them.
//!
//! Memory: nothing is allocated by a size the client announces (`Vec::new` and pushes only), and
//! every element takes at least one byte of the message, whose size the connection bounds
//! ([`super::MAX_MESSAGE`]); nesting is bounded by [`MAX_DEPTH`].

use onrush_thrift::wire::{ttype, Decoder, Encoder, WireError};

/// Deeper nesting than this is malformed: a hostile message cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Bool(bool),
    Byte(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    Double(f64),
    Bytes(Vec<u8>),
    Uuid([u8; 16]),
    /// A list or a set: the element wire type, the elements.
    List(u8, Vec<Val>),
    /// Key and value wire types, the entries.
    Map(u8, u8, Vec<(Val, Val)>),
    /// Fields by id, in wire order.
    Struct(Vec<(i16, Val)>),
}

impl Val {
    /// The wire type ([`ttype`]) this value is written with. A list whose wire type is `SET`
    /// is written as a set: [`Val::List`] carries no such flag, so sets are built by
    /// [`Val::set`] and remembered here through [`SET_MARK`].
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            Val::Bool(_) => ttype::BOOL,
            Val::Byte(_) => ttype::BYTE,
            Val::I16(_) => ttype::I16,
            Val::I32(_) => ttype::I32,
            Val::I64(_) => ttype::I64,
            Val::Double(_) => ttype::DOUBLE,
            Val::Bytes(_) => ttype::STRING,
            Val::Uuid(_) => ttype::UUID,
            Val::List(elem, _) if elem & SET_MARK != 0 => ttype::SET,
            Val::List(..) => ttype::LIST,
            Val::Map(..) => ttype::MAP,
            Val::Struct(_) => ttype::STRUCT,
        }
    }

    /// A set of `elem`-typed values.
    pub(crate) fn set(elem: u8, items: Vec<Val>) -> Val {
        Val::List(elem | SET_MARK, items)
    }

    /// The field `id` of a struct, when it is there.
    pub(crate) fn field(&self, id: i16) -> Option<&Val> {
        match self {
            Val::Struct(fields) => fields.iter().find(|(i, _)| *i == id).map(|(_, v)| v),
            _ => None,
        }
    }

    /// An integer field (any width) as i64; `None` when absent or not an integer.
    pub(crate) fn int(&self, id: i16) -> Option<i64> {
        match self.field(id)? {
            Val::Byte(n) => Some(*n as i64),
            Val::I16(n) => Some(*n as i64),
            Val::I32(n) => Some(*n as i64),
            Val::I64(n) => Some(*n),
            _ => None,
        }
    }
}

/// Wire type ids stop at 16, so bit 7 is free to say "a set" in [`Val::List`]'s element type.
const SET_MARK: u8 = 0x80;

/// Reads a struct (the decoder stands at its first field).
pub(crate) fn read_struct(d: &mut Decoder<'_>, depth: usize) -> Result<Val, WireError> {
    if depth > MAX_DEPTH {
        return Err(WireError::Malformed("nested too deep"));
    }
    let mut fields = Vec::new();
    d.struct_begin();
    loop {
        let (ty, id) = d.field_begin()?;
        if ty == ttype::STOP {
            break;
        }
        fields.push((id, read(d, ty, depth + 1)?));
    }
    d.struct_end();
    Ok(Val::Struct(fields))
}

fn read(d: &mut Decoder<'_>, ty: u8, depth: usize) -> Result<Val, WireError> {
    if depth > MAX_DEPTH {
        return Err(WireError::Malformed("nested too deep"));
    }
    Ok(match ty {
        ttype::BOOL => Val::Bool(d.bool()?),
        ttype::BYTE => Val::Byte(d.byte()?),
        ttype::I16 => Val::I16(d.i16()?),
        ttype::I32 => Val::I32(d.i32()?),
        ttype::I64 => Val::I64(d.i64()?),
        ttype::DOUBLE => Val::Double(d.double()?),
        ttype::STRING => Val::Bytes(d.binary()?.to_vec()),
        ttype::UUID => Val::Uuid(d.uuid()?.try_into().expect("16 bytes")),
        ttype::STRUCT => read_struct(d, depth)?,
        ttype::LIST | ttype::SET => {
            let (elem, size) = d.list_begin()?;
            let mut items = Vec::new();
            for _ in 0..size {
                items.push(read(d, elem, depth + 1)?);
            }
            if ty == ttype::SET {
                Val::set(elem, items)
            } else {
                Val::List(elem, items)
            }
        }
        ttype::MAP => {
            let (k, v, size) = d.map_begin()?;
            let mut entries = Vec::new();
            for _ in 0..size {
                let key = read(d, k, depth + 1)?;
                let value = read(d, v, depth + 1)?;
                entries.push((key, value));
            }
            Val::Map(k, v, entries)
        }
        _ => return Err(WireError::Malformed("an unknown wire type")),
    })
}

/// Writes a struct's fields (in the order given) and its stop byte.
pub(crate) fn write_struct(e: &mut Encoder<'_>, fields: &[(i16, Val)]) {
    e.struct_begin();
    for (id, v) in fields {
        e.field_begin(v.wire_type(), *id);
        write(e, v);
    }
    e.struct_end();
}

fn write(e: &mut Encoder<'_>, v: &Val) {
    match v {
        Val::Bool(b) => e.bool(*b),
        Val::Byte(n) => e.byte(*n),
        Val::I16(n) => e.i16(*n),
        Val::I32(n) => e.i32(*n),
        Val::I64(n) => e.i64(*n),
        Val::Double(x) => e.double(*x),
        Val::Bytes(b) => e.binary(b),
        Val::Uuid(u) => e.uuid(u),
        Val::List(elem, items) => {
            e.list_begin(elem & !SET_MARK, items.len());
            for item in items {
                write(e, item);
            }
        }
        Val::Map(k, val, entries) => {
            e.map_begin(*k, *val, entries.len());
            for (key, value) in entries {
                write(e, key);
                write(e, value);
            }
        }
        Val::Struct(fields) => write_struct(e, fields),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use onrush_thrift::wire::Protocol;

    #[test]
    fn round_trips_every_type_in_both_protocols() {
        let value = vec![
            (1, Val::Bool(true)),
            (2, Val::Byte(-3)),
            (3, Val::I16(-300)),
            (4, Val::I32(70_000)),
            (20, Val::I64(-(1 << 40))),
            (21, Val::Double(0.25)),
            (22, Val::Bytes(b"hi".to_vec())),
            (
                23,
                Val::List(ttype::BOOL, vec![Val::Bool(false), Val::Bool(true)]),
            ),
            (24, Val::set(ttype::STRING, vec![Val::Bytes(b"a".to_vec())])),
            (
                25,
                Val::Map(
                    ttype::STRING,
                    ttype::I32,
                    vec![(Val::Bytes(b"k".to_vec()), Val::I32(1))],
                ),
            ),
            (
                26,
                Val::Struct(vec![(1, Val::Bool(false)), (-1, Val::I32(5))]),
            ),
            (27, Val::Map(ttype::I32, ttype::I32, Vec::new())),
        ];
        for proto in [Protocol::Binary, Protocol::Compact] {
            let (mut out, mut stack) = (Vec::new(), Vec::new());
            let mut e = Encoder::new(proto, &mut out, &mut stack);
            write_struct(&mut e, &value);
            let mut d = Decoder::new(proto, &out);
            let back = read_struct(&mut d, 0).unwrap();
            // An empty map reads back with no key/value types in the compact protocol.
            let Val::Struct(mut fields) = back else {
                panic!("a struct")
            };
            assert_eq!(
                fields.pop(),
                Some((
                    27,
                    Val::Map(
                        if proto == Protocol::Compact {
                            ttype::STOP
                        } else {
                            ttype::I32
                        },
                        if proto == Protocol::Compact {
                            ttype::STOP
                        } else {
                            ttype::I32
                        },
                        Vec::new()
                    )
                ))
            );
            assert_eq!(fields, value[..value.len() - 1], "{proto:?}");
            assert_eq!(d.position(), out.len());
        }
    }

    #[test]
    fn hostile_sizes_and_nesting_fail_without_allocating() {
        // A list announcing 2^31-1 i32s in a 10-byte message: NeedMore, nothing reserved.
        let mut msg = vec![ttype::LIST, 0, 1, ttype::I32, 0x7f, 0xff, 0xff, 0xff, 0, 0];
        let mut d = Decoder::new(Protocol::Binary, &msg);
        assert_eq!(read_struct(&mut d, 0), Err(WireError::NeedMore));
        // Structs nested 1,000 deep: malformed, not a stack overflow.
        msg.clear();
        for _ in 0..1000 {
            msg.extend_from_slice(&[ttype::STRUCT, 0, 1]);
        }
        let mut d = Decoder::new(Protocol::Binary, &msg);
        assert_eq!(
            read_struct(&mut d, 0),
            Err(WireError::Malformed("nested too deep"))
        );
    }
}
