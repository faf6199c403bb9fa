//! Reading the process's own figures from /proc: CPU per thread, RSS, open descriptors, and
//! the TCP sockets towards the targets (to see the ephemeral-port wall coming).

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;

use super::sock_diag::SockDiag;

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

/// The /proc files the monitor reads every second, opened once before the load and re-read in
/// place (seek to 0, read): a process that has run out of file descriptors can still read them.
/// Opening them anew each second failed exactly when it mattered: with every descriptor taken
/// by connections, the monitor saw 0% CPU and 8 open files and called the run healthy.
pub struct ProcFiles {
    stat: Option<File>,
    statm: Option<File>,
    status: Option<File>,
    /// `/proc/self/fd`, listed with getdents64 on this descriptor.
    fd_dir: Option<File>,
    /// `/proc/self/task/TID/stat` per worker, opened once the worker has told its TID.
    tasks: Vec<(i32, Option<File>)>,
    /// The sockets towards the targets are asked of the kernel's sock_diag where it has one
    /// ([`super::sock_diag`]); the /proc files are read where it has not.
    diag: Option<SockDiag>,
    tcp: [Option<File>; 2],
    text: String,
    /// The piece of a socket list being read ([`ProcFiles::sockets_towards`]).
    chunk: Vec<u8>,
}

impl ProcFiles {
    pub fn open() -> ProcFiles {
        ProcFiles {
            diag: SockDiag::open(),
            ..ProcFiles::open_proc_only()
        }
    }

    /// The files alone, without sock_diag: what [`ProcFiles::open`] falls back to.
    pub fn open_proc_only() -> ProcFiles {
        let open = |path: &str| File::open(path).ok();
        ProcFiles {
            diag: None,
            stat: open("/proc/self/stat"),
            statm: open("/proc/self/statm"),
            status: open("/proc/self/status"),
            fd_dir: open("/proc/self/fd"),
            tasks: Vec::new(),
            tcp: [open("/proc/net/tcp"), open("/proc/net/tcp6")],
            text: String::new(),
            chunk: Vec::new(),
        }
    }

    /// Opens the stat files of the workers whose TIDs are known (before the load starts, while
    /// descriptors are free); a TID already open is kept.
    pub fn open_tasks(&mut self, tids: &[i32]) {
        self.tasks.resize_with(tids.len(), || (0, None));
        for (slot, &tid) in self.tasks.iter_mut().zip(tids) {
            if tid != 0 && (slot.0 != tid || slot.1.is_none()) {
                *slot = (tid, File::open(format!("/proc/self/task/{tid}/stat")).ok());
            }
        }
    }

    /// The TIDs whose stat files are open (0: none).
    pub fn task_ids(&self) -> impl Iterator<Item = i32> + '_ {
        self.tasks
            .iter()
            .map(|(tid, f)| if f.is_some() { *tid } else { 0 })
            .chain(std::iter::repeat(0))
    }

    /// user + system CPU ticks of worker `index`, or of the whole process (`None`).
    pub fn cpu_ticks(&mut self, worker: Option<usize>) -> Option<u64> {
        let file = match worker {
            Some(i) => self.tasks.get_mut(i)?.1.as_mut()?,
            None => self.stat.as_mut()?,
        };
        reread(file, &mut self.text).ok()?;
        parse_cpu_ticks(&self.text)
    }

    /// Resident set size in bytes.
    pub fn rss_bytes(&mut self) -> Option<u64> {
        reread(self.statm.as_mut()?, &mut self.text).ok()?;
        let pages: u64 = self.text.split_ascii_whitespace().nth(1)?.parse().ok()?;
        Some(pages * page_size())
    }

    /// Peak resident set size in bytes (VmHWM): the most memory the process ever held.
    pub fn peak_rss_bytes(&mut self) -> Option<u64> {
        reread(self.status.as_mut()?, &mut self.text).ok()?;
        let line = self.text.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_ascii_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Open file descriptors of this process (this reader's own included).
    pub fn open_fds(&mut self) -> Option<u64> {
        count_dir_entries(self.fd_dir.as_ref()?)
    }

    /// Sockets of the whole network namespace towards `targets`, by state: from sock_diag, or
    /// if it fails (for good: the /proc files are read from then on) from /proc/net/tcp*.
    ///
    /// The files are read in pieces of [`SOCKETS_CHUNK`]: they list every socket of the
    /// namespace (~150 bytes each, the target's side too when it is local), so reading one
    /// whole would hold megabytes that grow with the VUs (2 MiB at 1,000 VUs, massif).
    pub fn sockets_towards(&mut self, targets: &[SocketAddr]) -> SocketCounts {
        if let Some(diag) = &mut self.diag {
            match diag.sockets_towards(targets) {
                Ok(counts) => return counts,
                Err(_) => self.diag = None,
            }
        }
        let mut counts = SocketCounts::default();
        let targets: Vec<Vec<u8>> = targets.iter().map(proc_form).collect();
        for file in self.tcp.iter_mut().flatten() {
            let _ = count_file_sockets(file, &mut self.chunk, &targets, &mut counts);
        }
        counts
    }
}

/// The piece of `/proc/net/tcp*` read at a time.
const SOCKETS_CHUNK: usize = 64 * 1024;

/// Counts the sockets of one `/proc/net/tcp*` file, read from its start in pieces through
/// `chunk`; a line cut by the end of a piece is carried to the next one.
fn count_file_sockets(
    file: &mut File,
    chunk: &mut Vec<u8>,
    targets: &[Vec<u8>],
    counts: &mut SocketCounts,
) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    chunk.resize(SOCKETS_CHUNK, 0);
    let mut filled = 0;
    loop {
        let n = file.read(&mut chunk[filled..])?;
        filled += n;
        // Whole lines only, unless the file has ended (or one line fills the piece).
        let whole = if n == 0 || filled == chunk.len() {
            filled
        } else {
            chunk[..filled]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1)
        };
        count_sockets(&chunk[..whole], targets, counts);
        chunk.copy_within(whole..filled, 0);
        filled -= whole;
        if n == 0 {
            return Ok(());
        }
    }
}

/// Reads a /proc file again from its start into `text` (seq_file regenerates it at offset 0).
fn reread(file: &mut File, text: &mut String) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    text.clear();
    file.read_to_string(text)?;
    Ok(())
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64
}

/// user + system CPU ticks from the text of a `stat` file.
fn parse_cpu_ticks(text: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces: fields are counted after its closing ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split_ascii_whitespace();
    // After ')': state is field 3; utime is field 14, stime 15 → indexes 11 and 12 here.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Entries of an open directory other than `.` and `..`, listed with getdents64 from its start:
/// std's read_dir would open the directory again, which needs a free descriptor.
fn count_dir_entries(dir: &File) -> Option<u64> {
    let fd = dir.as_raw_fd();
    // SAFETY: fd is an open directory owned by `dir` for the duration of this call.
    if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } < 0 {
        return None;
    }
    let mut buf = [0u8; 8192];
    let mut count = 0u64;
    loop {
        // SAFETY: the kernel writes at most buf.len() bytes into buf.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            return None;
        }
        if n == 0 {
            return Some(count);
        }
        // linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, then the NUL-terminated name.
        let mut at = 0usize;
        while at + 19 < n as usize {
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            let name = &buf[at + 19..];
            let dot = name.starts_with(b".\0") || name.starts_with(b"..\0");
            if !dot {
                count += 1;
            }
            if reclen == 0 {
                return None;
            }
            at += reclen;
        }
    }
}

/// Size of the ephemeral port range (net.ipv4.ip_local_port_range).
pub fn ephemeral_ports() -> Option<u64> {
    let text = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_ascii_whitespace().map(|v| v.parse::<u64>());
    let (lo, hi) = (it.next()?.ok()?, it.next()?.ok()?);
    Some(hi.saturating_sub(lo) + 1)
}

/// Sockets towards the targets, by state.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct SocketCounts {
    pub established: u64,
    pub time_wait: u64,
    /// Any state (each holds a local port towards the target).
    pub total: u64,
}

/// Parses /proc/net/tcp{,6} text: `sl local rem st ...`, addresses as hex `ADDR:PORT`.
/// Counts the socket lines of `text` towards `targets`, each given as the file writes it
/// ([`proc_form`]); the header line (`sl local_address rem_address st ...`) matches none.
///
/// Bytes are compared, not parsed: the files list every socket of the namespace (tens of
/// thousands in TIME_WAIT when a test opens a connection per request), and validating them as
/// UTF-8 and parsing each address cost the monitor more than the worker spent on its requests
/// (callgrind: ~20,000 instructions per new connection at 14,000 sockets in TIME_WAIT).
fn count_sockets(text: &[u8], targets: &[Vec<u8>], counts: &mut SocketCounts) {
    let mut start = 0;
    // Lines found with memchr (SIMD): only their first four fields are looked at, the rest of
    // each ~150-byte line is skipped.
    let ends = memchr::memchr_iter(b'\n', text).chain(std::iter::once(text.len()));
    for end in ends {
        let line = &text[start..end];
        start = end + 1;
        let Some((remote, state)) = remote_and_state(line).or_else(|| split_fields(line)) else {
            continue;
        };
        if !targets.iter().any(|t| t.as_slice() == remote) {
            continue;
        }
        counts.total += 1;
        match state {
            b"01" => counts.established += 1,
            b"06" => counts.time_wait += 1,
            _ => {}
        }
    }
}

/// The remote address and the state of a socket line, `%4d: LOCAL REMOTE ST ...`, taken at
/// their offsets from the colon after the line's number: both addresses are `%08X` words, a
/// colon and a `%04X` port, so 13 bytes in tcp and 37 in tcp6. The spaces around the fields
/// are checked; `None` for a line laid out otherwise (the header), which [`split_fields`]
/// reads. Tens of thousands of lines a second when connections churn: splitting each into
/// fields cost ~250 instructions a line, this ~30.
fn remote_and_state(line: &[u8]) -> Option<(&[u8], &[u8])> {
    // "%4d: " widens past 9,999 sockets: the colon is within the first few bytes.
    let colon = line.iter().take(12).position(|b| *b == b':')?;
    let local = colon + 2;
    let width = if line.get(local + 8) == Some(&b':') {
        13
    } else if line.get(local + 32) == Some(&b':') {
        37
    } else {
        return None;
    };
    let remote = local + width + 1;
    let state = remote + width + 1;
    let spaced = |at: usize| line.get(at) == Some(&b' ');
    if !(spaced(local - 1) && spaced(remote - 1) && spaced(state - 1) && spaced(state + 2)) {
        return None;
    }
    Some((&line[remote..remote + width], &line[state..state + 2]))
}

/// The remote address and the state of a socket line, found by splitting it into fields.
fn split_fields(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut fields = line.split(|b| *b == b' ').filter(|f| !f.is_empty());
    let (Some(_), Some(_), Some(remote), Some(state)) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return None;
    };
    Some((remote, state))
}

/// How /proc/net/tcp{,6} write `addr` as a remote address: the IP as native-endian 32-bit
/// words in upper-case hex (`%08X`: 127.0.0.1 is `0100007F` on x86), a colon, the port as
/// `%04X`. An IPv4 address is in tcp as itself; in tcp6 it would be v4-mapped (another
/// program's dual-stack socket), which is not counted, as in the sock_diag count.
fn proc_form(addr: &SocketAddr) -> Vec<u8> {
    let words = |octets: &[u8]| -> String {
        octets
            .chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect()
    };
    let ip = match addr.ip() {
        IpAddr::V4(v4) => words(&v4.octets()),
        IpAddr::V6(v6) => words(&v6.octets()),
    };
    format!("{ip}:{:04X}", addr.port()).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_threads_cpu() {
        // The thread spins until it has used 200 ms of CPU by its own clock (not 200 ms of wall
        // time, which a busy machine may give it only a part of), and stays alive until read.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            // SAFETY: gettid takes no argument and cannot fail.
            tx.send(unsafe { libc::gettid() }).unwrap();
            let mut x = 0u64;
            while thread_cpu() < std::time::Duration::from_millis(200) {
                for _ in 0..10_000 {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
            }
            tx.send(0).unwrap();
            let _ = done_rx.recv();
            x
        });
        let tid = rx.recv().unwrap();
        let mut files = ProcFiles::open();
        files.open_tasks(&[tid]);
        rx.recv().unwrap();
        let ticks = files
            .cpu_ticks(Some(0))
            .expect("the thread's stat is readable");
        done_tx.send(()).unwrap();
        t.join().unwrap();
        assert!(
            ticks >= 10,
            "a thread that spun 200 ms of CPU has used CPU: {ticks} ticks"
        );
    }

    /// The calling thread's CPU time.
    fn thread_cpu() -> std::time::Duration {
        // SAFETY: timespec is plain integers, for which all-zero bytes are a valid value.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to a local timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    #[test]
    fn reads_own_figures() {
        let mut files = ProcFiles::open();
        assert!(files.cpu_ticks(None).is_some());
        assert!(files.rss_bytes().unwrap() > 0);
        assert!(files.peak_rss_bytes().unwrap() > 0);
        let listed = fs::read_dir("/proc/self/fd").unwrap().count() as u64;
        let counted = files.open_fds().unwrap();
        // read_dir's own descriptor is in its list and not in ours: within a few of each other
        // (other tests open and close files meanwhile).
        assert!(
            counted > 2 && counted.abs_diff(listed) < 16,
            "{counted} vs {listed}"
        );
        // Read again in place: the same figures come back.
        assert!(files.cpu_ticks(None).is_some() && files.rss_bytes().unwrap() > 0);
    }

    #[test]
    fn counts_sockets_towards_a_target() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 20 4 30 10 -1\n\
   1: 0100007F:9C41 0100007F:1F90 06 00000000:00000000 03:00000F9C 00000000     0        0 0 3 0000000000000000\n\
   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0\n\
   3: 0200007F:9C42 0100007F:0050 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1\n";
        let mut counts = SocketCounts::default();
        count_sockets(text.as_bytes(), &forms("127.0.0.1:8080"), &mut counts);
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
        count_sockets(v6.as_bytes(), &forms("127.0.0.1:8080"), &mut counts);
        // A dual-stack socket's v4-mapped form: not onrush's (it reaches an IPv4 target
        // through an IPv4 socket), and not asked of sock_diag either.
        assert_eq!(counts.total, 0);
        let v6 = "  sl  local rem st\n   0: 00000000000000000000000001000000:9C40 00000000000000000000000001000000:1F90 06 x\n";
        let mut counts = SocketCounts::default();
        count_sockets(v6.as_bytes(), &forms("[::1]:8080"), &mut counts);
        assert_eq!(counts.time_wait, 1);
    }

    #[test]
    fn fields_at_their_offsets_are_the_fields_split_out() {
        let lines = [
            "   0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0",
            "10000: 0100007F:9C41 0100007F:1F90 06 00000000:00000000 03:00000F9C 00000000     0",
            "123456: 0100007F:9C41 0200007F:0050 0A 00000000:00000000",
            "   0: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000100007F:1F90 01 x",
        ];
        for line in lines {
            let fast = remote_and_state(line.as_bytes());
            assert!(fast.is_some(), "{line}");
            assert_eq!(fast, split_fields(line.as_bytes()), "{line}");
        }
        // Laid out otherwise: left to the split.
        for line in [
            "  sl  local_address rem_address   st tx_queue rx_queue",
            "   0: 0100007F:9C40  0100007F:1F90 01 x",
            "   0: 0100007F:9C40 0100007F:1F90",
        ] {
            assert_eq!(remote_and_state(line.as_bytes()), None, "{line}");
        }
    }

    fn forms(addr: &str) -> Vec<Vec<u8>> {
        vec![proc_form(&addr.parse().unwrap())]
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn addresses_are_written_as_the_kernel_writes_them() {
        let text = |f: Vec<Vec<u8>>| -> Vec<String> {
            f.into_iter()
                .map(|b| String::from_utf8(b).unwrap())
                .collect()
        };
        assert_eq!(text(forms("127.0.0.1:8080")), ["0100007F:1F90"]);
        assert_eq!(
            text(forms("[fd00::10]:443")),
            ["000000FD000000000000000010000000:01BB"]
        );
    }

    #[test]
    fn a_socket_list_larger_than_a_piece_is_counted_whole() {
        // 3,001 lines of ~130 bytes: six pieces, lines cut at every piece's end.
        let mut text = String::from("  sl  local_address rem_address   st tx_queue rx_queue\n");
        for i in 0..3_001u32 {
            let (port, state) = if i % 3 == 0 {
                (0x1F90, "01")
            } else {
                (0x50, "06")
            };
            text.push_str(&format!(
                "{i:>5}: 0100007F:{:04X} 0100007F:{port:04X} {state} 00000000:00000000 00:00000000 00000000     0        0 {i} 1 0000000000000000\n",
                0x9C40 + i % 20_000
            ));
        }
        assert!(text.len() > 5 * SOCKETS_CHUNK);
        let path = std::env::temp_dir().join(format!("onrush-proc-tcp-{}", std::process::id()));
        fs::write(&path, &text).unwrap();
        let targets = forms("127.0.0.1:8080");
        let mut whole = SocketCounts::default();
        count_sockets(text.as_bytes(), &targets, &mut whole);
        let mut pieces = SocketCounts::default();
        let mut chunk = Vec::new();
        count_file_sockets(
            &mut File::open(&path).unwrap(),
            &mut chunk,
            &targets,
            &mut pieces,
        )
        .unwrap();
        let _ = fs::remove_file(&path);
        assert_eq!(whole.established, 1_001);
        assert_eq!(pieces, whole);
        assert_eq!(chunk.len(), SOCKETS_CHUNK, "the piece does not grow");
    }
}
