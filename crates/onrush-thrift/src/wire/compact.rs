//! The compact protocol: zigzag varints, field headers that carry the id as a delta from the
//! previous field's (1..=15) in the high nibble, bools packed into field headers, and
//! size-and-type nibbles for short lists.

use super::{ttype, Decoder, MessageHeader, WireError, R};

const PROTOCOL_ID: u8 = 0x82;
const VERSION: u8 = 1;

/// The compact type id of a binary type id.
pub(super) fn ctype(ty: u8) -> u8 {
    match ty {
        ttype::BOOL => 1,
        ttype::BYTE => 3,
        ttype::I16 => 4,
        ttype::I32 => 5,
        ttype::I64 => 6,
        ttype::DOUBLE => 7,
        ttype::STRING => 8,
        ttype::LIST => 9,
        ttype::SET => 10,
        ttype::MAP => 11,
        ttype::STRUCT => 12,
        ttype::UUID => 13,
        _ => 0,
    }
}

/// The binary type id of a compact type id (1 and 2 are both bool).
fn ttype_of(ct: u8) -> R<u8> {
    Ok(match ct {
        0 => ttype::STOP,
        1 | 2 => ttype::BOOL,
        3 => ttype::BYTE,
        4 => ttype::I16,
        5 => ttype::I32,
        6 => ttype::I64,
        7 => ttype::DOUBLE,
        8 => ttype::STRING,
        9 => ttype::LIST,
        10 => ttype::SET,
        11 => ttype::MAP,
        12 => ttype::STRUCT,
        13 => ttype::UUID,
        _ => return Err(WireError::Malformed("an unknown compact type")),
    })
}

pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub(super) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn message_begin(out: &mut Vec<u8>, name: &[u8], kind: u8, seqid: i32) {
    out.push(PROTOCOL_ID);
    out.push(VERSION | (kind << 5));
    varint(out, seqid as u32 as u64);
    varint(out, name.len() as u64);
    out.extend_from_slice(name);
}

pub(super) fn field_header(out: &mut Vec<u8>, ct: u8, id: i16, last: i16) {
    let delta = id as i32 - last as i32;
    if (1..=15).contains(&delta) {
        out.push((delta as u8) << 4 | ct);
    } else {
        out.push(ct);
        varint(out, zigzag(id as i64));
    }
}

pub(super) fn list_header(out: &mut Vec<u8>, elem: u8, size: usize) {
    let ct = ctype(elem);
    if size < 15 {
        out.push((size as u8) << 4 | ct);
    } else {
        out.push(0xf0 | ct);
        varint(out, size as u64);
    }
}

pub(super) fn map_header(out: &mut Vec<u8>, key: u8, value: u8, size: usize) {
    if size == 0 {
        out.push(0);
        return;
    }
    varint(out, size as u64);
    out.push(ctype(key) << 4 | ctype(value));
}

fn read_varint(d: &mut Decoder<'_>) -> R<u64> {
    let mut v: u64 = 0;
    for shift in (0..70).step_by(7) {
        let b = d.u8()?;
        if shift == 63 && b > 1 {
            return Err(WireError::Malformed("a varint longer than 64 bits"));
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(WireError::Malformed("a varint longer than 64 bits"))
}

pub(super) fn read_zigzag(d: &mut Decoder<'_>) -> R<i64> {
    let v = read_varint(d)?;
    Ok((v >> 1) as i64 ^ -((v & 1) as i64))
}

pub(super) fn read_size(d: &mut Decoder<'_>) -> R<usize> {
    let v = read_varint(d)?;
    if v > i32::MAX as u64 {
        return Err(WireError::Malformed("a size beyond 2^31"));
    }
    Ok(v as usize)
}

pub(super) fn read_message_begin<'a>(d: &mut Decoder<'a>) -> R<MessageHeader<'a>> {
    if d.u8()? != PROTOCOL_ID {
        return Err(WireError::Malformed("not a compact protocol message"));
    }
    let vt = d.u8()?;
    if vt & 0x1f != VERSION {
        return Err(WireError::Malformed(
            "a compact message of an unknown version",
        ));
    }
    let seqid = read_varint(d)? as u32 as i32;
    let name = d.binary()?;
    Ok(MessageHeader {
        name,
        kind: vt >> 5,
        seqid,
    })
}

pub(super) fn read_field_begin(d: &mut Decoder<'_>) -> R<(u8, i16)> {
    let b = d.u8()?;
    let ct = b & 0x0f;
    if ct == 0 {
        return Ok((ttype::STOP, 0));
    }
    let delta = b >> 4;
    let id = if delta == 0 {
        let v = read_zigzag(d)?;
        i16::try_from(v).map_err(|_| WireError::Malformed("a field id out of range"))?
    } else {
        d.last_id.wrapping_add(delta as i16)
    };
    let ty = ttype_of(ct)?;
    if ty == ttype::BOOL {
        d.bool_value = Some(ct == 1);
    }
    d.last_id = id;
    Ok((ty, id))
}

pub(super) fn read_list_begin(d: &mut Decoder<'_>) -> R<(u8, usize)> {
    let b = d.u8()?;
    let elem = ttype_of(b & 0x0f)?;
    let size = match b >> 4 {
        15 => read_size(d)?,
        n => n as usize,
    };
    Ok((elem, size))
}

pub(super) fn read_map_begin(d: &mut Decoder<'_>) -> R<(u8, u8, usize)> {
    let size = read_size(d)?;
    if size == 0 {
        return Ok((ttype::STOP, ttype::STOP, 0));
    }
    let kv = d.u8()?;
    Ok((ttype_of(kv >> 4)?, ttype_of(kv & 0x0f)?, size))
}
