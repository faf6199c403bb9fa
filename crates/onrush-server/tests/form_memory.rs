//! A 200 MB multipart upload to `/form` is hashed while it streams: the process (client and
//! server) must not grow by anything like the file size. Alone in its own test binary so no
//! other test's allocations disturb the measurement.

mod common;

use common::{server, Client};
use sha2::{Digest, Sha256};

#[test]
fn multipart_upload_of_200_mb_is_streamed_in_constant_memory() {
    let s = server(1);
    let mut c = Client::connect(s.local_addr());
    let boundary = "onrush-memory-test";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let size: u64 = 200 << 20;
    let piece: Vec<u8> = (0..1 << 16).map(|i| i as u8).collect();
    let ct = format!("multipart/form-data; boundary={boundary}");
    let len = (head.len() + tail.len()) as u64 + size;
    let before = common::rss_kib();
    c.write_raw(
        format!(
            "POST /form HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ct}\r\n\
             Content-Length: {len}\r\n\r\n"
        )
        .as_bytes(),
    );
    c.write_raw(head.as_bytes());
    let mut hasher = Sha256::new();
    let mut sent = 0;
    while sent < size {
        c.write_raw(&piece);
        hasher.update(&piece);
        sent += piece.len() as u64;
    }
    c.write_raw(tail.as_bytes());
    let r = c.read_response(false, false);
    let grown_mib = common::rss_kib().saturating_sub(before) / 1024;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let file = &r.json()["files"][0];
    assert_eq!(file["length"], size);
    let expected: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(file["sha256"], expected);
    assert!(
        grown_mib < 50,
        "RSS grew by {grown_mib} MiB during a 200 MiB upload"
    );
}
