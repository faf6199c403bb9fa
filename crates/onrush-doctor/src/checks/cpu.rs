//! CPUs: how many, their frequency governor, and who else is using them.

use std::collections::HashMap;
use std::path::Path;

use super::{not_ok, ok, unreadable};
use crate::host::{read_at, Host, Unreadable};
use crate::{Finding, PlanNeeds, Status};

/// A process using more than this share of one core during the sample is listed as busy.
const BUSY_SHARE: f64 = 0.20;

/// At most this many busy processes are named.
const LIST: usize = 5;

/// Steal time (the hypervisor running other guests on this VM's CPUs) above this share warns.
const STEAL_SHARE: f64 = 0.10;

/// The number of `cpuN` lines of /proc/stat: the CPUs online.
fn online_cpus(stat: &str) -> usize {
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
}

pub(crate) fn cpus(host: &Host, needs: Option<&PlanNeeds>) -> Finding {
    const CHECK: &str = "cpus";
    let stat = match host.read("proc/stat") {
        Ok(s) => s,
        Err(e) => return unreadable(CHECK, &e, "The number of CPUs"),
    };
    let online = online_cpus(&stat);
    // The live process may be confined to fewer (affinity, cgroup cpuset or quota).
    let usable = if host.is_live() {
        std::thread::available_parallelism().map_or(online, |n| n.get().min(online.max(1)))
    } else {
        online
    };
    let observed = if usable < online {
        format!("{online} CPUs, {usable} usable by this process")
    } else {
        format!("{online} CPU{}", if online == 1 { "" } else { "s" })
    };
    let mut detail = "onrush runs one worker thread per core (-t sets how many); every core the \
                      load tool shares with something else shows up as latency in the results."
        .to_string();
    if usable < online {
        detail.push_str(
            " This process is confined to fewer CPUs than are online (taskset, a cgroup cpuset \
             or CPU quota).",
        );
    }
    let local_target = needs.is_some_and(|n| n.targets.iter().any(|t| t.ip().is_loopback()));
    if local_target {
        detail.push_str(
            " The target runs on this host: give it and onrush separate cores (taskset -c), or \
             both measure each other.",
        );
    }
    if usable >= 2 {
        return ok(CHECK, observed, detail);
    }
    not_ok(
        CHECK,
        Status::Warn,
        observed,
        detail,
        "# one core: the load tool, the kernel's network work and anything else share it.\n\
         # run onrush on a machine (or a cpuset) with at least 2 cores, the target elsewhere",
    )
}

/// More worker threads than this is refused: each is a runtime with its own stack, timers
/// and connections, and tens of thousands of them exhaust the process (a panic creating the
/// thread's stack guard page) long before they add any load.
pub(crate) const MAX_THREADS: usize = 1024;

/// Worker threads (`-t`) against the usable cores: more than the cores only take turns on
/// them; more than [`MAX_THREADS`] is refused.
pub(crate) fn threads(host: &Host, needs: &PlanNeeds) -> Finding {
    const CHECK: &str = "threads";
    let usable = match host.read("proc/stat") {
        Ok(stat) if host.is_live() => std::thread::available_parallelism()
            .map_or(online_cpus(&stat), |n| n.get())
            .max(1),
        Ok(stat) => online_cpus(&stat).max(1),
        Err(e) => return unreadable(CHECK, &e, "The number of CPUs"),
    };
    let observed = format!("{} worker threads, {usable} usable CPUs", needs.threads);
    if needs.threads <= usable {
        return ok(
            CHECK,
            observed,
            "One worker thread per core at most: each owns its VUs and connections.",
        );
    }
    let (status, detail) = if needs.threads > MAX_THREADS {
        (
            Status::Bad,
            format!(
                "{} worker threads is more than onrush starts ({MAX_THREADS}): each is a runtime \
                 of its own, and beyond the cores they add no load, only contention.",
                needs.threads
            ),
        )
    } else {
        (
            Status::Warn,
            format!(
                "{} worker threads on {usable} CPUs: the threads beyond the cores take turns on \
                 them, which shows up as schedule lag and latency that is the tool's, not the \
                 target's.",
                needs.threads
            ),
        )
    };
    not_ok(
        CHECK,
        status,
        observed,
        detail,
        format!("-t {usable}   # one worker per usable core (the default)"),
    )
}

pub(crate) fn governor(host: &Host) -> Finding {
    const CHECK: &str = "cpu_governor";
    let unknown = || {
        ok(
            CHECK,
            "unknown (no cpufreq)",
            "No CPU frequency scaling is exposed (usual in VMs, where the hypervisor decides): \
             nothing to set here.",
        )
    };
    let Ok(dir) = std::fs::read_dir(host.path("sys/devices/system/cpu")) else {
        return unknown();
    };
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut total = 0;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_cpu = name
            .strip_prefix("cpu")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_cpu {
            continue;
        }
        let Ok(g) = std::fs::read_to_string(entry.path().join("cpufreq/scaling_governor")) else {
            continue;
        };
        let g = g.trim().to_string();
        total += 1;
        match counts.iter_mut().find(|(name, _)| *name == g) {
            Some((_, n)) => *n += 1,
            None => counts.push((g, 1)),
        }
    }
    if total == 0 {
        return unknown();
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let observed = counts
        .iter()
        .map(|(g, n)| format!("{g} on {n} CPU{}", if *n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join(", ");
    if counts.iter().all(|(g, _)| g == "performance") {
        return ok(
            CHECK,
            observed,
            "The CPUs run at full clock: latency and the load tool's cost per request don't \
             depend on how busy the CPU was a moment ago.",
        );
    }
    not_ok(
        CHECK,
        Status::Warn,
        observed,
        "The CPUs clock down when idle and ramp up under load: the first seconds of a run, and \
         every lull of an open model, run slower, and two runs don't compare. The target's \
         latency and the load tool's own cost per request both move with the clock.",
        "cpupower frequency-set -g performance\n\
         # without cpupower: echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor\n\
         # neither survives a reboot: enable your distribution's cpupower service,\n\
         # or: tuned-adm profile latency-performance",
    )
}

/// One reading of /proc/stat and every /proc/[pid]/stat.
struct Sample {
    /// Jiffies over all CPUs: user..steal.
    total: u64,
    /// idle + iowait.
    idle: u64,
    steal: u64,
    ncpu: usize,
    /// pid -> (command name, utime + stime).
    procs: HashMap<u32, (String, u64)>,
}

fn read_sample(root: &Path) -> Result<Sample, Unreadable> {
    let stat_path = root.join("proc/stat");
    let stat = read_at(&stat_path)?;
    let malformed = || Unreadable {
        path: stat_path.clone(),
        why: "no parseable \"cpu\" line".into(),
        missing: false,
    };
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or_else(malformed)?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    if v.len() < 4 {
        return Err(malformed());
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    let total = (0..8).map(at).sum();
    let mut procs = HashMap::new();
    if let Ok(dir) = std::fs::read_dir(root.join("proc")) {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // A process may exit between listing and reading: skip it.
            if let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) {
                if let Some((name, ticks)) = parse_pid_stat(&text) {
                    procs.insert(pid, (name, ticks));
                }
            }
        }
    }
    Ok(Sample {
        total,
        idle: at(3) + at(4),
        steal: at(7),
        ncpu: online_cpus(&stat).max(1),
        procs,
    })
}

/// "pid (comm) state ppid ... utime stime ...": the command and utime + stime. The command may
/// hold spaces and parentheses, so fields are counted from the last ')'.
fn parse_pid_stat(text: &str) -> Option<(String, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// The pid the busy list leaves out: this process.
fn own_pid(host: &Host) -> Option<u32> {
    if host.is_live() {
        return Some(std::process::id());
    }
    let text = host.read("proc/self/stat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

pub(crate) fn busy_processes(host: &Host) -> Finding {
    const CHECK: &str = "busy_processes";
    let first = match read_sample(host.root()) {
        Ok(s) => s,
        Err(e) => return unreadable(CHECK, &e, "The CPU use of other processes"),
    };
    let second = match host.second_sample() {
        Some(root) => read_sample(root),
        None => {
            std::thread::sleep(host.sample_interval());
            read_sample(host.root())
        }
    };
    let second = match second {
        Ok(s) => s,
        Err(e) => return unreadable(CHECK, &e, "The CPU use of other processes"),
    };
    let dtotal = second.total.saturating_sub(first.total);
    if dtotal == 0 {
        return Finding {
            check: CHECK,
            status: Status::Warn,
            observed: "cannot measure: no CPU time passed between the two samples".into(),
            detail: "The CPU use of other processes is unknown, so this check could not be made."
                .into(),
            fix: None,
        };
    }
    let ncpu = second.ncpu;
    // Jiffies of one core during the sample.
    let per_core = dtotal as f64 / ncpu as f64;
    let busy_host = 1.0 - second.idle.saturating_sub(first.idle) as f64 / dtotal as f64;
    let steal = second.steal.saturating_sub(first.steal) as f64 / dtotal as f64;
    let me = own_pid(host);
    let mut busy: Vec<(u32, &str, f64)> = second
        .procs
        .iter()
        .filter(|(pid, _)| Some(**pid) != me)
        .filter_map(|(pid, (name, ticks))| {
            let (_, before) = first.procs.get(pid)?;
            let share = ticks.saturating_sub(*before) as f64 / per_core;
            (share > BUSY_SHARE).then_some((*pid, name.as_str(), share))
        })
        .collect();
    busy.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    let others: f64 = busy.iter().map(|b| b.2).sum();
    let mut observed = if busy.is_empty() {
        "none over 20% of a core".to_string()
    } else {
        busy.iter()
            .take(LIST)
            .map(|(pid, name, share)| format!("{name} (pid {pid}) {:.0}%", share * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if busy.len() > LIST {
        observed.push_str(&format!(" and {} more", busy.len() - LIST));
    }
    observed.push_str(&format!("; host {:.0}% busy", busy_host * 100.0));
    if steal >= 0.005 {
        observed.push_str(&format!(", {:.0}% stolen", steal * 100.0));
    }
    let over = match host.second_sample() {
        Some(_) => "the sample".to_string(),
        None => format!("{} ms", host.sample_interval().as_millis()),
    };
    let mut detail = format!(
        "CPU use over {over}, as a share of one core, onrush itself left out: processes above \
         20% compete with the load tool (and with the target, if it runs here), and the \
         results then measure the contention, not the target."
    );
    let mut status = Status::Ok;
    if !busy.is_empty() {
        status = if others >= ncpu as f64 / 2.0 {
            detail.push_str(&format!(
                " Together they use {:.1} of the {ncpu} cores.",
                others
            ));
            Status::Bad
        } else {
            Status::Warn
        };
    }
    if steal > STEAL_SHARE {
        status = status.max(Status::Warn);
        detail.push_str(&format!(
            " The hypervisor gave {:.0}% of this VM's CPU time to other guests (steal).",
            steal * 100.0
        ));
    }
    if status == Status::Ok {
        return ok(CHECK, observed, detail);
    }
    let mut fix = Vec::new();
    if !busy.is_empty() {
        let pids = busy
            .iter()
            .take(LIST)
            .map(|b| b.0.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        fix.push(format!(
            "kill -STOP {pids}   # pause them during the test (if they can wait)\n\
             kill -CONT {pids}   # and resume them after\n\
             # or keep them off onrush's cores (taskset -c LIST onrush run PLAN -t N),\n\
             # or run onrush on another machine"
        ));
    }
    if steal > STEAL_SHARE {
        fix.push("# steal: run on dedicated cores (a larger or dedicated instance)".to_string());
    }
    not_ok(CHECK, status, observed, detail, fix.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pid_stat_with_odd_names() {
        let text = "4242 (my (odd) proc) R 1 4242 4242 0 -1 4194304 100 0 0 0 150 50 0 0 20 0 1 0 \
                    241197 3133440 393 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0";
        assert_eq!(
            parse_pid_stat(text),
            Some(("my (odd) proc".to_string(), 200))
        );
        assert_eq!(parse_pid_stat("garbage"), None);
    }

    #[test]
    fn counts_online_cpus() {
        assert_eq!(
            online_cpus("cpu  1 2 3 4\ncpu0 1 2 3 4\ncpu1 1 2 3 4\nintr 5"),
            2
        );
    }
}
