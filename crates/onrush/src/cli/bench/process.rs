//! Child processes of `onrush bench`: pinned to a CPU, measured with `wait4` (their own
//! user+system CPU time) and `/proc/PID/status` VmHWM sampling (their peak RSS), bounded in time,
//! and killed by PID when dropped (also on error or panic).

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why a benchmark could not be carried out.
pub enum Failure {
    /// A clear sentence for the user (exit code 3).
    Runtime(String),
    /// Ctrl-C or SIGTERM (exit code 130).
    Interrupted,
}

/// How often a running child's VmHWM is sampled (and its exit checked).
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// Which CPUs the tool and the target run on, and how they are pinned.
pub struct Pinning {
    /// The load tool's CPU (the first CPU this process may use).
    pub tool: usize,
    /// The target's CPU (the last one) when there are at least two.
    pub target: Option<usize>,
    /// `taskset` if it is on PATH; else the children pin themselves with sched_setaffinity.
    taskset: Option<PathBuf>,
}

impl Pinning {
    pub fn detect() -> Pinning {
        let cpus = allowed_cpus();
        Pinning {
            tool: cpus.first().copied().unwrap_or(0),
            target: (cpus.len() >= 2).then(|| cpus[cpus.len() - 1]),
            taskset: on_path("taskset"),
        }
    }

    /// How pinning is done, in words.
    pub fn method(&self) -> &'static str {
        if self.taskset.is_some() {
            "taskset"
        } else {
            "sched_setaffinity"
        }
    }

    /// A command running `program` pinned to `cpu` (not pinned when `cpu` is None).
    pub fn command(&self, cpu: Option<usize>, program: &Path) -> Command {
        match (cpu, &self.taskset) {
            (None, _) => Command::new(program),
            (Some(cpu), Some(taskset)) => {
                // taskset execs the program: the child's PID is the program's own.
                let mut cmd = Command::new(taskset);
                cmd.arg("-c").arg(cpu.to_string()).arg(program);
                cmd
            }
            (Some(cpu), None) => {
                use std::os::unix::process::CommandExt;
                let mut cmd = Command::new(program);
                // SAFETY: the closure runs between fork and exec and only makes the
                // async-signal-safe sched_setaffinity system call on a local struct.
                unsafe {
                    cmd.pre_exec(move || pin_self(cpu));
                }
                cmd
            }
        }
    }
}

fn pin_self(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data (all zeroes is the empty set); sched_setaffinity reads
    // size_of::<cpu_set_t>() bytes from a valid reference.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status, e.g. "0-3,6").
fn allowed_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim();
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
            cpus.extend(a..=b);
        }
    }
    if cpus.is_empty() {
        cpus.extend(0..super::super::serve::default_threads());
    }
    cpus
}

/// The path of an executable `name` found on PATH.
pub fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A child process that is killed (by its PID, SIGKILL) and reaped when dropped, unless it was
/// already reaped by [`Proc::try_reap`].
pub struct Proc {
    child: Child,
    reaped: bool,
}

/// How a child ended, and what it cost.
pub struct Ended {
    /// Its exit code, or 128 + the signal that ended it.
    pub code: i32,
    /// User + system CPU seconds (wait4's rusage of the child).
    pub cpu_s: f64,
}

impl Proc {
    pub fn spawn(cmd: &mut Command, what: &str) -> Result<Proc, Failure> {
        match cmd.spawn() {
            Ok(child) => Ok(Proc {
                child,
                reaped: false,
            }),
            Err(e) => Err(Failure::Runtime(format!("cannot start {what}: {e}"))),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The child's standard output, when it was spawned with `Stdio::piped()`.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// Reaps the child if it has ended (`wait4(pid, WNOHANG)`), with its resource usage.
    pub fn try_reap(&mut self) -> io::Result<Option<Ended>> {
        self.reap(libc::WNOHANG)
    }

    fn reap(&mut self, flags: libc::c_int) -> io::Result<Option<Ended>> {
        if self.reaped {
            return Err(io::Error::other("already reaped"));
        }
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain data; wait4 writes into valid local references.
        let (ret, usage) = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            let ret = libc::wait4(self.pid(), &mut status, flags, &mut usage);
            (ret, usage)
        };
        match ret {
            0 => Ok(None),
            -1 => {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    Ok(None)
                } else {
                    Err(e)
                }
            }
            _ => {
                self.reaped = true;
                let code = if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else {
                    128 + libc::WTERMSIG(status)
                };
                let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
                Ok(Some(Ended {
                    code,
                    cpu_s: secs(usage.ru_utime) + secs(usage.ru_stime),
                }))
            }
        }
    }

    /// Sends `signal` to the child's PID (only while it has not been reaped).
    pub fn signal(&self, signal: libc::c_int) {
        if !self.reaped {
            // SAFETY: kill has no memory effects; the PID is our unreaped child, so it cannot
            // have been reused by another process.
            unsafe {
                libc::kill(self.pid(), signal);
            }
        }
    }

    /// Kills the child and waits for it.
    fn kill_and_reap(&mut self) {
        if !self.reaped {
            self.signal(libc::SIGKILL);
            let _ = self.reap(0);
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// A child run to its end: what it cost.
pub struct Measured {
    pub code: i32,
    pub cpu_s: f64,
    pub peak_rss_kib: u64,
}

/// Runs `cmd` to its end, sampling its VmHWM every 20 ms. After `interrupt_after` (if given)
/// it gets SIGINT; after `limit` it is killed and this is an error.
pub fn measure(
    cmd: &mut Command,
    what: &str,
    limit: Duration,
    interrupt_after: Option<Duration>,
) -> Result<Measured, Failure> {
    let start = Instant::now();
    let mut proc = Proc::spawn(cmd, what)?;
    let status_path = format!("/proc/{}/status", proc.pid());
    let mut peak_rss_kib = 0;
    let mut interrupted = false;
    loop {
        // Not at once: `spawn` returns a moment before the child's memory map is switched to
        // its program's, and read then its status shows this process's VmHWM (a test process
        // of 231 MB made a 15 MB onrush read as 231 MB). The child may be onrush too, so its
        // name cannot tell; one sampling period later the exec is long through.
        std::thread::sleep(SAMPLE_EVERY);
        if let Some(kib) = vm_hwm_kib(&status_path) {
            peak_rss_kib = peak_rss_kib.max(kib);
        }
        match proc.try_reap() {
            Ok(Some(ended)) => {
                return Ok(Measured {
                    code: ended.code,
                    cpu_s: ended.cpu_s,
                    peak_rss_kib,
                })
            }
            Ok(None) => {}
            Err(e) => return Err(Failure::Runtime(format!("cannot wait for {what}: {e}"))),
        }
        if onrush_engine::signals::interrupted() {
            return Err(Failure::Interrupted);
        }
        let elapsed = start.elapsed();
        if elapsed > limit {
            return Err(Failure::Runtime(format!(
                "{what} was still running after {} s and was killed",
                limit.as_secs()
            )));
        }
        if let Some(after) = interrupt_after {
            if !interrupted && elapsed >= after {
                proc.signal(libc::SIGINT);
                interrupted = true;
            }
        }
    }
}

/// VmHWM (peak resident set size) in KiB from a /proc/PID/status file.
fn vm_hwm_kib(status_path: &str) -> Option<u64> {
    let status = std::fs::read_to_string(status_path).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `onrush serve --threads 1` on a free loopback port, pinned to the target CPU; killed when
/// dropped.
pub struct Server {
    proc: Proc,
    pub addr: SocketAddr,
}

impl Server {
    /// An error if the server has exited (it should live until the bench drops it).
    pub fn check_alive(&mut self) -> Result<(), Failure> {
        match self.proc.try_reap() {
            Ok(None) => Ok(()),
            Ok(Some(ended)) => Err(Failure::Runtime(format!(
                "the built-in server exited with code {} during the bench",
                ended.code
            ))),
            Err(e) => Err(Failure::Runtime(format!(
                "cannot check the built-in server: {e}"
            ))),
        }
    }
}

/// Starts `onrush serve` (with `--tls` when `tls`: HTTPS with a generated certificate, and
/// HTTP/2 by ALPN) pinned to the target CPU; returns once it accepts connections.
pub fn start_server(
    pinning: &Pinning,
    exe: &Path,
    dir: &Path,
    tls: bool,
) -> Result<Server, Failure> {
    let runtime = |m: String| Failure::Runtime(m);
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map_err(|e| runtime(format!("cannot find a free port on 127.0.0.1: {e}")))?
        .port();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let log_path = dir.join(if tls {
        "server-tls.stderr"
    } else {
        "server.stderr"
    });
    let log = File::create(&log_path)
        .map_err(|e| runtime(format!("cannot create {}: {e}", log_path.display())))?;
    let mut cmd = pinning.command(pinning.target, exe);
    cmd.args(["serve", "--addr", &addr.to_string(), "--threads", "1"]);
    if tls {
        cmd.arg("--tls");
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    let mut proc = Proc::spawn(&mut cmd, "the built-in server")?;
    let start = Instant::now();
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(Server { proc, addr });
        }
        if let Ok(Some(ended)) = proc.try_reap() {
            return Err(runtime(format!(
                "the built-in server exited with code {} before accepting connections: {}",
                ended.code,
                tail(&log_path)
            )));
        }
        if onrush_engine::signals::interrupted() {
            return Err(Failure::Interrupted);
        }
        if start.elapsed() > Duration::from_secs(10) {
            return Err(runtime(format!(
                "the built-in server did not accept connections on {addr} within 10 s: {}",
                tail(&log_path)
            )));
        }
        std::thread::sleep(SAMPLE_EVERY);
    }
}

/// The last lines of a child's log, for an error message.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return "(it printed nothing)".into();
    }
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn create() -> Result<TempDir, Failure> {
        let dir = std::env::temp_dir().join(format!("onrush-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| {
            Failure::Runtime(format!("cannot create directory {}: {e}", dir.display()))
        })?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
