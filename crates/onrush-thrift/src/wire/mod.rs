//! The wire: Thrift's binary and compact protocols behind one [`Encoder`] and one [`Decoder`],
//! dispatched by a `match` on [`Protocol`] (no virtual calls, no allocation per value).
//!
//! Framing (the framed transport's 4-byte length, or none for the buffered transport) is the
//! caller's: the encoder appends to a `Vec<u8>`, the decoder reads a slice and says
//! [`WireError::NeedMore`] when the slice ends inside a message.

mod binary;
mod compact;

/// Thrift's type ids as the binary protocol writes them (the compact protocol maps them).
pub mod ttype {
    pub const STOP: u8 = 0;
    pub const BOOL: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const DOUBLE: u8 = 4;
    pub const I16: u8 = 6;
    pub const I32: u8 = 8;
    pub const I64: u8 = 10;
    pub const STRING: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const MAP: u8 = 13;
    pub const SET: u8 = 14;
    pub const LIST: u8 = 15;
    pub const UUID: u8 = 16;
}

/// Message types.
pub mod message {
    pub const CALL: u8 = 1;
    pub const REPLY: u8 = 2;
    pub const EXCEPTION: u8 = 3;
    pub const ONEWAY: u8 = 4;
}

/// Which protocol encodes the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Binary,
    Compact,
}

/// Why a slice could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The slice ends inside the message: read more bytes and decode again.
    NeedMore,
    /// The bytes break the protocol.
    Malformed(&'static str),
}

/// Appends one message to a buffer. The compact protocol's state (the last field id per open
/// struct, a bool field's pending header) is kept in a reused stack.
pub struct Encoder<'a> {
    pub(crate) proto: Protocol,
    pub(crate) out: &'a mut Vec<u8>,
    /// Compact: the last field id written in each open struct.
    pub(crate) last_ids: &'a mut Vec<i16>,
    pub(crate) last_id: i16,
    /// Compact: a bool field whose header carries the value (written by `write_bool`).
    pub(crate) pending_bool: Option<i16>,
}

impl<'a> Encoder<'a> {
    pub fn new(proto: Protocol, out: &'a mut Vec<u8>, stack: &'a mut Vec<i16>) -> Self {
        stack.clear();
        Encoder {
            proto,
            out,
            last_ids: stack,
            last_id: 0,
            pending_bool: None,
        }
    }

    pub fn message_begin(&mut self, name: &[u8], kind: u8, seqid: i32) {
        match self.proto {
            Protocol::Binary => binary::message_begin(self.out, name, kind, seqid),
            Protocol::Compact => compact::message_begin(self.out, name, kind, seqid),
        }
    }

    pub fn struct_begin(&mut self) {
        if self.proto == Protocol::Compact {
            self.last_ids.push(self.last_id);
            self.last_id = 0;
        }
    }

    pub fn struct_end(&mut self) {
        self.out.push(ttype::STOP);
        if self.proto == Protocol::Compact {
            self.last_id = self.last_ids.pop().unwrap_or(0);
        }
    }

    pub fn field_begin(&mut self, ty: u8, id: i16) {
        match self.proto {
            Protocol::Binary => {
                self.out.push(ty);
                self.out.extend_from_slice(&id.to_be_bytes());
            }
            Protocol::Compact if ty == ttype::BOOL => self.pending_bool = Some(id),
            Protocol::Compact => {
                compact::field_header(self.out, compact::ctype(ty), id, self.last_id);
                self.last_id = id;
            }
        }
    }

    pub fn list_begin(&mut self, elem: u8, size: usize) {
        match self.proto {
            Protocol::Binary => {
                self.out.push(elem);
                self.out.extend_from_slice(&(size as i32).to_be_bytes());
            }
            Protocol::Compact => compact::list_header(self.out, elem, size),
        }
    }

    pub fn map_begin(&mut self, key: u8, value: u8, size: usize) {
        match self.proto {
            Protocol::Binary => {
                self.out.push(key);
                self.out.push(value);
                self.out.extend_from_slice(&(size as i32).to_be_bytes());
            }
            Protocol::Compact => compact::map_header(self.out, key, value, size),
        }
    }

    pub fn bool(&mut self, v: bool) {
        match self.proto {
            Protocol::Binary => self.out.push(v as u8),
            Protocol::Compact => match self.pending_bool.take() {
                // A bool field: the value is the field header's type (1 true, 2 false).
                Some(id) => {
                    let ct = if v { 1 } else { 2 };
                    compact::field_header(self.out, ct, id, self.last_id);
                    self.last_id = id;
                }
                None => self.out.push(if v { 1 } else { 2 }),
            },
        }
    }

    pub fn byte(&mut self, v: i8) {
        self.out.push(v as u8);
    }

    pub fn i16(&mut self, v: i16) {
        match self.proto {
            Protocol::Binary => self.out.extend_from_slice(&v.to_be_bytes()),
            Protocol::Compact => compact::varint(self.out, compact::zigzag(v as i64)),
        }
    }

    pub fn i32(&mut self, v: i32) {
        match self.proto {
            Protocol::Binary => self.out.extend_from_slice(&v.to_be_bytes()),
            Protocol::Compact => compact::varint(self.out, compact::zigzag(v as i64)),
        }
    }

    pub fn i64(&mut self, v: i64) {
        match self.proto {
            Protocol::Binary => self.out.extend_from_slice(&v.to_be_bytes()),
            Protocol::Compact => compact::varint(self.out, compact::zigzag(v)),
        }
    }

    pub fn double(&mut self, v: f64) {
        match self.proto {
            Protocol::Binary => self.out.extend_from_slice(&v.to_bits().to_be_bytes()),
            Protocol::Compact => self.out.extend_from_slice(&v.to_bits().to_le_bytes()),
        }
    }

    pub fn binary(&mut self, v: &[u8]) {
        match self.proto {
            Protocol::Binary => self.out.extend_from_slice(&(v.len() as i32).to_be_bytes()),
            Protocol::Compact => compact::varint(self.out, v.len() as u64),
        }
        self.out.extend_from_slice(v);
    }

    pub fn uuid(&mut self, v: &[u8; 16]) {
        self.out.extend_from_slice(v);
    }
}

/// A message's header.
#[derive(Debug, PartialEq, Eq)]
pub struct MessageHeader<'a> {
    pub name: &'a [u8],
    pub kind: u8,
    pub seqid: i32,
}

/// Reads one message from a slice. Type ids are reported as the binary protocol's
/// ([`ttype`]), whichever protocol is on the wire.
pub struct Decoder<'a> {
    pub(crate) proto: Protocol,
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) last_ids: Vec<i16>,
    pub(crate) last_id: i16,
    /// Compact: the value of a bool field, carried by its header.
    pub(crate) bool_value: Option<bool>,
}

pub(crate) type R<T> = Result<T, WireError>;

impl<'a> Decoder<'a> {
    pub fn new(proto: Protocol, buf: &'a [u8]) -> Self {
        Decoder {
            proto,
            buf,
            pos: 0,
            last_ids: Vec::new(),
            last_id: 0,
            bool_value: None,
        }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(WireError::NeedMore)?;
        if end > self.buf.len() {
            return Err(WireError::NeedMore);
        }
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn message_begin(&mut self) -> R<MessageHeader<'a>> {
        match self.proto {
            Protocol::Binary => binary::read_message_begin(self),
            Protocol::Compact => compact::read_message_begin(self),
        }
    }

    pub fn struct_begin(&mut self) {
        if self.proto == Protocol::Compact {
            self.last_ids.push(self.last_id);
            self.last_id = 0;
        }
    }

    pub fn struct_end(&mut self) {
        if self.proto == Protocol::Compact {
            self.last_id = self.last_ids.pop().unwrap_or(0);
        }
    }

    /// The next field's type and id; `ttype::STOP` ends the struct.
    pub fn field_begin(&mut self) -> R<(u8, i16)> {
        match self.proto {
            Protocol::Binary => {
                let ty = self.u8()?;
                if ty == ttype::STOP {
                    return Ok((ty, 0));
                }
                let id = i16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes"));
                Ok((ty, id))
            }
            Protocol::Compact => compact::read_field_begin(self),
        }
    }

    /// A list's or set's element type and size.
    pub fn list_begin(&mut self) -> R<(u8, usize)> {
        match self.proto {
            Protocol::Binary => {
                let elem = self.u8()?;
                let size = binary::read_size(self)?;
                Ok((elem, size))
            }
            Protocol::Compact => compact::read_list_begin(self),
        }
    }

    /// A map's key type, value type and size.
    pub fn map_begin(&mut self) -> R<(u8, u8, usize)> {
        match self.proto {
            Protocol::Binary => {
                let k = self.u8()?;
                let v = self.u8()?;
                let size = binary::read_size(self)?;
                Ok((k, v, size))
            }
            Protocol::Compact => compact::read_map_begin(self),
        }
    }

    pub fn bool(&mut self) -> R<bool> {
        if let Some(v) = self.bool_value.take() {
            return Ok(v);
        }
        let b = self.u8()?;
        match self.proto {
            Protocol::Binary => Ok(b != 0),
            Protocol::Compact => Ok(b == 1),
        }
    }

    pub fn byte(&mut self) -> R<i8> {
        Ok(self.u8()? as i8)
    }

    pub fn i16(&mut self) -> R<i16> {
        match self.proto {
            Protocol::Binary => Ok(i16::from_be_bytes(
                self.take(2)?.try_into().expect("2 bytes"),
            )),
            Protocol::Compact => {
                let v = compact::read_zigzag(self)?;
                i16::try_from(v).map_err(|_| WireError::Malformed("an i16 out of range"))
            }
        }
    }

    pub fn i32(&mut self) -> R<i32> {
        match self.proto {
            Protocol::Binary => Ok(i32::from_be_bytes(
                self.take(4)?.try_into().expect("4 bytes"),
            )),
            Protocol::Compact => {
                let v = compact::read_zigzag(self)?;
                i32::try_from(v).map_err(|_| WireError::Malformed("an i32 out of range"))
            }
        }
    }

    pub fn i64(&mut self) -> R<i64> {
        match self.proto {
            Protocol::Binary => Ok(i64::from_be_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            )),
            Protocol::Compact => compact::read_zigzag(self),
        }
    }

    pub fn double(&mut self) -> R<f64> {
        let bytes: [u8; 8] = self.take(8)?.try_into().expect("8 bytes");
        Ok(f64::from_bits(match self.proto {
            Protocol::Binary => u64::from_be_bytes(bytes),
            Protocol::Compact => u64::from_le_bytes(bytes),
        }))
    }

    pub fn binary(&mut self) -> R<&'a [u8]> {
        let len = match self.proto {
            Protocol::Binary => binary::read_size(self)?,
            Protocol::Compact => compact::read_size(self)?,
        };
        self.take(len)
    }

    pub fn uuid(&mut self) -> R<&'a [u8]> {
        self.take(16)
    }
}

#[cfg(test)]
mod tests;
