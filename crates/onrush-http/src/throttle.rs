//! A bandwidth cap per connection, for slow clients: [`Throttled`] wraps a byte stream (the TCP
//! socket, beneath TLS when there is one, so TLS overhead counts as on a real link) with one
//! token bucket per direction.
//!
//! Each bucket holds at most a tenth of a second of bytes (at least one byte), and starts full.
//! A read or write is limited to the tokens available; when the bucket is empty the task sleeps
//! (tokio timer) until enough tokens for a useful read or write (up to 16 KiB, never more than
//! the burst) have accumulated, so the rate is smooth and the syscall count stays sensible.
//! Unthrottled connections don't have the wrapper at all: their stream type is unchanged.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::{ConnectOptions, Error, ErrorKind};

/// The most bytes one read or write waits for when the bucket is empty.
const STEP: f64 = 16.0 * 1024.0;

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
    /// Made at the first wait (so `new` needs no runtime), then reused.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Bucket {
    fn new(burst: f64) -> Self {
        Bucket {
            tokens: burst,
            last: Instant::now(),
            sleep: None,
        }
    }

    /// Waits until at least one byte (and up to `want`, capped to the burst and [`STEP`]) may
    /// pass, and returns how many may pass now.
    fn poll_budget(
        &mut self,
        cx: &mut Context<'_>,
        rate: f64,
        burst: f64,
        want: usize,
    ) -> Poll<usize> {
        let target = (want as f64).min(burst).clamp(1.0, STEP);
        loop {
            let now = Instant::now();
            let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * rate).min(burst);
            self.last = now;
            if self.tokens >= target {
                return Poll::Ready((self.tokens as usize).clamp(1, want.max(1)));
            }
            let deadline = now + Duration::from_secs_f64((target - self.tokens) / rate);
            let sleep = match &mut self.sleep {
                Some(sleep) => {
                    sleep.as_mut().reset(deadline);
                    sleep
                }
                None => self
                    .sleep
                    .insert(Box::pin(tokio::time::sleep_until(deadline))),
            };
            ready!(sleep.as_mut().poll(cx));
        }
    }

    fn spend(&mut self, n: usize) {
        self.tokens -= n as f64;
    }
}

/// A byte stream whose reads and writes are each capped to `bytes_per_sec` (see the module
/// documentation). Wrap the TCP socket, beneath TLS if any.
#[derive(Debug)]
pub struct Throttled<S> {
    io: S,
    rate: f64,
    burst: f64,
    read: Bucket,
    write: Bucket,
}

impl<S> Throttled<S> {
    /// Wraps `io`, capping each direction to `bytes_per_sec` (at least 1).
    pub fn new(io: S, bytes_per_sec: u64) -> Self {
        let rate = bytes_per_sec.max(1) as f64;
        let burst = (rate / 10.0).max(1.0);
        Throttled {
            io,
            rate,
            burst,
            read: Bucket::new(burst),
            write: Bucket::new(burst),
        }
    }

    /// The cap, in bytes per second per direction.
    pub fn bytes_per_sec(&self) -> u64 {
        self.rate as u64
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// The wrapped stream, mutably (bytes read or written through it bypass the cap).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.io
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Throttled<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        let allowed = ready!(this
            .read
            .poll_budget(cx, this.rate, this.burst, buf.remaining()));
        let slice = buf.initialize_unfilled_to(allowed);
        let mut limited = ReadBuf::new(slice);
        ready!(Pin::new(&mut this.io).poll_read(cx, &mut limited))?;
        let n = limited.filled().len();
        buf.advance(n);
        this.read.spend(n);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Throttled<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if buf.is_empty() {
            return Pin::new(&mut this.io).poll_write(cx, buf);
        }
        let allowed = ready!(this.write.poll_budget(cx, this.rate, this.burst, buf.len()));
        let n = ready!(Pin::new(&mut this.io).poll_write(cx, &buf[..allowed]))?;
        this.write.spend(n);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// The cap of `opts` for a throttled connect function: an error when it is unset (the caller
/// should have used the unthrottled one) or zero (nothing could ever be sent).
pub fn required_rate(opts: &ConnectOptions) -> Result<u64, Error> {
    match opts.throttle {
        Some(0) => Err(Error::new(
            ErrorKind::ConnectOther,
            "ConnectOptions::throttle is 0 bytes per second: nothing could be sent",
        )),
        Some(rate) => Ok(rate),
        None => Err(Error::new(
            ErrorKind::ConnectOther,
            "ConnectOptions::throttle is not set: open the connection with connect or connect_tls",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn rate_and_burst_on_a_duplex_pipe() {
        // A paused clock: the sleeps advance virtual time, so the figures are exact.
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let mut t = Throttled::new(a, 100_000); // burst 10,000 bytes
        let started = Instant::now();
        let data = vec![7u8; 300_000];
        let writer = tokio::spawn(async move {
            t.write_all(&data).await.unwrap();
            t
        });
        let mut got = vec![0u8; 300_000];
        b.read_exact(&mut got).await.unwrap();
        let t = writer.await.unwrap();
        let took = started.elapsed().as_secs_f64();
        // 300,000 bytes at 100,000/s with a 10,000-byte head start: 2.9 s.
        assert!((2.85..3.0).contains(&took), "took {took}");
        assert_eq!(t.bytes_per_sec(), 100_000);

        // Reads: the same cap.
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let mut t = Throttled::new(a, 50_000);
        b.write_all(&vec![1u8; 100_000]).await.unwrap();
        let started = Instant::now();
        let mut got = vec![0u8; 100_000];
        t.read_exact(&mut got).await.unwrap();
        let took = started.elapsed().as_secs_f64();
        assert!((1.85..2.0).contains(&took), "took {took}");
    }

    #[test]
    fn tiny_rates_still_move() {
        let b = Throttled::new((), 0);
        assert_eq!(b.bytes_per_sec(), 1);
        assert_eq!(b.burst, 1.0);
        let b = Throttled::new((), 5_000);
        assert_eq!(b.burst, 500.0);
    }
}
