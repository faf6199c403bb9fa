//! The network sysctls a load generator runs into: the ephemeral-port range and TIME_WAIT,
//! tcp_tw_reuse, tcp_fin_timeout, tcp_max_tw_buckets, somaxconn, and the conntrack table.

use std::net::SocketAddr;

use super::{not_ok, ok, rate, sysctl_fix, thousands, unreadable};
use crate::host::{Host, Unreadable};
use crate::{Finding, PlanNeeds, Status};

/// How long a connection closed first by this host stays in TIME_WAIT on Linux: TCP_TIMEWAIT_LEN,
/// compiled in (not tcp_fin_timeout, whatever tuning lists say).
pub(crate) const TIME_WAIT_S: f64 = 60.0;

/// With tcp_tw_reuse in effect, a TIME_WAIT port may be reused for a new outgoing connection
/// once its last timestamp is more than a second old.
const REUSE_AFTER_S: f64 = 1.0;

/// Linux's default range 32768-60999.
const DEFAULT_PORTS: u64 = 60_999 - 32_768 + 1;

/// The widest sensible range, 1024-65535: what the fix proposes.
const WIDE_PORTS: u64 = 65_535 - 1024 + 1;

/// How much of a capacity a plan may use and still be called fine: other programs use ports
/// and conntrack entries too, and rates have bursts.
const HEADROOM: f64 = 0.8;

/// The sysctls read once and shared by the checks.
pub(crate) struct Sysctls {
    port_range: Result<(u64, u64), Unreadable>,
    tw_reuse: Result<u64, Unreadable>,
    timestamps: Option<u64>,
    fin_timeout: Result<u64, Unreadable>,
    max_tw_buckets: Result<u64, Unreadable>,
    somaxconn: Result<u64, Unreadable>,
    /// `net.ipv4.ip_local_reserved_ports`: "8080,9000-9100" (empty: none), if readable.
    reserved: Vec<(u64, u64)>,
    /// Sockets in TIME_WAIT now (/proc/net/sockstat), if readable.
    time_wait_now: Option<u64>,
}

impl Sysctls {
    pub(crate) fn read(host: &Host) -> Sysctls {
        let port_range = host
            .sysctl("net.ipv4.ip_local_port_range")
            .and_then(|text| {
                let mut it = text.split_whitespace().map(str::parse::<u64>);
                match (it.next(), it.next()) {
                    (Some(Ok(lo)), Some(Ok(hi))) if lo <= hi => Ok((lo, hi)),
                    _ => Err(Unreadable {
                        path: host.path("proc/sys/net/ipv4/ip_local_port_range"),
                        why: format!("not two port numbers: {text:?}"),
                        missing: false,
                    }),
                }
            });
        let time_wait_now = host.read("proc/net/sockstat").ok().and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("TCP:"))?;
            let f: Vec<&str> = line.split_whitespace().collect();
            let i = f.iter().position(|w| *w == "tw")?;
            f.get(i + 1)?.parse().ok()
        });
        let reserved = host
            .sysctl("net.ipv4.ip_local_reserved_ports")
            .map(|text| parse_port_list(&text))
            .unwrap_or_default();
        Sysctls {
            port_range,
            reserved,
            tw_reuse: host.sysctl_u64("net.ipv4.tcp_tw_reuse"),
            timestamps: host.sysctl_u64("net.ipv4.tcp_timestamps").ok(),
            fin_timeout: host.sysctl_u64("net.ipv4.tcp_fin_timeout"),
            max_tw_buckets: host.sysctl_u64("net.ipv4.tcp_max_tw_buckets"),
            somaxconn: host.sysctl_u64("net.core.somaxconn"),
            time_wait_now,
        }
    }

    /// Ports connect() may pick: the range less the reserved ports in it.
    fn ports(&self) -> Option<u64> {
        let (lo, hi) = *self.port_range.as_ref().ok()?;
        Some(hi - lo + 1 - self.reserved_in(lo, hi))
    }

    fn reserved_in(&self, lo: u64, hi: u64) -> u64 {
        let mut ranges = self.reserved.clone();
        ranges.sort_unstable();
        let mut n = 0;
        let mut next = lo; // ports below `next` are counted already (overlapping entries)
        for (a, b) in ranges {
            let (a, b) = (a.max(next), b.min(hi));
            if a <= b {
                n += b - a + 1;
                next = b + 1;
            }
        }
        n
    }

    /// Whether the kernel reuses TIME_WAIT ports for connections to `target` (None: unknown
    /// target, taken as remote). Reuse needs TCP timestamps (on unless set to 0).
    fn reuse_for(&self, target: Option<SocketAddr>) -> bool {
        if self.timestamps == Some(0) {
            return false;
        }
        match self.tw_reuse {
            Ok(1) => true,
            Ok(2) => target.is_some_and(|t| t.ip().is_loopback()),
            _ => false,
        }
    }
}

/// "8080,9000-9100" -> [(8080, 8080), (9000, 9100)]; malformed pieces are skipped.
fn parse_port_list(text: &str) -> Vec<(u64, u64)> {
    text.split(',')
        .filter_map(|piece| {
            let piece = piece.trim();
            let (a, b) = piece.split_once('-').unwrap_or((piece, piece));
            let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            (a <= b).then_some((a, b))
        })
        .collect()
}

/// The distinct targets of a plan; one unknown target when none are given.
fn targets(needs: &PlanNeeds) -> Vec<Option<SocketAddr>> {
    let mut t: Vec<SocketAddr> = needs.targets.clone();
    t.sort();
    t.dedup();
    if t.is_empty() {
        vec![None]
    } else {
        t.into_iter().map(Some).collect()
    }
}

/// How a plan fits the port tuples: each (source address, target) pair has `ports` local ports;
/// each connection open and each one in TIME_WAIT (after this host closed it) takes one.
struct PortFit {
    ports: u64,
    sources: u64,
    /// Port tuples per target: ports x source addresses.
    cap: f64,
    /// Tuples the plan needs if all its connections go to the target with the longest hold.
    need_one: f64,
    /// The same, spread evenly over the targets.
    need_even: f64,
    /// Seconds a closed connection keeps its tuple: 60 (TIME_WAIT), 1 (reused), 0 (reset).
    hold: u64,
    /// Targets without TIME_WAIT reuse under the current settings.
    no_reuse: Vec<Option<SocketAddr>>,
    ntargets: usize,
}

impl PortFit {
    fn new(s: &Sysctls, ports: u64, needs: &PlanNeeds, assume_reuse: bool) -> PortFit {
        let targets = targets(needs);
        let no_reuse: Vec<_> = targets
            .iter()
            .copied()
            .filter(|t| !(assume_reuse || s.reuse_for(*t)))
            .collect();
        let hold = if needs.close_reset || needs.server_closes {
            0.0
        } else if no_reuse.is_empty() {
            REUSE_AFTER_S
        } else {
            TIME_WAIT_S
        };
        let sources = needs.source_addresses.max(1) as u64;
        let need_one = needs.peak_connections as f64 + needs.new_connections_per_s * hold;
        PortFit {
            ports,
            sources,
            cap: (ports * sources) as f64,
            need_one,
            need_even: need_one / targets.len() as f64,
            hold: hold as u64,
            no_reuse,
            ntargets: targets.len(),
        }
    }

    fn status(&self) -> Status {
        if self.need_one <= HEADROOM * self.cap {
            Status::Ok
        } else if self.need_even <= self.cap {
            Status::Warn
        } else {
            Status::Bad
        }
    }
}

fn describe_targets(ts: &[Option<SocketAddr>]) -> String {
    let names: Vec<String> = ts
        .iter()
        .take(3)
        .map(|t| t.map_or_else(|| "the target".to_string(), |a| a.to_string()))
        .collect();
    let more = if ts.len() > 3 {
        format!(" and {} more", ts.len() - 3)
    } else {
        String::new()
    };
    format!("{}{more}", names.join(", "))
}

const PLAN_ALTERNATIVES: &str =
    "# or in the plan: keep connections alive (http.connections: per_vu, the default),\n\
     # close them with RST (http.close: reset: no TIME_WAIT), or spread them over source\n\
     # addresses (on loopback, no setup: http.source_addresses: 127.0.0.2-127.0.0.254)";

pub(crate) fn ephemeral_ports(s: &Sysctls, needs: Option<&PlanNeeds>) -> Finding {
    const CHECK: &str = "ephemeral_ports";
    let (lo, hi) = match &s.port_range {
        Ok(r) => *r,
        Err(e) => return unreadable(CHECK, e, "The ephemeral-port range"),
    };
    let reserved = s.reserved_in(lo, hi);
    let ports = hi - lo + 1 - reserved;
    let without = ports as f64 / TIME_WAIT_S;
    let mut observed = format!("{} ports ({lo}-{hi}", thousands(ports));
    if reserved > 0 {
        observed.push_str(&format!(", {} reserved", thousands(reserved)));
    }
    observed.push(')');
    if let Some(tw) = s.time_wait_now {
        observed.push_str(&format!(", {} in TIME_WAIT now", thousands(tw)));
    }
    observed.push_str(&format!(
        ": {} new connections/s per target without reuse",
        rate(without)
    ));
    let with = ports as f64 / REUSE_AFTER_S;
    let reuse_now = match (s.tw_reuse.as_ref().ok(), s.timestamps) {
        (_, Some(0)) => "tcp_tw_reuse has no effect here (tcp_timestamps is 0)".to_string(),
        (Some(1), _) => format!("tcp_tw_reuse is on: about {}/s", rate(with)),
        (Some(2), _) => format!(
            "tcp_tw_reuse=2 gives that (about {}/s) to loopback targets only",
            rate(with)
        ),
        _ => "tcp_tw_reuse is off".to_string(),
    };
    let basics = format!(
        "A connection this host closes first keeps its (source address, port, target) in \
         TIME_WAIT for 60 s, fixed in Linux. Without reuse this host opens at most {} / 60 s = \
         {} new connections/s per target and source address; {reuse_now}.",
        thousands(ports),
        rate(without),
    );
    let Some(needs) = needs else {
        let detail = format!(
            "{basics} Keep-alive (http.connections: per_vu, the default) never meets this wall; \
             plans that reconnect per iteration or per request do (JMeter users see \"Address \
             not available\" and throughput in waves at the default 28,232 ports)."
        );
        if ports >= DEFAULT_PORTS {
            return ok(CHECK, observed, detail);
        }
        let fix = format!(
            "{}\n{PLAN_ALTERNATIVES}",
            sysctl_fix("net.ipv4.ip_local_port_range", "1024 65535")
        );
        return not_ok(CHECK, Status::Warn, observed, detail, fix);
    };
    let fit = PortFit::new(s, ports, needs, false);
    let status = fit.status();
    let closed = if needs.close_reset {
        "closed with RST: no TIME_WAIT".to_string()
    } else if needs.server_closes {
        "closed by the server first: the TIME_WAIT is the server's".to_string()
    } else {
        format!(
            "{}/s x {} s in TIME_WAIT",
            rate(needs.new_connections_per_s),
            fit.hold
        )
    };
    let mut detail = format!(
        "{basics} The plan holds {} connections and opens {}/s: to one target that takes {} \
         port tuples ({} open + {closed}) of {} ({} ports x {} source address{}).",
        thousands(needs.peak_connections),
        rate(needs.new_connections_per_s),
        thousands(fit.need_one.ceil() as u64),
        thousands(needs.peak_connections),
        thousands(fit.cap as u64),
        thousands(fit.ports),
        fit.sources,
        if fit.sources == 1 { "" } else { "es" },
    );
    if status == Status::Warn && fit.ntargets > 1 && fit.need_one > fit.cap {
        detail.push_str(&format!(
            " It fits only if the connections spread evenly over the {} targets.",
            fit.ntargets
        ));
    }
    if status == Status::Ok {
        return ok(CHECK, observed, detail);
    }
    let mut fix = Vec::new();
    if ports < WIDE_PORTS {
        fix.push(sysctl_fix("net.ipv4.ip_local_port_range", "1024 65535"));
    }
    if !fit.no_reuse.is_empty() && !needs.close_reset && !needs.server_closes {
        if s.timestamps == Some(0) {
            fix.push(sysctl_fix("net.ipv4.tcp_timestamps", "1"));
        }
        if s.tw_reuse.as_ref().ok() != Some(&1) {
            fix.push(sysctl_fix("net.ipv4.tcp_tw_reuse", "1"));
        }
    }
    // What the proposed sysctls would give, so the user knows whether they are enough.
    let wide = PortFit::new(s, ports.max(WIDE_PORTS), needs, true);
    if !fix.is_empty() {
        detail.push_str(&format!(
            " With the sysctls below: {} of {} tuples{}.",
            thousands(wide.need_one.ceil() as u64),
            thousands(wide.cap as u64),
            if wide.status() == Status::Ok {
                ""
            } else {
                ", still not enough: change the plan too"
            }
        ));
    }
    fix.push(PLAN_ALTERNATIVES.to_string());
    not_ok(CHECK, status, observed, detail, fix.join("\n"))
}

pub(crate) fn tw_reuse(s: &Sysctls, needs: Option<&PlanNeeds>) -> Finding {
    const CHECK: &str = "tcp_tw_reuse";
    let v = match &s.tw_reuse {
        Ok(v) => *v,
        Err(e) => return unreadable(CHECK, e, "Whether TIME_WAIT ports are reused"),
    };
    let what = "With reuse the kernel gives a TIME_WAIT port to a new outgoing connection after \
                1 s, when TCP timestamps tell the old and new segments apart: safe for a client \
                (a JMeter campaign reconnecting every iteration measured x3.6 throughput with \
                it).";
    // With a plan, reuse matters only if the plan does not fit the ports without it.
    let plan_needs_reuse = |s: &Sysctls| -> Option<Vec<Option<SocketAddr>>> {
        let (Some(n), Some(ports)) = (needs, s.ports()) else {
            return None;
        };
        let fit = PortFit::new(s, ports, n, false);
        (fit.status() != Status::Ok && !fit.no_reuse.is_empty()).then_some(fit.no_reuse)
    };
    let fix = sysctl_fix("net.ipv4.tcp_tw_reuse", "1");
    if s.timestamps == Some(0) && v != 0 {
        return not_ok(
            CHECK,
            Status::Warn,
            format!("{v}, but tcp_timestamps is 0"),
            format!(
                "{what} Without timestamps the kernel cannot tell them apart and reuses nothing."
            ),
            sysctl_fix("net.ipv4.tcp_timestamps", "1"),
        );
    }
    match v {
        0 => {
            let detail = format!(
                "Off: a port stays unusable for 60 s after each connection this host closes. \
                 {what}"
            );
            match needs {
                Some(_) if plan_needs_reuse(s).is_none() => ok(
                    CHECK,
                    "0 (off)",
                    format!("{detail} This plan fits the ports without it."),
                ),
                _ => not_ok(CHECK, Status::Warn, "0 (off)", detail, fix),
            }
        }
        1 => ok(CHECK, "1 (on)", format!("On for all targets. {what}")),
        2 => {
            let detail = format!(
                "Loopback only (the kernel's default): connections to 127.0.0.0/8 and ::1 reuse \
                 TIME_WAIT ports, connections to other hosts don't. {what}"
            );
            match plan_needs_reuse(s) {
                Some(remote) => not_ok(
                    CHECK,
                    Status::Warn,
                    "2 (loopback only)",
                    format!(
                        "{detail} This plan needs reuse for {}.",
                        describe_targets(&remote)
                    ),
                    fix,
                ),
                None => ok(CHECK, "2 (loopback only)", detail),
            }
        }
        other => not_ok(
            CHECK,
            Status::Warn,
            format!("{other} (unknown value)"),
            format!("Known values are 0 (off), 1 (on), 2 (loopback only). {what}"),
            fix,
        ),
    }
}

pub(crate) fn fin_timeout(s: &Sysctls) -> Finding {
    const CHECK: &str = "tcp_fin_timeout";
    let v = match &s.fin_timeout {
        Ok(v) => *v,
        Err(e) => return unreadable(CHECK, e, "The FIN_WAIT_2 timeout"),
    };
    let detail = "How long a connection this host closed waits in FIN_WAIT_2 for the server's \
                  FIN (orphaned sockets only; it holds the port meanwhile). It is NOT the TIME_WAIT \
                  length, which is fixed at 60 s: lowering it frees no ports faster, despite what \
                  tuning lists say.";
    let observed = format!("{v} s");
    if v <= 60 {
        ok(CHECK, observed, detail)
    } else {
        not_ok(
            CHECK,
            Status::Warn,
            observed,
            format!(
                "{detail} Above the default 60 s, sockets of servers that never close hold \
                 ports longer."
            ),
            sysctl_fix("net.ipv4.tcp_fin_timeout", "60"),
        )
    }
}

pub(crate) fn max_tw_buckets(s: &Sysctls, needs: Option<&PlanNeeds>) -> Finding {
    const CHECK: &str = "tcp_max_tw_buckets";
    let v = match &s.max_tw_buckets {
        Ok(v) => *v,
        Err(e) => return unreadable(CHECK, e, "The TIME_WAIT socket limit"),
    };
    let mut detail = "The most sockets in TIME_WAIT system-wide; beyond it the kernel destroys \
                      them at once and logs \"TCP: time wait bucket table overflow\". Not a fix \
                      for port exhaustion either way: raising it keeps more ports busy, lowering \
                      it gives up TIME_WAIT's protection (a JMeter tuning campaign measured no \
                      gain). Use \
                      tcp_tw_reuse, keep-alive, or more source addresses."
        .to_string();
    if let Some(n) = needs.filter(|n| !n.close_reset) {
        let tw = n.new_connections_per_s * TIME_WAIT_S;
        if tw > v as f64 {
            detail.push_str(&format!(
                " This plan leaves up to {} sockets in TIME_WAIT: expect those log lines.",
                thousands(tw.ceil() as u64)
            ));
        }
    }
    ok(CHECK, thousands(v), detail)
}

pub(crate) fn somaxconn(s: &Sysctls, needs: Option<&PlanNeeds>) -> Finding {
    const CHECK: &str = "somaxconn";
    let v = match &s.somaxconn {
        Ok(v) => *v,
        Err(e) => return unreadable(CHECK, e, "The listen backlog cap"),
    };
    let what = "The cap on every listen() backlog on this host: the connections a server here \
                (onrush serve, or a target under test on this machine) can have waiting for \
                accept(). Past it, SYNs are dropped and clients retransmit them: connect times jump \
                to 1 s, 3 s, 7 s.";
    let observed = thousands(v);
    let fix = format!(
        "{}\n{}\n# the server must also ask for a large backlog in its listen() call",
        sysctl_fix("net.core.somaxconn", "65535"),
        sysctl_fix("net.ipv4.tcp_max_syn_backlog", "65535")
    );
    let want = match needs {
        Some(n) => {
            let local = n.targets.iter().any(|t| t.ip().is_loopback());
            if !local {
                let detail = format!(
                    "{what} The plan's targets are not on this host: check somaxconn on theirs."
                );
                return ok(CHECK, observed, detail);
            }
            // A closed model without ramp-up starts its VUs together: that many SYNs at once.
            4096u64.max(n.peak_connections.min(65_535))
        }
        None => 4096,
    };
    if v >= want {
        ok(CHECK, observed, what)
    } else {
        not_ok(
            CHECK,
            Status::Warn,
            observed,
            format!(
                "{what} Wanted: at least {}{} (old kernels defaulted to 128; 4096 since Linux \
                 5.4).",
                thousands(want),
                if needs.is_some() {
                    ", the plan's connections if they all connect at once"
                } else {
                    ""
                }
            ),
            fix,
        )
    }
}

pub(crate) fn conntrack(host: &Host, s: &Sysctls, needs: Option<&PlanNeeds>) -> Finding {
    const CHECK: &str = "conntrack";
    let max =
        match host.sysctl_u64("net.netfilter.nf_conntrack_max") {
            Ok(m) => m,
            Err(e) if e.missing => return ok(
                CHECK,
                "conntrack not loaded",
                "No connection tracking on this host (nf_conntrack is not loaded): no table to \
                 fill up.",
            ),
            Err(e) => return unreadable(CHECK, &e, "The conntrack table size"),
        };
    let count = match host.sysctl_u64("net.netfilter.nf_conntrack_count") {
        Ok(c) => c,
        Err(e) => return unreadable(CHECK, &e, "The conntrack table usage"),
    };
    // How long an entry outlives its connection: TIME_WAIT's timeout (120 s), or CLOSE's (10 s)
    // after a reset.
    let tw_timeout = if needs.is_some_and(|n| n.close_reset) {
        host.sysctl_u64("net.netfilter.nf_conntrack_tcp_timeout_close")
            .unwrap_or(10)
    } else {
        host.sysctl_u64("net.netfilter.nf_conntrack_tcp_timeout_time_wait")
            .unwrap_or(120)
    };
    let pct = |n: f64| 100.0 * n / max.max(1) as f64;
    let observed = format!(
        "{} of {} entries ({:.0}%)",
        thousands(count),
        thousands(max),
        pct(count as f64)
    );
    let mut detail = format!(
        "Every connection through netfilter, loopback too, takes an entry that stays {tw_timeout} \
         s after the close. When the table is full the kernel drops new connections' packets \
         (\"nf_conntrack: table full, dropping packet\" in dmesg): connects time out, and it looks \
         like the target failing."
    );
    let mut need = count as f64;
    if let Some(n) = needs {
        let mut plan = n.peak_connections as f64 + n.new_connections_per_s * tw_timeout as f64;
        // A new connection on a tuple whose entry is still there (TIME_WAIT reused) takes that
        // entry over: per target there are never more entries than port tuples.
        if let Some(ports) = s.ports() {
            let tuples = (ports * n.source_addresses.max(1) as u64) as f64;
            plan = plan.min(tuples * targets(n).len() as f64);
        }
        need += plan;
        detail.push_str(&format!(
            " The plan adds up to {} entries ({} open + {}/s x {tw_timeout} s, at most one per \
             port tuple): {:.0}% of the table with what is there now.",
            thousands(plan.ceil() as u64),
            thousands(n.peak_connections),
            rate(n.new_connections_per_s),
            pct(need)
        ));
    }
    let status = if need > 0.9 * max as f64 {
        Status::Bad
    } else if need > 0.7 * max as f64 {
        Status::Warn
    } else {
        Status::Ok
    };
    if status == Status::Ok {
        return ok(CHECK, observed, detail);
    }
    let target = ((need * 2.0).ceil() as u64)
        .max(max * 2)
        .next_power_of_two();
    let fix = format!(
        "{}\n# each entry costs ~300 bytes of kernel memory; the sysctl.d line takes effect at\n\
         # boot only if nf_conntrack is loaded by then (e.g. listed in /etc/modules-load.d/)",
        sysctl_fix("net.netfilter.nf_conntrack_max", &target.to_string())
    );
    not_ok(CHECK, status, observed, detail, fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_ports() {
        assert_eq!(parse_port_list(""), []);
        assert_eq!(
            parse_port_list("8080,9000-9100, x ,5-4"),
            [(8080, 8080), (9000, 9100)]
        );
        let s = Sysctls {
            port_range: Ok((9000, 9050)),
            reserved: parse_port_list("8080,9040-9100,9000-9009,9005"),
            tw_reuse: Ok(2),
            timestamps: Some(1),
            fin_timeout: Ok(60),
            max_tw_buckets: Ok(1),
            somaxconn: Ok(1),
            time_wait_now: None,
        };
        // 9000-9009 and 9040-9050 of 9000-9050: 21 reserved, 30 left.
        assert_eq!(s.reserved_in(9000, 9050), 21);
        assert_eq!(s.ports(), Some(30));
    }
}
