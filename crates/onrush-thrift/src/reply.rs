//! A reply message decoded, guided by the schema, into its outcome and (when asked for) JSON:
//! the return value for a success, the exception struct for a declared exception, `{ "message",
//! "type" }` for a `TApplicationException`. Fields the IDL does not know are skipped (as Apache's
//! generated code does); nesting is bounded, and nothing allocates by a size the server sends.

use std::io::Write as _;

use crate::value::wire_type;
use crate::wire::{message, ttype, Decoder, Protocol, WireError};
use crate::{Function, Schema, Type};

/// Deeper nesting than this is `Malformed` (a hostile reply cannot exhaust the stack).
const MAX_DEPTH: usize = 64;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// A declared exception: the index into the function's `throws`.
    Exception(usize),
    /// A `TApplicationException` (unknown method, internal error, ...) with its type code.
    Application(i32),
}

/// A decoded reply: its outcome and how many bytes of the slice it took.
#[derive(Debug, PartialEq, Eq)]
pub struct Reply {
    pub outcome: Outcome,
    pub consumed: usize,
}

/// Decodes the reply to the call `name` numbered `seqid` at the start of `buf`, writing JSON to
/// `json` when it is given. A reply to another call (name or sequence id) is `Malformed`.
pub fn decode_reply(
    proto: Protocol,
    buf: &[u8],
    name: &[u8],
    seqid: i32,
    function: &Function,
    schema: &Schema,
    json: Option<&mut Vec<u8>>,
) -> Result<Reply, WireError> {
    let mut d = Decoder::new(proto, buf);
    let mut r = Reader {
        schema,
        json,
        key: Vec::new(),
    };
    let header = d.message_begin()?;
    if header.seqid != seqid {
        return Err(WireError::Malformed("a reply with another sequence id"));
    }
    // A multiplexed call's reply may name the method without the service (Apache's
    // TMultiplexedProcessor in Java and Python strips it).
    let bare = name.rsplit(|b| *b == b':').next().unwrap_or(name);
    if header.name != name && header.name != bare {
        return Err(WireError::Malformed("a reply to another method"));
    }
    let outcome = match header.kind {
        message::REPLY => r.result(&mut d, function)?,
        message::EXCEPTION => r.application_exception(&mut d)?,
        _ => {
            return Err(WireError::Malformed(
                "a message that is neither a reply nor an exception",
            ))
        }
    };
    Ok(Reply {
        outcome,
        consumed: d.position(),
    })
}

struct Reader<'s, 'j> {
    schema: &'s Schema,
    json: Option<&'j mut Vec<u8>>,
    /// A map key that is not a string, rendered before it is quoted.
    key: Vec<u8>,
}

impl Reader<'_, '_> {
    fn out(&mut self, bytes: &[u8]) {
        if let Some(j) = self.json.as_deref_mut() {
            j.extend_from_slice(bytes);
        }
    }

    /// The result struct: field 0 is the return value, fields 1.. the declared exceptions.
    fn result(&mut self, d: &mut Decoder<'_>, f: &Function) -> Result<Outcome, WireError> {
        let mut outcome = None;
        d.struct_begin();
        loop {
            let (ty, id) = d.field_begin()?;
            if ty == ttype::STOP {
                break;
            }
            let (hint, which) = if id == 0 {
                (f.returns.as_ref(), Some(Outcome::Success))
            } else {
                match f.throws.iter().position(|t| t.id == id) {
                    Some(i) => (Some(&f.throws[i].ty), Some(Outcome::Exception(i))),
                    None => (None, None),
                }
            };
            match which {
                Some(o) if outcome.is_none() => {
                    outcome = Some(o);
                    self.value(d, ty, hint, 0)?;
                }
                // A second result field, or one the IDL does not declare: skipped.
                _ => self.skip(d, ty)?,
            }
        }
        d.struct_end();
        match (outcome, &f.returns) {
            (Some(o), _) => Ok(o),
            // A void function's reply is an empty struct.
            (None, None) => {
                self.out(b"null");
                Ok(Outcome::Success)
            }
            (None, Some(_)) => Err(WireError::Malformed(
                "a reply with neither a result nor a declared exception",
            )),
        }
    }

    /// `TApplicationException { 1: string message, 2: i32 type }`.
    fn application_exception(&mut self, d: &mut Decoder<'_>) -> Result<Outcome, WireError> {
        let mut kind = 0;
        let mut message: &[u8] = b"";
        d.struct_begin();
        loop {
            let (ty, id) = d.field_begin()?;
            match (ty, id) {
                (ttype::STOP, _) => break,
                (ttype::STRING, 1) => message = d.binary()?,
                (ttype::I32, 2) => kind = d.i32()?,
                _ => self.skip(d, ty)?,
            }
        }
        d.struct_end();
        if let Some(j) = self.json.as_deref_mut() {
            j.extend_from_slice(b"{\"message\":");
            string(j, message);
            let _ = write!(j, ",\"type\":{kind}}}");
        }
        Ok(Outcome::Application(kind))
    }

    fn skip(&mut self, d: &mut Decoder<'_>, ty: u8) -> Result<(), WireError> {
        let json = self.json.take();
        let r = self.value(d, ty, None, 0);
        self.json = json;
        r
    }

    /// One value of wire type `ty`; `hint` is the IDL's type, used when it matches the wire.
    fn value(
        &mut self,
        d: &mut Decoder<'_>,
        ty: u8,
        hint: Option<&Type>,
        depth: usize,
    ) -> Result<(), WireError> {
        if depth > MAX_DEPTH {
            return Err(WireError::Malformed("values nested too deep"));
        }
        let hint = hint.filter(|h| wire_type(h) == ty);
        match ty {
            ttype::BOOL => {
                let v = d.bool()?;
                self.out(if v { b"true" } else { b"false" });
            }
            ttype::BYTE => {
                let v = d.byte()?;
                self.number(v as i64);
            }
            ttype::I16 => {
                let v = d.i16()?;
                self.number(v as i64);
            }
            ttype::I32 => {
                let v = d.i32()?;
                match hint {
                    Some(Type::Enum(e)) => {
                        let schema = self.schema;
                        match schema.enums[*e].values.iter().find(|(_, n)| *n == v) {
                            Some((name, _)) => {
                                if let Some(j) = self.json.as_deref_mut() {
                                    string(j, name.as_bytes());
                                }
                            }
                            None => self.number(v as i64),
                        }
                    }
                    _ => self.number(v as i64),
                }
            }
            ttype::I64 => {
                let v = d.i64()?;
                self.number(v);
            }
            ttype::DOUBLE => {
                let v = d.double()?;
                if let Some(j) = self.json.as_deref_mut() {
                    if v.is_finite() {
                        let _ = write!(j, "{v}");
                    } else {
                        j.extend_from_slice(b"null");
                    }
                }
            }
            ttype::STRING => {
                let v = d.binary()?;
                if let Some(j) = self.json.as_deref_mut() {
                    string(j, v);
                }
            }
            ttype::UUID => {
                let v = d.uuid()?;
                if let Some(j) = self.json.as_deref_mut() {
                    j.push(b'"');
                    for (i, b) in v.iter().enumerate() {
                        if matches!(i, 4 | 6 | 8 | 10) {
                            j.push(b'-');
                        }
                        let _ = write!(j, "{b:02x}");
                    }
                    j.push(b'"');
                }
            }
            ttype::STRUCT => self.structure(d, hint, depth)?,
            ttype::LIST | ttype::SET => {
                let (elem, size) = d.list_begin()?;
                let elem_hint = match hint {
                    Some(Type::List(e)) | Some(Type::Set(e)) => Some(&**e),
                    _ => None,
                };
                self.out(b"[");
                for i in 0..size {
                    if i > 0 {
                        self.out(b",");
                    }
                    self.value(d, elem, elem_hint, depth + 1)?;
                }
                self.out(b"]");
            }
            ttype::MAP => {
                let (k, v, size) = d.map_begin()?;
                let (kh, vh) = match hint {
                    Some(Type::Map(k, v)) => (Some(&**k), Some(&**v)),
                    _ => (None, None),
                };
                self.out(b"{");
                for i in 0..size {
                    if i > 0 {
                        self.out(b",");
                    }
                    self.map_key(d, k, kh, depth + 1)?;
                    self.out(b":");
                    self.value(d, v, vh, depth + 1)?;
                }
                self.out(b"}");
            }
            _ => return Err(WireError::Malformed("an unknown type id")),
        }
        Ok(())
    }

    /// JSON keys are strings: a string key as it is, any other key's JSON quoted.
    fn map_key(
        &mut self,
        d: &mut Decoder<'_>,
        ty: u8,
        hint: Option<&Type>,
        depth: usize,
    ) -> Result<(), WireError> {
        if ty == ttype::STRING || self.json.is_none() {
            return self.value(d, ty, hint, depth);
        }
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        let r = Reader {
            schema: self.schema,
            json: Some(&mut key),
            key: Vec::new(),
        }
        .value(d, ty, hint, depth);
        if r.is_ok() {
            let quoted = key.first() == Some(&b'"');
            if let Some(j) = self.json.as_deref_mut() {
                if quoted {
                    j.extend_from_slice(&key);
                } else {
                    string(j, &key);
                }
            }
        }
        self.key = key;
        r
    }

    fn structure(
        &mut self,
        d: &mut Decoder<'_>,
        hint: Option<&Type>,
        depth: usize,
    ) -> Result<(), WireError> {
        let schema = self.schema;
        let def = match hint {
            Some(Type::Struct(i)) => Some(&schema.structs[*i]),
            _ => None,
        };
        self.out(b"{");
        d.struct_begin();
        let mut first = true;
        loop {
            let (ty, id) = d.field_begin()?;
            if ty == ttype::STOP {
                break;
            }
            match def {
                Some(def) => match def.fields.iter().find(|f| f.id == id) {
                    Some(field) => {
                        if !first {
                            self.out(b",");
                        }
                        first = false;
                        if let Some(j) = self.json.as_deref_mut() {
                            string(j, field.name.as_bytes());
                            j.push(b':');
                        }
                        self.value(d, ty, Some(&field.ty), depth + 1)?;
                    }
                    None => self.skip(d, ty)?,
                },
                None => {
                    if !first {
                        self.out(b",");
                    }
                    first = false;
                    if let Some(j) = self.json.as_deref_mut() {
                        let _ = write!(j, "\"{id}\":");
                    }
                    self.value(d, ty, None, depth + 1)?;
                }
            }
        }
        d.struct_end();
        self.out(b"}");
        Ok(())
    }

    fn number(&mut self, v: i64) {
        if let Some(j) = self.json.as_deref_mut() {
            let _ = write!(j, "{v}");
        }
    }
}

/// `bytes` as a JSON string (invalid UTF-8 replaced).
fn string(j: &mut Vec<u8>, bytes: &[u8]) {
    j.push(b'"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => j.extend_from_slice(b"\\\""),
                '\\' => j.extend_from_slice(b"\\\\"),
                '\n' => j.extend_from_slice(b"\\n"),
                '\r' => j.extend_from_slice(b"\\r"),
                '\t' => j.extend_from_slice(b"\\t"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(j, "\\u{:04x}", c as u32);
                }
                c => {
                    let mut buf = [0; 4];
                    j.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        if !chunk.invalid().is_empty() {
            j.extend_from_slice("\u{fffd}".as_bytes());
        }
    }
    j.push(b'"');
}

#[cfg(test)]
mod tests;
