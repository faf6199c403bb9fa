//! `onrush doctor`: inspects the host a load test will run on, and prints each finding with the
//! exact commands that fix it. It reads `/proc` and `/sys` and calls `getrlimit`; it never
//! changes anything.
//!
//! onrush promises that under load the system under test slows down, never the load tool. The
//! walls a load generator hits first are the host's, not its own: the open-files limit, the
//! ephemeral-port range emptied by TIME_WAIT (JMeter users see "Address not available" and
//! throughput in waves at 28k ports), a full conntrack table silently dropping SYNs, a CPU
//! clocking down between bursts, another process eating the cores. Each check says what it saw,
//! why it matters, and, when it is not fine, the fix: `sysctl -w` for now plus the line for
//! `/etc/sysctl.d/99-onrush.conf` to keep it, `ulimit -n` / `LimitNOFILE=`, and so on.
//!
//! ```no_run
//! let report = onrush_doctor::diagnose(&onrush_doctor::Host::live(), None);
//! onrush_doctor::print_text(&report, &mut std::io::stdout());
//! ```
//!
//! With the needs of a plan ([`PlanNeeds`]), the checks compare the host with what that plan
//! will ask of it (connections held, new connections per second, targets, source addresses).
//!
//! Every check reads the real file under the host's root, so tests run against fake `/proc`
//! and `/sys` trees ([`Host::at`]). A file that can't be read gives a `Warn` finding saying so,
//! never an error: the doctor always prints a full report.

mod checks;
mod host;
mod print;

use std::net::SocketAddr;

use serde::Serialize;

pub use checks::memory::memory_needed;
pub use host::Host;
pub use print::print_text;

/// What a plan will ask of the host, filled by the caller from a loaded plan. All fields are
/// upper bounds over the run; `PlanNeeds::default()` is "nothing known" (all zero).
///
/// How to fill it from onrush's plan format:
/// - `peak_connections`: connections open at once. With `http.connections: per_vu` (the
///   default) one per VU: the sum over scenarios that run at the same time of `vus` (closed,
///   the largest stage) or `max_vus` (open). `per_iteration` / `per_request` hold at most that
///   many too.
/// - `new_connections_per_s`: connections opened per second, at the peak. `per_vu`: about 0
///   (VUs connect once; use the VU start rate if known). `per_iteration`: iterations per
///   second (open model: the peak `rate`; closed: an estimate, e.g. VUs / expected iteration
///   time). `per_request`: that times the requests per iteration.
/// - `targets`: the resolved target addresses (IP and port) the plan connects to.
/// - `source_addresses`: `http.source_addresses.len()` (the largest over scenarios); 0 when the
///   kernel chooses (one address).
/// - `close_reset`: `http.close: reset` (connections closed with RST leave no TIME_WAIT).
/// - `server_closes`: `http.close: server`, the default of `connections: per_request` (the
///   server closes first and keeps the TIME_WAIT, not this host).
///
/// ```
/// let needs = onrush_doctor::PlanNeeds {
///     peak_connections: 500,
///     new_connections_per_s: 2_000.0,
///     targets: vec!["127.0.0.1:8080".parse().unwrap()],
///     ..Default::default()
/// };
/// # let _ = needs;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanNeeds {
    /// Connections open at the same time, at the peak.
    pub peak_connections: u64,
    /// New TCP connections per second, at the peak.
    pub new_connections_per_s: f64,
    /// The targets' addresses; may be empty when unknown (taken as one remote target).
    pub targets: Vec<SocketAddr>,
    /// Source addresses connections are spread over (0 = the kernel chooses: one).
    pub source_addresses: usize,
    /// Connections are closed with RST (`http.close: reset`): no TIME_WAIT on either side, and
    /// conntrack forgets them after 10 s instead of 120 s.
    pub close_reset: bool,
    /// The server closes first (`http.close: server`, each request says `Connection: close`):
    /// the TIME_WAIT is the server's, so this host's ports are free again at once.
    pub server_closes: bool,
    /// VUs alive at once, at the peak (each holds its state even without a connection).
    pub vus: u64,
    /// Worker threads the run will start (`-t`); 0 when unknown.
    pub threads: usize,
    /// The most response-body bytes the VUs may keep at once: for scenarios whose steps read
    /// bodies (extractors, checks), VUs × `http.body_limit`.
    pub body_bytes: u64,
}

/// How a check came out. Ordered: `Ok < Warn < Bad`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Fine for this host (and plan, if given).
    Ok,
    /// Worth fixing: it will skew results or limit some plans; or the check could not read
    /// what it needed.
    Warn,
    /// The plan (or any sizeable load test) will hit this wall.
    Bad,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The check's name: one of [`CHECKS`].
    pub check: &'static str,
    /// How it came out.
    pub status: Status,
    /// What was seen, short: "soft 1,024, hard 4,096", "28,232 ports (32768-60999)".
    pub observed: String,
    /// What it means for a load test, in a sentence or three.
    pub detail: String,
    /// The exact commands that fix it, one per line (`#` lines are comments), when the status
    /// is not `Ok`. Nothing is run: the user copies them.
    pub fix: Option<String>,
}

/// All findings, in the order of [`CHECKS`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// One finding per check.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The worst status of all findings (`Ok` for an empty report). A CLI may exit non-zero on
    /// `Bad`.
    pub fn worst(&self) -> Status {
        self.findings
            .iter()
            .map(|f| f.status)
            .max()
            .unwrap_or(Status::Ok)
    }

    /// The finding of one check, by name.
    pub fn get(&self, check: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.check == check)
    }

    /// How many findings have this status.
    pub fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }
}

/// The checks, in report order.
pub const CHECKS: &[&str] = &[
    "cpus",
    "memory",
    "nofile",
    "ephemeral_ports",
    "tcp_tw_reuse",
    "tcp_fin_timeout",
    "tcp_max_tw_buckets",
    "somaxconn",
    "conntrack",
    "cpu_governor",
    "busy_processes",
];

/// The checks a run makes before it starts, without sampling anything: the memory, the
/// open-files limit and the worker threads against what the plan asks. A `Bad` memory or
/// threads finding means the run would die (killed for memory, a thread that cannot start):
/// the CLI refuses it with the finding's numbers and fix.
pub fn preflight(host: &Host, needs: &PlanNeeds) -> Report {
    Report {
        findings: vec![
            checks::memory::memory(host, Some(needs)),
            checks::nofile::nofile(host, Some(needs)),
            checks::cpu::threads(host, needs),
        ],
    }
}

/// Inspects `host`, and compares it with `needs` when given. Reads files and sleeps for the
/// CPU sample (200 ms on the live host, see [`Host::with_sample_interval`]); changes nothing.
pub fn diagnose(host: &Host, needs: Option<&PlanNeeds>) -> Report {
    let net = checks::net::Sysctls::read(host);
    let findings = vec![
        checks::cpu::cpus(host, needs),
        checks::memory::memory(host, needs),
        checks::nofile::nofile(host, needs),
        checks::net::ephemeral_ports(&net, needs),
        checks::net::tw_reuse(&net, needs),
        checks::net::fin_timeout(&net),
        checks::net::max_tw_buckets(&net, needs),
        checks::net::somaxconn(&net, needs),
        checks::net::conntrack(host, &net, needs),
        checks::cpu::governor(host),
        checks::cpu::busy_processes(host),
    ];
    debug_assert!(findings.iter().map(|f| f.check).eq(CHECKS.iter().copied()));
    Report { findings }
}
