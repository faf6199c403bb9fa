//! tokio's floor for a keep-alive request: see README.md beside this crate.

use std::cell::Cell;
use std::rc::Rc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr = args[1].clone();
    let n: u64 = args[2].parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let left = Rc::new(Cell::new(n));
    let sum = Rc::new(Cell::new(0u64));
    local.block_on(&rt, async move {
        let mut hs = vec![];
        for _ in 0..50 {
            let addr = addr.clone();
            let left = left.clone();
            let sum = sum.clone();
            hs.push(tokio::task::spawn_local(async move {
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
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
}
