//! `ConnectOptions` beyond nodelay, over real loopback TCP: a bound source address (with
//! IP_BIND_ADDRESS_NO_PORT), SO_LINGER {on, 0} (close by RST, no TIME_WAIT), and how failures
//! to use a source address are classified.

use crate::common;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use common::{get, listener, Reader, OK2};
use onrush_http1::{connect, ConnectOptions, ErrorKind};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

fn from(ip: &str) -> ConnectOptions {
    ConnectOptions {
        local_addr: Some(ip.parse().unwrap()),
        ..ConnectOptions::default()
    }
}

/// getsockopt(fd, level, name) as an int.
fn sockopt_int(fd: i32, level: i32, name: i32) -> i32 {
    let mut v: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a live fd, pointers to a local int and its length.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "{}", io::Error::last_os_error());
    v
}

#[tokio::test]
async fn the_server_sees_the_bound_source_address() {
    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let mut peers = Vec::new();
        for _ in 0..3 {
            let (s, peer) = l.accept().await.unwrap();
            peers.push(peer);
            let mut r = Reader::new(s);
            r.request().await.unwrap().unwrap();
            r.write(OK2).await.unwrap();
        }
        peers
    });
    let host = addr.to_string();
    let req = get(b"/", host.as_bytes());
    let mut locals = Vec::new();
    for ip in ["127.0.0.2", "127.0.0.3", "127.0.0.2"] {
        let mut conn = connect(addr, &from(ip)).await.unwrap();
        let local = conn.get_ref().local_addr().unwrap();
        assert_eq!(local.ip().to_string(), ip);
        assert_ne!(local.port(), 0, "connect() chose a port");
        let fd = conn.get_ref().as_raw_fd();
        assert_eq!(
            sockopt_int(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT),
            1,
            "the port is chosen at connect() from the 4-tuple"
        );
        assert_eq!(sockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY), 1);
        let resp = conn.send(&req, &mut Vec::new()).await.unwrap();
        assert_eq!(resp.status, 200);
        locals.push(local);
    }
    let peers = server.await.unwrap();
    assert_eq!(
        peers, locals,
        "the server saw our source addresses and ports"
    );
    assert_eq!(peers[0].ip(), "127.0.0.2".parse::<IpAddr>().unwrap());
    assert_eq!(peers[1].ip(), "127.0.0.3".parse::<IpAddr>().unwrap());
}

#[tokio::test]
async fn ipv6_source_address_when_the_host_has_ipv6() {
    let Ok(l) = TcpListener::bind("[::1]:0").await else {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    };
    let addr = l.local_addr().unwrap();
    let accept = tokio::spawn(async move { l.accept().await.unwrap().1 });
    let conn = connect(addr, &from("::1")).await.unwrap();
    let fd = conn.get_ref().as_raw_fd();
    // The kernel applies this SOL_IP option to IPv6 sockets too.
    assert_eq!(
        sockopt_int(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT),
        1
    );
    assert_eq!(accept.await.unwrap(), conn.get_ref().local_addr().unwrap());
}

#[tokio::test]
async fn a_plain_connect_sets_neither_option() {
    let (l, addr) = listener().await;
    let accept = tokio::spawn(async move { l.accept().await.unwrap() });
    let conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let fd = conn.get_ref().as_raw_fd();
    assert_eq!(
        sockopt_int(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT),
        0
    );
    assert_eq!(
        socket2::SockRef::from(conn.get_ref()).linger().unwrap(),
        None
    );
    assert_eq!(sockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY), 1);
    accept.await.unwrap();
}

/// An IPv4 socket address as /proc/net/tcp prints it: the in-memory u32 in hex, then the port.
fn proc_net_addr(a: SocketAddr) -> String {
    let SocketAddr::V4(v4) = a else {
        unreachable!("IPv4 only")
    };
    format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(v4.ip().octets()),
        v4.port()
    )
}

/// The /proc/net/tcp states (hex, "06" = TIME_WAIT) of the client sockets `local` -> `remote`.
///
/// One 4-tuple is one socket, but the kernel prints the table a page per read() and walks the
/// hash chains afresh each time: while other tests open and close sockets, a line can be
/// printed twice (CI saw `["06", "06"]`). Repeated lines are one socket, so they count once.
fn tcp_states(local: SocketAddr, remote: SocketAddr) -> Vec<String> {
    let (local, remote) = (proc_net_addr(local), proc_net_addr(remote));
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let mut states: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.get(1) == Some(&local.as_str()) && f.get(2) == Some(&remote.as_str()))
                .then(|| f[3].to_string())
        })
        .collect();
    states.sort();
    states.dedup();
    states
}

/// Connects, lets the client close first, and returns what the server's read saw, and the
/// client port's /proc/net/tcp states shortly after.
async fn close_first(opts: &ConnectOptions) -> (io::Result<usize>, Vec<String>) {
    let (l, addr) = listener().await;
    let conn = connect(addr, opts).await.unwrap();
    let local = conn.get_ref().local_addr().unwrap();
    let (mut s, _) = l.accept().await.unwrap();
    if opts.linger_reset {
        assert_eq!(
            socket2::SockRef::from(conn.get_ref()).linger().unwrap(),
            Some(Duration::ZERO)
        );
    }
    drop(conn);
    let mut buf = [0u8; 16];
    let read = s.read(&mut buf).await;
    drop(s); // the server closes its side: an orderly close ends in TIME_WAIT on the client
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut states = tcp_states(local, addr);
    while !opts.linger_reset && !states.contains(&"06".to_string()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        states = tcp_states(local, addr);
    }
    (read, states)
}

#[tokio::test]
async fn linger_reset_closes_with_rst_and_leaves_no_time_wait() {
    // Control: an orderly close leaves the client's port in TIME_WAIT.
    let (read, states) = close_first(&ConnectOptions::default()).await;
    assert_eq!(read.unwrap(), 0, "FIN: the server reads EOF");
    assert_eq!(states, ["06"], "TIME_WAIT on the client");

    let opts = ConnectOptions {
        linger_reset: true,
        ..ConnectOptions::default()
    };
    let (read, states) = close_first(&opts).await;
    assert_eq!(
        read.unwrap_err().kind(),
        io::ErrorKind::ConnectionReset,
        "RST: the server's read fails"
    );
    assert!(
        states.is_empty(),
        "no socket left on the client port: {states:?}"
    );
}

#[tokio::test]
async fn linger_reset_with_a_source_address() {
    let (l, addr) = listener().await;
    let opts = ConnectOptions {
        linger_reset: true,
        ..from("127.0.0.9")
    };
    let conn = connect(addr, &opts).await.unwrap();
    let (mut s, peer) = l.accept().await.unwrap();
    assert_eq!(peer.ip(), "127.0.0.9".parse::<IpAddr>().unwrap());
    drop(conn);
    let err = s.read(&mut [0u8; 16]).await.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
}

#[tokio::test]
async fn a_source_address_not_on_this_host_is_addr_not_available() {
    // 192.0.2.1 (TEST-NET-1) is on no interface: bind() fails locally, nothing is sent.
    let (_l, addr) = listener().await;
    let e = connect(addr, &from("192.0.2.1")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrNotAvailable);
    assert_eq!(
        e.io_error().unwrap().kind(),
        io::ErrorKind::AddrNotAvailable
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("source address 192.0.2.1 is not an address of this host"),
        "{msg}"
    );
    assert!(msg.contains(&addr.to_string()), "{msg}");
}

#[tokio::test]
async fn a_source_address_of_the_other_ip_version_is_refused() {
    let (_l, addr) = listener().await;
    let e = connect(addr, &from("::1")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectOther);
    assert!(e.to_string().contains("not of the same IP version"), "{e}");
}

#[tokio::test]
async fn refused_from_a_source_address_is_still_refused() {
    let (l, addr) = listener().await;
    drop(l);
    let e = connect(addr, &from("127.0.0.2")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectRefused);
}
