//! Reading a command's output pipe: at most a limit is kept, the rest is read (so the command
//! never blocks on a full pipe) and only counted.

use std::cell::Cell;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Reads `pipe` to its end, appending at most `limit` bytes to `keep`; `total` counts every
/// byte read (kept or not), updated as they come so that a step cut by its timeout still
/// reports what arrived. Read errors end the reading (the exit status says what happened).
pub(crate) async fn read_capped<R: AsyncRead + Unpin>(
    pipe: Option<R>,
    keep: &mut Vec<u8>,
    limit: usize,
    total: &Cell<u64>,
) {
    let Some(mut pipe) = pipe else { return };
    let start = keep.len();
    // On the heap, not the stack: an array here lives in the step's future (twice: stdout and
    // stderr are read together), and the largest protocol future sizes every VU of every
    // protocol (onrush-protocols' `Either`): 8 KiB arrays made an idle HTTP VU 16 KiB larger.
    // One allocation beside a process spawn is nothing.
    let mut chunk = vec![0u8; 8192];
    loop {
        let n = match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        total.set(total.get() + n as u64);
        let room = (start + limit).saturating_sub(keep.len());
        keep.extend_from_slice(&chunk[..n.min(room)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn keeps_the_limit_and_counts_the_rest() {
        let data = vec![7u8; 100_000];
        let mut keep = b"prefix".to_vec();
        let total = Cell::new(0);
        read_capped(Some(&data[..]), &mut keep, 1000, &total).await;
        assert_eq!(keep.len(), 6 + 1000);
        assert_eq!(&keep[..6], b"prefix");
        assert_eq!(total.get(), 100_000);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn short_output_is_kept_whole() {
        let mut keep = Vec::new();
        let total = Cell::new(0);
        read_capped(Some(&b"hello\n"[..]), &mut keep, 1000, &total).await;
        assert_eq!(keep, b"hello\n");
        assert_eq!(total.get(), 6);
    }
}
