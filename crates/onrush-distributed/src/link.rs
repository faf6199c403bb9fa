//! The writing side of a control connection, the same for both ends: what is queued to be
//! sent, written in order, with a heartbeat every [`HEARTBEAT`] in between.

use std::sync::mpsc as std_mpsc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::wire::{self, Msg};
use crate::HEARTBEAT;

/// What the writer task sends.
pub(crate) enum Out {
    Msg(Msg),
    /// A message and the data frames that belong to it.
    WithData(Msg, Vec<u8>),
    /// Bare data frames (a file's bytes, after the message that announced it).
    Data(Vec<u8>),
    /// Flush and end; `done` is told when everything queued before is written.
    Close(std_mpsc::Sender<()>),
}

/// Writes what `rx` brings until it closes, a write fails, or [`Out::Close`].
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<Out>,
) {
    let mut beat = tokio::time::interval(HEARTBEAT);
    loop {
        tokio::select! {
            next = rx.recv() => {
                let ok = match next {
                    None => break,
                    Some(Out::Msg(m)) => wire::write_msg(&mut w, &m).await.is_ok(),
                    Some(Out::WithData(m, d)) => wire::write_msg(&mut w, &m).await.is_ok()
                        && wire::write_data(&mut w, &d).await.is_ok(),
                    Some(Out::Data(d)) => wire::write_data(&mut w, &d).await.is_ok(),
                    Some(Out::Close(done)) => {
                        let _ = w.shutdown().await;
                        let _ = done.send(());
                        return;
                    }
                };
                if !ok {
                    break;
                }
            }
            _ = beat.tick() => {
                if wire::write_msg(&mut w, &Msg::Heartbeat).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = w.shutdown().await;
}
