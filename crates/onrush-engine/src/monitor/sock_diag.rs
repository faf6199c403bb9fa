//! Counting the TCP sockets towards the targets with the kernel's sock_diag netlink interface
//! (what `ss` uses), rather than by reading `/proc/net/tcp*`.
//!
//! Why: those files are text the kernel formats, ~150 bytes a line, for every socket of the
//! network namespace. A test that opens a connection per request against a local target
//! leaves the target's side of each in TIME_WAIT (the server closes first), so once a second
//! the monitor had the kernel print ~100,000 lines nobody wanted: 7.5% of the tool's CPU
//! (`perf record`, 30,000 new connections a second, loopback). A sock_diag dump asks for the
//! sockets whose remote port is the target's; the kernel skips the others while walking its
//! table and formats nothing: the answer is one 72-byte binary record per matching socket.
//!
//! The requests and answers are encoded and decoded here without I/O ([`dump_request`],
//! [`count_answer`]); [`SockDiag`] only sends and receives them.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::proc::SocketCounts;

/// `linux/sock_diag.h`: the message type of a dump by address family.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `linux/netlink.h`.
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_MULTI: u16 = 2;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_HDRLEN: usize = 16;
/// `struct inet_diag_req_v2`: family, protocol, extensions, pad, states, then the socket id.
const REQ_LEN: usize = 56;
/// `struct inet_diag_msg`, without attributes (none are asked for).
const MSG_LEN: usize = 72;
/// Every TCP state but LISTEN (a listener has no remote end): bits 1 (ESTABLISHED) to 11
/// (CLOSING) and 12 (NEW_SYN_RECV).
const STATES: u32 = 0x1FFE & !(1 << 10);
const TCP_ESTABLISHED: u8 = 1;
const TCP_TIME_WAIT: u8 = 6;
/// A dump's answer comes in datagrams of at most ~32 KiB (the kernel's dump buffer).
const RECV_BUF: usize = 64 * 1024;

/// A netlink socket for sock_diag, opened once (before the load takes the descriptors) and
/// asked again every time the sockets are counted.
pub struct SockDiag {
    fd: OwnedFd,
    buf: Vec<u8>,
    seq: u32,
}

impl SockDiag {
    /// `None` where the kernel has no sock_diag (or forbids netlink): the caller reads /proc.
    pub fn open() -> Option<SockDiag> {
        // SAFETY: plain socket(2); the descriptor is owned by the OwnedFd right after.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd was just opened and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // A dump always ends; a bound on the wait keeps a kernel that does not answer from
        // stalling the collector (the count then falls back to /proc).
        let timeout = libc::timeval {
            tv_sec: 1,
            tv_usec: 0,
        };
        // SAFETY: valid option pointer and length for SO_RCVTIMEO.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            );
        }
        Some(SockDiag {
            fd,
            buf: vec![0; RECV_BUF],
            seq: 0,
        })
    }

    /// Counts, by state, the TCP sockets of this network namespace whose remote end is one of
    /// `targets`, in the target's own address family (onrush reaches an IPv4 target through
    /// an IPv4 socket): what [`super::proc::ProcFiles::sockets_towards`] counts from the /proc
    /// files.
    ///
    /// One dump per port and family of the targets. Each walks every TCP socket of the
    /// namespace, the target's TIME_WAITs included (~1.5 ms with ~30,000 of them), whatever
    /// family it asks for: asking IPv6 as well for an IPv4 target, for another program's
    /// dual-stack sockets to it, doubled the monitor's cost of a count, ~0.2% of a 3-second
    /// test's CPU that opens a connection per request (docs/benchmarks.md, session 9).
    pub fn sockets_towards(&mut self, targets: &[SocketAddr]) -> io::Result<SocketCounts> {
        let mut counts = SocketCounts::default();
        let mut asks: Vec<(u16, u8)> = targets
            .iter()
            .map(|t| {
                let family = if t.is_ipv4() {
                    libc::AF_INET
                } else {
                    libc::AF_INET6
                };
                (t.port(), family as u8)
            })
            .collect();
        asks.sort_unstable();
        asks.dedup();
        for (port, family) in asks {
            self.seq = self.seq.wrapping_add(1);
            self.dump(&dump_request(family, port, self.seq), targets, &mut counts)?;
        }
        Ok(counts)
    }

    /// Sends one dump request and counts its answer, datagram by datagram, until its end.
    fn dump(
        &mut self,
        request: &[u8],
        targets: &[SocketAddr],
        counts: &mut SocketCounts,
    ) -> io::Result<()> {
        // SAFETY: sockaddr_nl is plain integers, for which all-zero bytes are a valid value (the
        // kernel's own address: pid 0, no groups).
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: request and the address are valid for their lengths.
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                request.as_ptr().cast(),
                request.len(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            // SAFETY: the kernel writes at most buf.len() bytes into buf.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            match count_answer(&self.buf[..n as usize], self.seq, targets, counts)? {
                Answer::More => {}
                Answer::Done => return Ok(()),
            }
        }
    }
}

/// A `SOCK_DIAG_BY_FAMILY` dump request for the TCP sockets of `family` whose remote port is
/// `port`, in any state but LISTEN. The kernel compares the remote port while it walks its
/// table (`inet_diag_dump_icsk`); the address is compared on this side ([`count_answer`]).
pub fn dump_request(family: u8, port: u16, seq: u32) -> Vec<u8> {
    let len = NLMSG_HDRLEN + REQ_LEN;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // to the kernel
    m.push(family);
    m.push(libc::IPPROTO_TCP as u8);
    m.push(0); // no extensions
    m.push(0);
    m.extend_from_slice(&STATES.to_ne_bytes());
    // inet_diag_sockid: source port (any), remote port (network order), then addresses,
    // interface and cookie, all zero (not compared in a dump).
    m.extend_from_slice(&[0, 0]);
    m.extend_from_slice(&port.to_be_bytes());
    m.resize(len, 0);
    m
}

/// Whether a dump's answer goes on after this datagram.
#[derive(Debug, PartialEq)]
pub enum Answer {
    More,
    Done,
}

/// Counts the sockets of one datagram of a dump's answer towards `targets`. Messages of
/// another sequence number (a late answer to an earlier request) are skipped.
pub fn count_answer(
    datagram: &[u8],
    seq: u32,
    targets: &[SocketAddr],
    counts: &mut SocketCounts,
) -> io::Result<Answer> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("sock_diag: {what}"));
    let mut at = 0;
    let mut multi = false;
    while at + NLMSG_HDRLEN <= datagram.len() {
        let u32_at = |i: usize| u32::from_ne_bytes(datagram[i..i + 4].try_into().unwrap());
        let len = u32_at(at) as usize;
        let kind = u16::from_ne_bytes([datagram[at + 4], datagram[at + 5]]);
        let flags = u16::from_ne_bytes([datagram[at + 6], datagram[at + 7]]);
        if len < NLMSG_HDRLEN || at + len > datagram.len() {
            return Err(bad("a message's length runs past its datagram"));
        }
        let body = &datagram[at + NLMSG_HDRLEN..at + len];
        let ours = u32_at(at + 8) == seq;
        // Messages are aligned to 4 bytes.
        at += (len + 3) & !3;
        if !ours {
            continue;
        }
        multi |= flags & NLM_F_MULTI != 0;
        match kind {
            NLMSG_DONE => return Ok(Answer::Done),
            NLMSG_ERROR => {
                let errno = body
                    .get(..4)
                    .map_or(0, |b| i32::from_ne_bytes(b.try_into().unwrap()));
                // An error message with errno 0 is an acknowledgement.
                return match errno {
                    0 => Ok(Answer::Done),
                    e => Err(io::Error::from_raw_os_error(-e)),
                };
            }
            SOCK_DIAG_BY_FAMILY if body.len() >= MSG_LEN => count_socket(body, targets, counts),
            SOCK_DIAG_BY_FAMILY => return Err(bad("a socket record shorter than inet_diag_msg")),
            _ => {}
        }
    }
    // A dump's answer is multipart and ends with NLMSG_DONE; a lone message is the whole of it.
    Ok(if multi { Answer::More } else { Answer::Done })
}

/// Counts one `inet_diag_msg` if its remote end is one of `targets`.
fn count_socket(msg: &[u8], targets: &[SocketAddr], counts: &mut SocketCounts) {
    let (family, state) = (msg[0], msg[1]);
    // inet_diag_sockid at 4: source port, remote port, source address (16), remote (16).
    let port = u16::from_be_bytes([msg[6], msg[7]]);
    let remote = &msg[24..40];
    let towards = |t: &SocketAddr| {
        t.port() == port
            && match (t.ip(), family as i32) {
                (IpAddr::V4(v4), libc::AF_INET) => remote[..4] == v4.octets(),
                (IpAddr::V4(v4), libc::AF_INET6) => remote == v4.to_ipv6_mapped().octets(),
                (IpAddr::V6(v6), libc::AF_INET6) => remote == v6.octets(),
                _ => false,
            }
    };
    if !targets.iter().any(towards) {
        return;
    }
    counts.total += 1;
    match state {
        TCP_ESTABLISHED => counts.established += 1,
        TCP_TIME_WAIT => counts.time_wait += 1,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// One socket record as the kernel writes it.
    fn record(seq: u32, family: u8, state: u8, remote: SocketAddr) -> Vec<u8> {
        let mut body = vec![0u8; MSG_LEN];
        body[0] = family;
        body[1] = state;
        body[4..6].copy_from_slice(&40000u16.to_be_bytes());
        body[6..8].copy_from_slice(&remote.port().to_be_bytes());
        match remote.ip() {
            IpAddr::V4(v4) if family == libc::AF_INET as u8 => {
                body[24..28].copy_from_slice(&v4.octets())
            }
            IpAddr::V4(v4) => body[24..40].copy_from_slice(&v4.to_ipv6_mapped().octets()),
            IpAddr::V6(v6) => body[24..40].copy_from_slice(&v6.octets()),
        }
        message(SOCK_DIAG_BY_FAMILY, NLM_F_MULTI, seq, &body)
    }

    fn message(kind: u16, flags: u16, seq: u32, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&flags.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn a_request_asks_for_one_remote_port_in_every_state_but_listen() {
        let r = dump_request(libc::AF_INET6 as u8, 8080, 7);
        assert_eq!(r.len(), 72);
        assert_eq!(u32::from_ne_bytes(r[..4].try_into().unwrap()), 72);
        assert_eq!(u16::from_ne_bytes([r[4], r[5]]), SOCK_DIAG_BY_FAMILY);
        assert_eq!(u16::from_ne_bytes([r[6], r[7]]), 0x301);
        assert_eq!(u32::from_ne_bytes(r[8..12].try_into().unwrap()), 7);
        assert_eq!(
            (r[16], r[17]),
            (libc::AF_INET6 as u8, libc::IPPROTO_TCP as u8)
        );
        let states = u32::from_ne_bytes(r[20..24].try_into().unwrap());
        assert_eq!(states & (1 << 10), 0, "no listeners");
        assert_ne!(states & (1 << 1), 0);
        assert_ne!(states & (1 << 6), 0);
        assert_eq!(&r[24..28], &[0, 0, 0x1F, 0x90]);
        assert!(r[28..].iter().all(|b| *b == 0));
    }

    #[test]
    fn an_answer_counts_the_sockets_towards_the_targets_by_state() {
        let target: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let v6: SocketAddr = "[fd00::10]:8080".parse().unwrap();
        let other: SocketAddr = "127.0.0.2:8080".parse().unwrap();
        let (inet, inet6) = (libc::AF_INET as u8, libc::AF_INET6 as u8);
        let mut datagram = Vec::new();
        datagram.extend(record(3, inet, TCP_ESTABLISHED, target));
        datagram.extend(record(3, inet, TCP_TIME_WAIT, target));
        datagram.extend(record(3, inet6, TCP_ESTABLISHED, target)); // v4-mapped
        datagram.extend(record(3, inet6, TCP_TIME_WAIT, v6));
        datagram.extend(record(3, inet, 8, target)); // CLOSE_WAIT: only in the total
        datagram.extend(record(3, inet, TCP_ESTABLISHED, other));
        datagram.extend(record(2, inet, TCP_ESTABLISHED, target)); // an earlier request's
        let mut counts = SocketCounts::default();
        let targets = [target, v6];
        assert_eq!(
            count_answer(&datagram, 3, &targets, &mut counts).unwrap(),
            Answer::More
        );
        assert_eq!(
            counts,
            SocketCounts {
                established: 2,
                time_wait: 2,
                total: 5
            }
        );
        let done = message(NLMSG_DONE, NLM_F_MULTI, 3, &0i32.to_ne_bytes());
        assert_eq!(
            count_answer(&done, 3, &targets, &mut counts).unwrap(),
            Answer::Done
        );
        assert_eq!(counts.total, 5);
    }

    #[test]
    fn a_refusal_or_a_cut_message_is_an_error_not_a_count() {
        let refused = message(NLMSG_ERROR, 0, 1, &(-libc::EPERM).to_ne_bytes());
        let e = count_answer(&refused, 1, &[], &mut SocketCounts::default()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        let target: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let mut cut = record(1, libc::AF_INET as u8, TCP_ESTABLISHED, target);
        cut.truncate(40);
        assert!(count_answer(&cut, 1, &[target], &mut SocketCounts::default()).is_err());
        let mut short = message(SOCK_DIAG_BY_FAMILY, NLM_F_MULTI, 1, &[0; 20]);
        short.extend(message(NLMSG_DONE, NLM_F_MULTI, 1, &[0; 4]));
        assert!(count_answer(&short, 1, &[target], &mut SocketCounts::default()).is_err());
    }

    /// The kernel's own answer, against sockets this test holds: 3 connections established
    /// and 2 in TIME_WAIT (the client closed first) towards a listener, and the same count
    /// read from /proc/net/tcp*.
    #[test]
    fn the_kernel_counts_what_the_proc_files_list() {
        let Some(mut diag) = SockDiag::open() else {
            eprintln!("no sock_diag here: nothing to compare");
            return;
        };
        // A loopback address of its own: another test's TIME_WAIT sockets towards a port this
        // listener may get again would be counted too (see monitor/mod.rs's tests).
        let listener = TcpListener::bind((std::net::Ipv4Addr::new(127, 0, 0, 104), 0)).unwrap();
        let target = listener.local_addr().unwrap();
        let mut held = Vec::new();
        for i in 0..5 {
            let mut client = TcpStream::connect(target).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            if i < 3 {
                held.push((client, server));
            } else {
                // The client closes first and keeps the TIME_WAIT; the server sees its FIN
                // before closing, so both FINs are acknowledged by the time it returns.
                client.write_all(b"x").unwrap();
                drop(client);
                let mut rest = Vec::new();
                server.read_to_end(&mut rest).unwrap();
                drop(server);
            }
        }
        // The last ACK crosses loopback right away, but give it a moment on a busy machine.
        let mut counts = SocketCounts::default();
        for _ in 0..100 {
            counts = diag.sockets_towards(&[target]).unwrap();
            if counts.time_wait == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            counts,
            SocketCounts {
                established: 3,
                time_wait: 2,
                total: 5
            }
        );
        let from_proc = super::super::proc::ProcFiles::open_proc_only().sockets_towards(&[target]);
        assert_eq!(from_proc, counts, "/proc/net/tcp* agree");
        // Asked again on the same socket: the same answer.
        assert_eq!(diag.sockets_towards(&[target]).unwrap(), counts);
        drop(held);
    }
}
