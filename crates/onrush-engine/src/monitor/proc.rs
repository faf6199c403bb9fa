//! Reading the process's own figures from /proc: CPU per thread, RSS, open descriptors, and
//! the TCP sockets towards the targets (to see the ephemeral-port wall coming).

use std::fs;
use std::net::{IpAddr, SocketAddr};

/// Clock ticks per second of /proc's CPU times.
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// user + system CPU ticks of one thread of this process, or of the whole process (tid None).
pub fn cpu_ticks(tid: Option<i32>) -> Option<u64> {
    let path = match tid {
        Some(t) => format!("/proc/self/task/{t}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let text = fs::read_to_string(path).ok()?;
    // The command name (field 2) may hold spaces: fields are counted after its closing ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split_ascii_whitespace();
    // After ')': state is field 3; utime is field 14, stime 15 → indexes 11 and 12 here.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Resident set size in bytes.
pub fn rss_bytes() -> Option<u64> {
    let text = fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(pages * page)
}

/// Peak resident set size in bytes (VmHWM): the most memory the process ever held.
pub fn peak_rss_bytes() -> Option<u64> {
    let text = fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Open file descriptors of this process.
pub fn open_fds() -> Option<u64> {
    Some(fs::read_dir("/proc/self/fd").ok()?.count() as u64)
}

/// Size of the ephemeral port range (net.ipv4.ip_local_port_range).
pub fn ephemeral_ports() -> Option<u64> {
    let text = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_ascii_whitespace().map(|v| v.parse::<u64>());
    let (lo, hi) = (it.next()?.ok()?, it.next()?.ok()?);
    Some(hi.saturating_sub(lo) + 1)
}

/// Sockets of the whole network namespace towards `targets`, by state.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct SocketCounts {
    pub established: u64,
    pub time_wait: u64,
    /// Any state (each holds a local port towards the target).
    pub total: u64,
}

pub fn sockets_towards(targets: &[SocketAddr]) -> SocketCounts {
    let mut counts = SocketCounts::default();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = fs::read_to_string(file) {
            count_sockets(&text, targets, &mut counts);
        }
    }
    counts
}

/// Parses /proc/net/tcp{,6} text: `sl local rem st ...`, addresses as hex `ADDR:PORT`.
fn count_sockets(text: &str, targets: &[SocketAddr], counts: &mut SocketCounts) {
    for line in text.lines().skip(1) {
        let mut fields = line.split_ascii_whitespace();
        let (Some(_), Some(_), Some(remote), Some(state)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Some(remote) = parse_hex_addr(remote) else {
            continue;
        };
        if !targets.contains(&remote) {
            continue;
        }
        counts.total += 1;
        match state {
            "01" => counts.established += 1,
            "06" => counts.time_wait += 1,
            _ => {}
        }
    }
}

fn parse_hex_addr(s: &str) -> Option<SocketAddr> {
    let (addr, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = match addr.len() {
        // One native-endian (little on x86/arm) 32-bit word.
        8 => IpAddr::from(
            u32::from_str_radix(addr, 16)
                .ok()?
                .swap_bytes()
                .to_be_bytes(),
        ),
        // Four native-endian 32-bit words.
        32 => {
            let mut bytes = [0u8; 16];
            for w in 0..4 {
                let word = u32::from_str_radix(&addr[w * 8..w * 8 + 8], 16).ok()?;
                bytes[w * 4..w * 4 + 4].copy_from_slice(&word.swap_bytes().to_be_bytes());
            }
            let v6 = std::net::Ipv6Addr::from(bytes);
            match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(v6),
            }
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_threads_cpu() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            tx.send(unsafe { libc::gettid() }).unwrap();
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < std::time::Duration::from_millis(300) {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            x
        });
        let tid = rx.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(350));
        let ticks = cpu_ticks(Some(tid)).expect("the thread's stat is readable");
        t.join().unwrap();
        assert!(
            ticks >= 10,
            "a thread that spun 300 ms has used CPU: {ticks} ticks"
        );
    }

    #[test]
    fn reads_own_figures() {
        assert!(cpu_ticks(None).is_some());
        assert!(rss_bytes().unwrap() > 0);
        assert!(open_fds().unwrap() > 2);
    }

    #[test]
    fn counts_sockets_towards_a_target() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 20 4 30 10 -1\n\
   1: 0100007F:9C41 0100007F:1F90 06 00000000:00000000 03:00000F9C 00000000     0        0 0 3 0000000000000000\n\
   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0\n\
   3: 0200007F:9C42 0100007F:0050 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1\n";
        let mut counts = SocketCounts::default();
        count_sockets(text, &["127.0.0.1:8080".parse().unwrap()], &mut counts);
        assert_eq!(
            counts,
            SocketCounts {
                established: 1,
                time_wait: 1,
                total: 2
            }
        );
        let v6 = "  sl  local rem st\n   0: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000100007F:1F90 01 x\n";
        let mut counts = SocketCounts::default();
        count_sockets(v6, &["127.0.0.1:8080".parse().unwrap()], &mut counts);
        assert_eq!(counts.established, 1);
    }
}
