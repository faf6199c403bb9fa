//! Memory available for connections.

use super::{bytes, not_ok, ok, thousands, unreadable};
use crate::host::{Host, Unreadable};
use crate::{Finding, PlanNeeds, Status};

const CHECK: &str = "memory";

/// What one connection costs, roughly: onrush's 16 KiB read buffer, write buffer and VU state
/// (10,000 keep-alive VUs measured 120 MiB, docs/benchmarks.md) plus the kernel's socket
/// buffers for a connection carrying small requests.
const PER_CONNECTION: u64 = 32 * 1024;

/// onrush itself: code, runtimes, histograms.
const BASE: u64 = 64 << 20;

/// Without a plan, less available than this warns.
const LOW: u64 = 1 << 30;

fn meminfo_kib(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim_start_matches(':')
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The memory this process may still take: `MemAvailable`, lowered by a cgroup (v2) limit
/// (a container's, a systemd unit's `MemoryMax=`) and, on the live host, by `RLIMIT_AS`.
/// Returns the bytes and what bounded them.
fn room(host: &Host, avail: u64) -> (u64, Option<String>) {
    let mut room = (avail, None);
    if let Some(left) = cgroup_room(host) {
        if left < room.0 {
            room = (
                left,
                Some(format!("the cgroup's memory.max leaves {}", bytes(left))),
            );
        }
    }
    if host.is_live() {
        // SAFETY: getrlimit with a valid pointer to a local struct.
        let limit = unsafe {
            let mut l: libc::rlimit = std::mem::zeroed();
            (libc::getrlimit(libc::RLIMIT_AS, &mut l) == 0).then_some(l.rlim_cur)
        };
        if let Some(limit) = limit.filter(|&l| l != libc::RLIM_INFINITY && l < room.0) {
            room = (
                limit,
                Some(format!(
                    "the address-space limit (ulimit -v) is {}",
                    bytes(limit)
                )),
            );
        }
    }
    room
}

/// `memory.max - memory.current` of this process's cgroup (v2), when it has a limit.
fn cgroup_room(host: &Host) -> Option<u64> {
    let cgroup = host.read("proc/self/cgroup").ok()?;
    let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let dir = format!("sys/fs/cgroup/{}", path.trim_start_matches('/'));
    let max: u64 = host
        .read(&format!("{dir}/memory.max"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let current: u64 = host
        .read(&format!("{dir}/memory.current"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    Some(max.saturating_sub(current))
}

/// The memory a run of these needs is estimated to take: onrush itself plus about 32 KiB per VU
/// or connection held at the peak (what the preflight compares with the memory available).
pub fn memory_needed(needs: &PlanNeeds) -> u64 {
    let held = needs.peak_connections.max(needs.vus);
    BASE.saturating_add(held.saturating_mul(PER_CONNECTION))
}

pub(crate) fn memory(host: &Host, needs: Option<&PlanNeeds>) -> Finding {
    let text = match host.read("proc/meminfo") {
        Ok(t) => t,
        Err(e) => return unreadable(CHECK, &e, "The memory available"),
    };
    let (Some(avail), total) = (
        meminfo_kib(&text, "MemAvailable"),
        meminfo_kib(&text, "MemTotal"),
    ) else {
        let e = Unreadable {
            path: host.path("proc/meminfo"),
            why: "no MemAvailable line".into(),
            missing: false,
        };
        return unreadable(CHECK, &e, "The memory available");
    };
    let (avail, bound) = room(host, avail * 1024);
    let mut observed = match total {
        Some(t) => format!("{} available of {}", bytes(avail), bytes(t * 1024)),
        None => format!("{} available", bytes(avail)),
    };
    if let Some(bound) = &bound {
        observed.push_str(&format!(" ({bound})"));
    }
    let (status, detail) = match needs {
        Some(n) => {
            let held = n.peak_connections.max(n.vus);
            let need = memory_needed(n);
            let mut status = if need > avail {
                Status::Bad
            } else if need > avail / 2 {
                Status::Warn
            } else {
                Status::Ok
            };
            let mut detail = format!(
                "{} VUs and connections at about 32 KiB each (onrush's buffers and VU state, the \
                 kernel's socket buffers) plus onrush itself: about {} needed.",
                thousands(held),
                bytes(need)
            );
            // Bodies are kept up to body_limit only while a step reads them: a possibility,
            // not a certainty, so it warns and never refuses.
            if n.body_bytes > 0 && need.saturating_add(n.body_bytes) > avail {
                status = status.max(Status::Warn);
                detail.push_str(&format!(
                    " Response bodies kept for extractors and checks may add up to {} (VUs × \
                     body_limit): a target sending large (or decompression-bomb) bodies to every \
                     VU at once would exhaust the memory; lower http.body_limit.",
                    bytes(n.body_bytes)
                ));
            }
            (status, detail)
        }
        None => {
            let status = if avail < LOW {
                Status::Warn
            } else {
                Status::Ok
            };
            let detail = format!(
                "A connection costs about 32 KiB (onrush's buffers and VU state, the kernel's \
                 socket buffers): room for about {} connections. A load tool that swaps \
                 measures its own stalls.",
                thousands(avail.saturating_sub(BASE) / PER_CONNECTION)
            );
            (status, detail)
        }
    };
    if status == Status::Ok {
        return ok(CHECK, observed, detail);
    }
    not_ok(
        CHECK,
        status,
        observed,
        detail,
        "# free memory: stop what else runs here (ps aux --sort=-rss | head),\n\
         # or lower the VUs (a closed model needs fewer for the same rate when think times are short),\n\
         # or split the load over several machines and combine the results: onrush merge DIR... --out DIR",
    )
}
