//! Apache Thrift on the plain port: the Calculator service of `examples/idl/calculator.thrift`
//! ([`calc`]), over the binary or compact protocol, framed or buffered transport, plain or
//! multiplexed (`Calculator:add`), decoded and encoded with `onrush-thrift`'s codec from the
//! IDL read at start — no generated code.
//!
//! The transport is the connection's, decided by its first bytes ([`crate::sniff`]): framed
//! (a 4-byte length first) or buffered (the message itself). The protocol is the message's:
//! `0x80 0x01` binary, `0x82` compact, so a framed connection may mix them as a server cannot
//! know better. Every complete message in what one read brought is answered, the answers go out
//! in one write (a pipelining client costs one read and one write per batch).
//!
//! Bad input closes the connection, as Apache's servers do, since a stream cannot be resynced:
//! a frame length of 0, negative or over [`MAX_MESSAGE`]; a buffered message still incomplete
//! past [`MAX_MESSAGE`] bytes; a message that breaks the protocol, or that is not a call. An
//! unknown method is answered with a `TApplicationException` (`UNKNOWN_METHOD`), its arguments
//! read and dropped, and the connection goes on.

mod calc;
mod val;

use std::sync::Arc;

use onrush_thrift::wire::{message, Decoder, Encoder, Protocol, WireError};
use tokio::net::TcpStream;

pub(crate) use calc::Calculator;

use crate::echo::{flush, read_more};
use crate::stats::{Event, Shared};
use calc::{Answer, Log, UNKNOWN_METHOD};
use val::{read_struct, write_struct, Val};

/// The largest message (a frame's payload, or a buffered message) a connection may send: the
/// Calculator's calls are small, and a decoded message takes up to ~40 times its wire size
/// (one tree node per wire byte at worst), so this bounds a connection's memory to tens of MB.
pub(crate) const MAX_MESSAGE: usize = 1 << 20;

/// Which transport a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Framed,
    Buffered,
}

/// The protocol of a message, from its first byte.
fn protocol_of(first: u8) -> Option<Protocol> {
    match first {
        0x80 => Some(Protocol::Binary),
        0x82 => Some(Protocol::Compact),
        _ => None,
    }
}

/// A connection's buffers and state, reused from call to call.
struct Conn<'a> {
    calc: &'a Calculator,
    out: Vec<u8>,
    stack: Vec<i16>,
    log: Log,
}

/// Serves one Thrift connection until the client closes it or breaks the protocol.
pub(crate) async fn serve(
    mut stream: TcpStream,
    transport: Transport,
    calc: Arc<Calculator>,
    shared: Arc<Shared>,
    shard: usize,
) {
    shared.count(shard, Event::ThriftConnection);
    let mut conn = Conn {
        calc: &calc,
        out: Vec::with_capacity(4096),
        stack: Vec::new(),
        log: Log::default(),
    };
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut filled = 0;
    loop {
        if !read_more(&mut stream, &mut buf, &mut filled).await {
            return;
        }
        let mut start = 0;
        loop {
            let used = match conn.next(transport, &buf[start..filled], &shared, shard) {
                Ok(Some(used)) => used,
                Ok(None) => break,
                Err(()) => {
                    // Answer what came before the bad message, then close.
                    let _ = flush(&mut stream, &mut conn.out).await;
                    return;
                }
            };
            start += used;
        }
        if !flush(&mut stream, &mut conn.out).await {
            return;
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        // A long message is read into a buffer grown to fit; once it is answered, memory goes
        // back to the usual size instead of staying at the connection's largest message.
        if buf.len() > 64 * 1024 && filled < 8192 {
            buf.truncate(8192);
            buf.shrink_to_fit();
        }
    }
}

impl Conn<'_> {
    /// Answers the next message at the start of `buf` into `out`: `Ok(Some(bytes it took))`,
    /// `Ok(None)` when it is incomplete, `Err` when the connection must close.
    fn next(
        &mut self,
        transport: Transport,
        buf: &[u8],
        shared: &Shared,
        shard: usize,
    ) -> Result<Option<usize>, ()> {
        match transport {
            Transport::Framed => {
                let Some(prefix) = buf.get(..4) else {
                    return Ok(None);
                };
                let len = i32::from_be_bytes(prefix.try_into().expect("4 bytes"));
                if len <= 0 || len as usize > MAX_MESSAGE {
                    return Err(());
                }
                let end = 4 + len as usize;
                let Some(payload) = buf.get(4..end) else {
                    return Ok(None);
                };
                let proto = protocol_of(payload[0]).ok_or(())?;
                let mark = self.out.len();
                self.out.extend_from_slice(&[0; 4]);
                match self.call(proto, payload, shared, shard) {
                    // The frame must hold exactly one message.
                    Ok(used) if used == payload.len() => {}
                    _ => {
                        self.out.truncate(mark);
                        return Err(());
                    }
                }
                let reply = self.out.len() - mark - 4;
                if reply == 0 {
                    // A oneway call: no frame at all.
                    self.out.truncate(mark);
                } else {
                    self.out[mark..mark + 4].copy_from_slice(&(reply as u32).to_be_bytes());
                }
                Ok(Some(end))
            }
            Transport::Buffered => {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                let proto = protocol_of(first).ok_or(())?;
                match self.call(proto, buf, shared, shard) {
                    Ok(used) => Ok(Some(used)),
                    Err(WireError::NeedMore) if buf.len() <= MAX_MESSAGE => Ok(None),
                    Err(_) => Err(()),
                }
            }
        }
    }

    /// Decodes one call at the start of `msg`, runs it and appends its reply (if any) to `out`;
    /// returns the bytes the call took. Nothing is appended unless the whole call decoded.
    fn call(
        &mut self,
        proto: Protocol,
        msg: &[u8],
        shared: &Shared,
        shard: usize,
    ) -> Result<usize, WireError> {
        let mut d = Decoder::new(proto, msg);
        let header = d.message_begin()?;
        if header.kind != message::CALL && header.kind != message::ONEWAY {
            return Err(WireError::Malformed("not a call"));
        }
        let args = read_struct(&mut d, 0)?;
        let used = d.position();
        shared.count(shard, Event::ThriftCall);
        // Replies name the method without the service, as Apache's multiplexed processors do.
        let bare = match header.name.iter().position(|&b| b == b':') {
            Some(colon) => &header.name[colon + 1..],
            None => header.name,
        };
        let answer = match self.calc.function(header.name) {
            Some(f) if f.oneway || header.kind == message::ONEWAY => Answer::None,
            Some(f) => self.calc.call(f, &args, &mut self.log),
            None => Answer::Application(
                UNKNOWN_METHOD,
                format!(
                    "Invalid method name: '{}'",
                    String::from_utf8_lossy(header.name)
                ),
            ),
        };
        if header.kind == message::ONEWAY {
            return Ok(used);
        }
        let mut e = Encoder::new(proto, &mut self.out, &mut self.stack);
        match answer {
            Answer::None => {}
            Answer::Result(fields) => {
                e.message_begin(bare, message::REPLY, header.seqid);
                write_struct(&mut e, &fields);
            }
            Answer::Application(kind, why) => {
                e.message_begin(bare, message::EXCEPTION, header.seqid);
                write_struct(
                    &mut e,
                    &[(1, Val::Bytes(why.into_bytes())), (2, Val::I32(kind))],
                );
            }
        }
        Ok(used)
    }
}

#[cfg(test)]
mod tests;
