//! tokio's floor for a keep-alive request: see README.md beside this crate.
//!
//!     tokio_floor ADDR REQUESTS [tasks|set]
//!
//! `tasks` (the default): each connection's loop is a task of the `LocalSet`. `set`: the loops
//! are futures of one task, in futures-util's `FuturesUnordered` (what onrush's `VuSet` was
//! measured against).

use std::cell::Cell;
use std::rc::Rc;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One connection's closed loop: a fixed request, read until the head's end plus the 18-byte
/// body of `onrush serve`'s answer, one clock read before and after.
async fn connection(addr: String, left: Rc<Cell<u64>>, sum: Rc<Cell<u64>>) {
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let req = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let mut buf = vec![0u8; 8192];
    while left.get() > 0 {
        left.set(left.get() - 1);
        let t0 = std::time::Instant::now();
        s.write_all(&req).await.unwrap();
        let mut got = 0;
        loop {
            let k = s.read(&mut buf[got..]).await.unwrap();
            got += k;
            // head end + content-length 18
            if let Some(p) = buf[..got].windows(4).position(|w| w == b"\r\n\r\n") {
                if got >= p + 4 + 18 {
                    break;
                }
            }
        }
        sum.set(sum.get() + t0.elapsed().as_nanos() as u64);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr = args[1].clone();
    let n: u64 = args[2].parse().unwrap();
    let set = args.get(3).is_some_and(|m| m == "set");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let left = Rc::new(Cell::new(n));
    let sum = Rc::new(Cell::new(0u64));
    local.block_on(&rt, async move {
        if set {
            let all = tokio::task::spawn_local(async move {
                let mut loops = FuturesUnordered::new();
                for _ in 0..50 {
                    loops.push(connection(addr.clone(), left.clone(), sum.clone()));
                }
                while loops.next().await.is_some() {}
            });
            all.await.unwrap();
        } else {
            let mut hs = vec![];
            for _ in 0..50 {
                let task = connection(addr.clone(), left.clone(), sum.clone());
                hs.push(tokio::task::spawn_local(task));
            }
            for h in hs {
                h.await.unwrap();
            }
        }
    });
}
