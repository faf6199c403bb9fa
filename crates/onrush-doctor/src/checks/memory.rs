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
    let avail = avail * 1024;
    let observed = match total {
        Some(t) => format!("{} available of {}", bytes(avail), bytes(t * 1024)),
        None => format!("{} available", bytes(avail)),
    };
    let (status, detail) = match needs {
        Some(n) => {
            let need = BASE + n.peak_connections * PER_CONNECTION;
            let status = if need > avail {
                Status::Bad
            } else if need > avail / 2 {
                Status::Warn
            } else {
                Status::Ok
            };
            let detail = format!(
                "{} connections at about 32 KiB each (onrush's buffers and VU state, the \
                 kernel's socket buffers) plus onrush itself: about {} needed.",
                thousands(n.peak_connections),
                bytes(need)
            );
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
         # or split the load over several machines and combine the results: onrush merge DIR... --out DIR",
    )
}
