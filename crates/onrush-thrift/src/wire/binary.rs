//! The binary protocol's few irregular parts: the message header (strict, with the version
//! word, and the old non-strict form when reading) and sizes (i32, never negative).

use super::{Decoder, MessageHeader, WireError, R};

const VERSION_1: u32 = 0x8001_0000;
const VERSION_MASK: u32 = 0xffff_0000;

pub(super) fn message_begin(out: &mut Vec<u8>, name: &[u8], kind: u8, seqid: i32) {
    out.extend_from_slice(&(VERSION_1 | kind as u32).to_be_bytes());
    out.extend_from_slice(&(name.len() as i32).to_be_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(&seqid.to_be_bytes());
}

pub(super) fn read_message_begin<'a>(d: &mut Decoder<'a>) -> R<MessageHeader<'a>> {
    let word = u32::from_be_bytes(d.take(4)?.try_into().expect("4 bytes"));
    if word & 0x8000_0000 != 0 {
        if word & VERSION_MASK != VERSION_1 {
            return Err(WireError::Malformed(
                "a binary message of an unknown version",
            ));
        }
        let name = d.binary()?;
        let seqid = d.i32()?;
        return Ok(MessageHeader {
            name,
            kind: (word & 0xff) as u8,
            seqid,
        });
    }
    // Non-strict: the word is the name's length.
    let name = d.take(word as usize)?;
    let kind = d.u8()?;
    let seqid = d.i32()?;
    Ok(MessageHeader { name, kind, seqid })
}

pub(super) fn read_size(d: &mut Decoder<'_>) -> R<usize> {
    let n = i32::from_be_bytes(d.take(4)?.try_into().expect("4 bytes"));
    usize::try_from(n).map_err(|_| WireError::Malformed("a negative size"))
}
