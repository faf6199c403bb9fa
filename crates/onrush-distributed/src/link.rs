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
    /// A message and the data that belongs to it (one buffer per file it announces),
    /// written back to back: no heartbeat may come between a message and its data, since
    /// the reader takes the frames after the message as its data.
    WithData(Msg, Vec<Vec<u8>>),
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
                    Some(Out::WithData(m, data)) => write_with_data(&mut w, &m, &data).await,
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

async fn write_with_data<W: AsyncWrite + Unpin>(w: &mut W, m: &Msg, data: &[Vec<u8>]) -> bool {
    if wire::write_msg(w, m).await.is_err() {
        return false;
    }
    for d in data {
        if wire::write_data(w, d).await.is_err() {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Frame;

    /// The reader takes the frames after a message as its data: a heartbeat due while the
    /// files of a plan are written (a slow reader, a loaded machine) must wait for them.
    #[tokio::test(start_paused = true)]
    async fn no_heartbeat_comes_between_a_message_and_its_files() {
        let (w, mut r) = tokio::io::duplex(256);
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_loop(w, rx));
        let files = vec![
            vec![1u8; 3 * wire::CHUNK + 17],
            vec![2u8; 5000],
            vec![3u8; 1],
        ];
        tx.send(Out::WithData(Msg::Intervals, files.clone()))
            .unwrap();
        let mut frames = Vec::new();
        let want: usize = files.iter().map(Vec::len).sum();
        let mut data = 0;
        while data < want {
            // Each read waits longer than a heartbeat: several fall due during the write.
            tokio::time::sleep(HEARTBEAT * 3).await;
            let frame = wire::read_frame(&mut r).await.unwrap();
            if let Frame::Data(d) = &frame {
                data += d.len();
            }
            frames.push(frame);
            if frames.len() > 16 {
                break;
            }
        }
        let first = frames
            .iter()
            .position(|f| matches!(f, Frame::Msg(Msg::Intervals)))
            .expect("the message was written");
        let after: Vec<&Frame> = frames[first + 1..].iter().collect();
        assert!(
            after.iter().all(|f| matches!(f, Frame::Data(_))),
            "a message came between the message and its data: {:?}",
            after
                .iter()
                .map(|f| match f {
                    Frame::Msg(m) => format!("{m:?}"),
                    Frame::Data(d) => format!("data({})", d.len()),
                })
                .collect::<Vec<_>>()
        );
        assert_eq!(data, want);
        drop(tx);
        drop(r);
        let _ = writer.await;
    }
}
