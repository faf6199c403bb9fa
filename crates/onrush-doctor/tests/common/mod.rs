//! Fake `/proc` and `/sys` trees in temporary directories: a well-tuned host and a badly tuned
//! one, each as two snapshots (the CPU sample is taken "a moment later" from the second).
#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use onrush_doctor::Host;

/// A directory under the system temp dir, removed on drop.
pub struct Tree {
    pub root: PathBuf,
}

impl Tree {
    pub fn new(name: &str) -> Tree {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "onrush-doctor-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Tree { root }
    }

    /// Writes `ROOT/rel`, creating directories.
    pub fn file(&self, rel: &str, content: &str) -> &Tree {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self
    }

    /// Writes a sysctl by dotted name, as the kernel shows it (value and newline).
    pub fn sysctl(&self, name: &str, value: &str) -> &Tree {
        self.file(
            &format!("proc/sys/{}", name.replace('.', "/")),
            &format!("{value}\n"),
        )
    }

    pub fn remove(&self, rel: &str) -> &Tree {
        let _ = std::fs::remove_file(self.root.join(rel));
        self
    }

    /// Every file under the tree and its content, to check nothing was changed.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root, &mut out);
        out
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A /proc/[pid]/stat line with the given CPU ticks (utime, stime).
pub fn pid_stat(pid: u32, name: &str, utime: u64, stime: u64) -> String {
    format!(
        "{pid} ({name}) S 1 {pid} {pid} 0 -1 4194560 1000 0 0 0 {utime} {stime} 0 0 20 0 1 0 \
         5000 10000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
    )
}

/// /proc/stat for `ncpu` CPUs with these totals (user, system, idle, steal) on the "cpu" line.
pub fn proc_stat(ncpu: usize, user: u64, system: u64, idle: u64, steal: u64) -> String {
    let mut s = format!("cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0\n");
    for i in 0..ncpu {
        s.push_str(&format!("cpu{i} 1 0 1 1 0 0 0 0 0 0\n"));
    }
    s.push_str("intr 1 2 3\nctxt 12345\nbtime 1700000000\nprocesses 5000\n");
    s
}

/// A host tuned for load tests: 4 CPUs at `performance`, 1M open files, ports 1024-65535,
/// tw_reuse 1, conntrack mostly empty, nothing busy but onrush itself (pid 999).
/// Returns the tree and the second CPU sample.
pub fn good_host() -> (Tree, Tree) {
    let t = Tree::new("good");
    t.file(
        "proc/self/limits",
        "Limit                     Soft Limit           Hard Limit           Units     \n\
         Max open files            1048576              1048576              files     \n",
    )
    .file("proc/self/stat", &pid_stat(999, "onrush", 0, 0))
    .file(
        "proc/meminfo",
        "MemTotal:       16777216 kB\nMemFree:         8000000 kB\nMemAvailable:   12582912 kB\n",
    )
    .file(
        "proc/net/sockstat",
        "sockets: used 200\nTCP: inuse 10 orphan 0 tw 5 alloc 12 mem 1\nUDP: inuse 2 mem 0\n",
    )
    .sysctl("fs.nr_open", "1048576")
    .sysctl("net.ipv4.ip_local_port_range", "1024\t65535")
    .sysctl("net.ipv4.tcp_tw_reuse", "1")
    .sysctl("net.ipv4.tcp_timestamps", "1")
    .sysctl("net.ipv4.tcp_fin_timeout", "30")
    .sysctl("net.ipv4.tcp_max_tw_buckets", "262144")
    .sysctl("net.core.somaxconn", "65535")
    .sysctl("net.netfilter.nf_conntrack_max", "1048576")
    .sysctl("net.netfilter.nf_conntrack_count", "1000")
    .sysctl("net.netfilter.nf_conntrack_tcp_timeout_time_wait", "120");
    for cpu in 0..4 {
        t.file(
            &format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"),
            "performance\n",
        );
    }
    t.file("sys/devices/system/cpu/online", "0-3\n");
    let later = Tree::new("good-later");
    // 4 CPUs x 20 ticks pass; onrush (excluded) used a whole core, systemd almost nothing.
    t.file("proc/stat", &proc_stat(4, 1000, 500, 10_000, 0))
        .file("proc/1/stat", &pid_stat(1, "systemd", 100, 50))
        .file("proc/999/stat", &pid_stat(999, "onrush", 10, 0));
    later
        .file("proc/stat", &proc_stat(4, 1015, 506, 10_059, 0))
        .file("proc/1/stat", &pid_stat(1, "systemd", 100, 51))
        .file("proc/999/stat", &pid_stat(999, "onrush", 25, 5));
    (t, later)
}

/// A host that will hurt a load test: 1,024 open files, 5,000 ports, tw_reuse 0, fin_timeout
/// 120, somaxconn 128, conntrack 95% full, powersave, 600 MiB available, and stress-ng and node using
/// 95% and 40% of a core (of 2).
pub fn bad_host() -> (Tree, Tree) {
    let t = Tree::new("bad");
    t.file(
        "proc/self/limits",
        "Limit                     Soft Limit           Hard Limit           Units     \n\
         Max open files            1024                 1024                 files     \n",
    )
    .file("proc/self/stat", &pid_stat(777, "onrush", 0, 0))
    .file(
        "proc/meminfo",
        "MemTotal:        2097152 kB\nMemFree:          300000 kB\nMemAvailable:     614400 kB\n",
    )
    .sysctl("fs.nr_open", "1048576")
    .sysctl("net.ipv4.ip_local_port_range", "40000\t44999")
    .sysctl("net.ipv4.tcp_tw_reuse", "0")
    .sysctl("net.ipv4.tcp_timestamps", "1")
    .sysctl("net.ipv4.tcp_fin_timeout", "120")
    .sysctl("net.ipv4.tcp_max_tw_buckets", "4096")
    .sysctl("net.core.somaxconn", "128")
    .sysctl("net.netfilter.nf_conntrack_max", "65536")
    .sysctl("net.netfilter.nf_conntrack_count", "62000");
    for cpu in 0..2 {
        t.file(
            &format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"),
            "powersave\n",
        );
    }
    let later = Tree::new("bad-later");
    // 2 CPUs x 20 ticks pass: stress-ng 19 ticks (95% of a core), node 8 (40%), cron 2 (10%:
    // not listed), onrush itself 20 (excluded).
    t.file("proc/stat", &proc_stat(2, 5000, 1000, 8000, 0))
        .file("proc/4242/stat", &pid_stat(4242, "stress-ng", 900, 100))
        .file("proc/55/stat", &pid_stat(55, "cron", 10, 10))
        .file("proc/4300/stat", &pid_stat(4300, "node", 300, 30))
        .file("proc/777/stat", &pid_stat(777, "onrush", 0, 0));
    later
        .file("proc/stat", &proc_stat(2, 5030, 5 + 1000, 8005, 0))
        .file("proc/4242/stat", &pid_stat(4242, "stress-ng", 918, 101))
        .file("proc/55/stat", &pid_stat(55, "cron", 11, 11))
        .file("proc/4300/stat", &pid_stat(4300, "node", 306, 32))
        .file("proc/777/stat", &pid_stat(777, "onrush", 15, 5));
    (t, later)
}

pub fn host(pair: &(Tree, Tree)) -> Host {
    Host::at(&pair.0.root).with_second_sample(&pair.1.root)
}
