//! The open-files limit: every connection is a file descriptor.

use super::{not_ok, ok, sysctl_fix, thousands, unreadable};
use crate::host::{Host, Unreadable};
use crate::{Finding, PlanNeeds, Status};

const CHECK: &str = "nofile";

/// Descriptors onrush needs besides connections: stdio, per worker an epoll, an eventfd and a
/// timerfd, the results files, the plan's body files. Generous on purpose.
const OWN_FDS: u64 = 128;

/// Without a plan: a hard limit below this warns (Gatling and k6 recommend at least 65,535).
const COMFORTABLE: u64 = 65_536;

/// Without a plan: below this even a modest closed loop (a few thousand VUs) fails.
const TOO_LOW: u64 = 4_096;

/// `u64::MAX` stands for "unlimited".
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub soft: u64,
    pub hard: u64,
}

pub(crate) fn read_limits(host: &Host) -> Result<Limits, Unreadable> {
    if host.is_live() {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit with a valid pointer to a local struct.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
            return Err(Unreadable {
                path: "getrlimit(RLIMIT_NOFILE)".into(),
                why: std::io::Error::last_os_error().to_string(),
                missing: false,
            });
        }
        #[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not everywhere
        let conv = |v: libc::rlim_t| {
            if v == libc::RLIM_INFINITY {
                u64::MAX
            } else {
                v as u64
            }
        };
        return Ok(Limits {
            soft: conv(l.rlim_cur),
            hard: conv(l.rlim_max),
        });
    }
    let text = host.read("proc/self/limits")?;
    parse_limits(&text).ok_or_else(|| Unreadable {
        path: host.path("proc/self/limits"),
        why: "no parseable \"Max open files\" line".into(),
        missing: false,
    })
}

/// The "Max open files  <soft>  <hard>  files" line of /proc/PID/limits.
fn parse_limits(text: &str) -> Option<Limits> {
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let mut f = line["Max open files".len()..].split_whitespace();
    let num = |s: &str| {
        if s == "unlimited" {
            Some(u64::MAX)
        } else {
            s.parse().ok()
        }
    };
    Some(Limits {
        soft: num(f.next()?)?,
        hard: num(f.next()?)?,
    })
}

fn show(n: u64) -> String {
    if n == u64::MAX {
        "unlimited".into()
    } else {
        thousands(n)
    }
}

pub(crate) fn nofile(host: &Host, needs: Option<&PlanNeeds>) -> Finding {
    let limits = match read_limits(host) {
        Ok(l) => l,
        Err(e) => return unreadable(CHECK, &e, "The open-files limit"),
    };
    let observed = format!("soft {}, hard {}", show(limits.soft), show(limits.hard));
    // onrush raises its soft limit to the hard limit when it starts (crates/onrush/src/sys.rs),
    // so the hard limit is what counts.
    let room = match limits.hard {
        u64::MAX => u64::MAX,
        hard => hard.saturating_sub(OWN_FDS),
    };
    let raise_note = if limits.soft < limits.hard {
        " onrush raises its soft limit to the hard limit when it starts, so the hard limit is \
         what counts."
    } else {
        ""
    };
    let (status, mut detail, needed) = match needs {
        Some(n) => {
            let needed = n.peak_connections + OWN_FDS;
            let status = if limits.hard >= needed {
                Status::Ok
            } else {
                Status::Bad
            };
            let detail = format!(
                "Every connection is a file descriptor: the plan holds up to {} connections at \
                 once and needs about {} descriptors; the hard limit allows {}.{}",
                thousands(n.peak_connections),
                thousands(needed),
                show(limits.hard),
                raise_note,
            );
            (status, detail, needed)
        }
        None => {
            let status = if limits.hard >= COMFORTABLE {
                Status::Ok
            } else if limits.hard >= TOO_LOW {
                Status::Warn
            } else {
                Status::Bad
            };
            let detail = format!(
                "Every connection is a file descriptor: this process can hold about {} \
                 connections (beyond that, connects fail with \"Too many open files\").{}",
                show(room),
                raise_note,
            );
            (status, detail, COMFORTABLE)
        }
    };
    if status == Status::Ok {
        return ok(CHECK, observed, detail);
    }
    let target = needed.max(COMFORTABLE).next_power_of_two();
    let mut fix = String::new();
    if let Ok(nr_open) = host.sysctl_u64("fs.nr_open") {
        if target > nr_open {
            // No process may have more open files than fs.nr_open, whatever its limits say.
            fix.push_str(&sysctl_fix("fs.nr_open", &target.to_string()));
            fix.push('\n');
            detail.push_str(&format!(
                " The kernel caps every process at fs.nr_open = {}.",
                thousands(nr_open)
            ));
        }
    }
    fix.push_str(&format!(
        "ulimit -n {target}   # in the shell that starts onrush (above the hard limit only as root)\n\
         echo '* soft nofile {target}' >> /etc/security/limits.d/99-onrush.conf   # next login\n\
         echo '* hard nofile {target}' >> /etc/security/limits.d/99-onrush.conf\n\
         # under systemd: LimitNOFILE={target} in the unit's [Service] section, then systemctl daemon-reload\n\
         # in a container: docker run --ulimit nofile={target}:{target} ..."
    ));
    not_ok(CHECK, status, observed, detail, fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max cpu time              unlimited            unlimited            seconds   \n\
                    Max open files            1024                 524288               files     \n";
        let l = parse_limits(text).unwrap();
        assert_eq!((l.soft, l.hard), (1024, 524_288));
        let l = parse_limits("Max open files unlimited unlimited files").unwrap();
        assert_eq!((l.soft, l.hard), (u64::MAX, u64::MAX));
        assert!(parse_limits("Max cpu time 1 2 seconds").is_none());
    }
}
