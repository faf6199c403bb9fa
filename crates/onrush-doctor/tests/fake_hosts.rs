//! The checks against fake /proc and /sys trees: a well-tuned host, a badly tuned one, plans
//! that do and don't fit, missing files; and that nothing is ever written.

use crate::common;

use common::{bad_host, good_host, host, pid_stat, proc_stat, Tree};
use onrush_doctor::{diagnose, print_text, Finding, Host, PlanNeeds, Report, Status, CHECKS};

fn get<'a>(r: &'a Report, check: &str) -> &'a Finding {
    r.get(check)
        .unwrap_or_else(|| panic!("no {check} finding in {r:#?}"))
}

fn fix(f: &Finding) -> &str {
    f.fix
        .as_deref()
        .unwrap_or_else(|| panic!("{} has no fix: {f:#?}", f.check))
}

fn statuses(r: &Report) -> Vec<(&'static str, Status)> {
    r.findings.iter().map(|f| (f.check, f.status)).collect()
}

fn plan(peak: u64, rate: f64, targets: &[&str], sources: usize) -> PlanNeeds {
    PlanNeeds {
        peak_connections: peak,
        new_connections_per_s: rate,
        targets: targets.iter().map(|t| t.parse().unwrap()).collect(),
        source_addresses: sources,
        close_reset: false,
        ..Default::default()
    }
}

#[test]
fn a_good_host_is_all_ok_without_fixes() {
    let trees = good_host();
    let r = diagnose(&host(&trees), None);
    let names: Vec<&str> = r.findings.iter().map(|f| f.check).collect();
    assert_eq!(names, CHECKS);
    for f in &r.findings {
        assert_eq!(f.status, Status::Ok, "{f:#?}");
        assert_eq!(f.fix, None, "{f:#?}");
        assert!(!f.observed.is_empty() && !f.detail.is_empty(), "{f:#?}");
    }
    assert_eq!(r.worst(), Status::Ok);
    assert_eq!(get(&r, "cpus").observed, "4 CPUs");
    assert_eq!(get(&r, "nofile").observed, "soft 1,048,576, hard 1,048,576");
    assert_eq!(
        get(&r, "ephemeral_ports").observed,
        "64,512 ports (1024-65535), 5 in TIME_WAIT now: 1,075 new connections/s per target \
         without reuse"
    );
    assert_eq!(get(&r, "tcp_tw_reuse").observed, "1 (on)");
    assert_eq!(
        get(&r, "conntrack").observed,
        "1,000 of 1,048,576 entries (0%)"
    );
    assert_eq!(get(&r, "cpu_governor").observed, "performance on 4 CPUs");
    assert_eq!(get(&r, "memory").observed, "12.0 GiB available of 16.0 GiB");
    // onrush itself (pid 999 in proc/self/stat) used a whole core: left out.
    let busy = get(&r, "busy_processes");
    assert_eq!(busy.observed, "none over 20% of a core; host 26% busy");
}

#[test]
fn a_good_host_fits_a_big_plan() {
    let trees = good_host();
    // 20,000 connections, 5,000 new/s to a remote target: with tw_reuse=1 and 64,512 ports,
    // 20,000 + 5,000 x 1 s tuples.
    let needs = plan(20_000, 5_000.0, &["10.0.0.5:80"], 0);
    let r = diagnose(&host(&trees), Some(&needs));
    for f in &r.findings {
        assert_eq!(f.status, Status::Ok, "{f:#?}");
    }
    let ports = get(&r, "ephemeral_ports");
    assert!(
        ports.detail.contains("takes 25,000 port tuples"),
        "{}",
        ports.detail
    );
    assert!(
        get(&r, "somaxconn").detail.contains("not on this host"),
        "remote target"
    );
}

#[test]
fn a_bad_host_without_a_plan() {
    let trees = bad_host();
    let before = (trees.0.snapshot(), trees.1.snapshot());
    let r = diagnose(&host(&trees), None);
    assert_eq!(
        statuses(&r),
        [
            ("cpus", Status::Ok),
            ("memory", Status::Warn),
            ("nofile", Status::Bad),
            ("ephemeral_ports", Status::Warn),
            ("tcp_tw_reuse", Status::Warn),
            ("tcp_fin_timeout", Status::Warn),
            ("tcp_max_tw_buckets", Status::Ok),
            ("somaxconn", Status::Warn),
            ("conntrack", Status::Bad),
            ("cpu_governor", Status::Warn),
            ("busy_processes", Status::Bad),
        ]
    );
    assert_eq!(r.worst(), Status::Bad);
    assert_eq!((r.count(Status::Bad), r.count(Status::Warn)), (3, 6));

    let nofile = get(&r, "nofile");
    assert_eq!(nofile.observed, "soft 1,024, hard 1,024");
    let f = fix(nofile);
    assert!(f.starts_with("ulimit -n 65536 "), "{f}");
    assert!(f.contains("echo '* hard nofile 65536' >> /etc/security/limits.d/99-onrush.conf"));
    assert!(f.contains("LimitNOFILE=65536"), "{f}");

    let ports = get(&r, "ephemeral_ports");
    assert_eq!(
        ports.observed,
        "5,000 ports (40000-44999): 83 new connections/s per target without reuse"
    );
    let f = fix(ports);
    assert!(
        f.starts_with(
            "sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"\n\
         echo 'net.ipv4.ip_local_port_range = 1024 65535' >> /etc/sysctl.d/99-onrush.conf\n"
        ),
        "{f}"
    );

    let reuse = get(&r, "tcp_tw_reuse");
    assert_eq!(reuse.observed, "0 (off)");
    assert_eq!(
        fix(reuse),
        "sysctl -w net.ipv4.tcp_tw_reuse=1\n\
         echo 'net.ipv4.tcp_tw_reuse = 1' >> /etc/sysctl.d/99-onrush.conf"
    );
    assert!(fix(get(&r, "tcp_fin_timeout")).starts_with("sysctl -w net.ipv4.tcp_fin_timeout=60\n"));
    assert!(get(&r, "tcp_fin_timeout")
        .detail
        .contains("NOT the TIME_WAIT length"));
    assert!(fix(get(&r, "somaxconn")).starts_with("sysctl -w net.core.somaxconn=65535\n"));

    let ct = get(&r, "conntrack");
    assert_eq!(ct.observed, "62,000 of 65,536 entries (95%)");
    assert!(
        fix(ct).starts_with(
            "sysctl -w net.netfilter.nf_conntrack_max=131072\n\
             echo 'net.netfilter.nf_conntrack_max = 131072' >> /etc/sysctl.d/99-onrush.conf"
        ),
        "{}",
        fix(ct)
    );

    let gov = get(&r, "cpu_governor");
    assert_eq!(gov.observed, "powersave on 2 CPUs");
    assert!(fix(gov).starts_with("cpupower frequency-set -g performance\n"));

    let busy = get(&r, "busy_processes");
    assert_eq!(
        busy.observed,
        "stress-ng (pid 4242) 95%, node (pid 4300) 40%; host 88% busy"
    );
    assert!(!busy.observed.contains("onrush"), "we leave ourselves out");
    assert!(!busy.observed.contains("cron"), "10% is not busy");
    assert!(
        fix(busy).starts_with("kill -STOP 4242 4300 "),
        "{}",
        fix(busy)
    );

    assert!(get(&r, "memory")
        .observed
        .starts_with("600 MiB available of 2.0 GiB"));

    // The doctor changes nothing.
    assert_eq!(before, (trees.0.snapshot(), trees.1.snapshot()));
}

#[test]
fn a_bad_host_with_a_plan_that_reconnects() {
    let trees = bad_host();
    // 3,000 connections, 200 new/s to one remote target: 3,000 + 200 x 60 s = 15,000 tuples
    // of 5,000.
    let needs = plan(3_000, 200.0, &["10.1.2.3:443"], 0);
    let r = diagnose(&host(&trees), Some(&needs));
    let ports = get(&r, "ephemeral_ports");
    assert_eq!(ports.status, Status::Bad);
    assert!(
        ports
            .detail
            .contains("takes 15,000 port tuples (3,000 open + 200/s x 60 s in TIME_WAIT) of 5,000"),
        "{}",
        ports.detail
    );
    assert!(
        ports
            .detail
            .contains("With the sysctls below: 3,200 of 64,512 tuples."),
        "{}",
        ports.detail
    );
    let f = fix(ports);
    assert!(f.contains("sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\""));
    assert!(f.contains("sysctl -w net.ipv4.tcp_tw_reuse=1"));
    assert!(f.contains("echo 'net.ipv4.tcp_tw_reuse = 1' >> /etc/sysctl.d/99-onrush.conf"));
    assert_eq!(get(&r, "tcp_tw_reuse").status, Status::Warn);
    // 3,000 connections + 128 of onrush's own > 1,024.
    let nofile = get(&r, "nofile");
    assert_eq!(nofile.status, Status::Bad);
    assert!(
        nofile.detail.contains("needs about 3,128 descriptors"),
        "{}",
        nofile.detail
    );
    // 200/s x 60 s in TIME_WAIT beyond 4,096 buckets: said, but not a problem.
    let tw = get(&r, "tcp_max_tw_buckets");
    assert_eq!(tw.status, Status::Ok);
    assert!(
        tw.detail.contains("up to 12,000 sockets in TIME_WAIT"),
        "{}",
        tw.detail
    );
}

/// The default port range with the given tcp_tw_reuse, and nothing else of note.
fn default_ports(tw_reuse: &str) -> (Tree, Tree) {
    let (t, later) = good_host();
    t.sysctl("net.ipv4.ip_local_port_range", "32768\t60999")
        .sysctl("net.ipv4.tcp_tw_reuse", tw_reuse);
    (t, later)
}

#[test]
fn the_new_connection_rate_a_host_sustains() {
    let trees = default_ports("0");
    let h = host(&trees);
    let r = diagnose(&h, None);
    // 28,232 ports / 60 s of TIME_WAIT (the field notes' JMeter wall).
    let ports = get(&r, "ephemeral_ports");
    assert_eq!(
        ports.status,
        Status::Ok,
        "the default range is fine without a plan"
    );
    assert!(ports.observed.starts_with("28,232 ports (32768-60999)"));
    assert!(ports
        .observed
        .ends_with(": 471 new connections/s per target without reuse"));
    assert!(
        ports
            .detail
            .contains("28,232 / 60 s = 471 new connections/s"),
        "{}",
        ports.detail
    );

    // 1,000 new/s to one target: 60,000 tuples of 28,232.
    let one = plan(0, 1_000.0, &["127.0.0.1:8080"], 0);
    assert_eq!(
        get(&diagnose(&h, Some(&one)), "ephemeral_ports").status,
        Status::Bad
    );
    // Over 4 source addresses: 112,928 tuples, 60,000 is 53%.
    let four = PlanNeeds {
        source_addresses: 4,
        ..one.clone()
    };
    let r = diagnose(&h, Some(&four));
    let f = get(&r, "ephemeral_ports");
    assert_eq!(f.status, Status::Ok, "{f:#?}");
    assert!(
        f.detail
            .contains("of 112,928 (28,232 ports x 4 source addresses)"),
        "{}",
        f.detail
    );
    assert_eq!(
        get(&r, "tcp_tw_reuse").status,
        Status::Ok,
        "not needed by this plan"
    );

    // Closed with RST: no TIME_WAIT, the open connections are all that count.
    let reset = PlanNeeds {
        peak_connections: 500,
        close_reset: true,
        ..plan(0, 1_000.0, &["10.0.0.1:80"], 0)
    };
    let r = diagnose(&h, Some(&reset));
    let f = get(&r, "ephemeral_ports");
    assert_eq!(f.status, Status::Ok, "{f:#?}");
    assert!(
        f.detail
            .contains("500 port tuples (500 open + closed with RST: no TIME_WAIT)"),
        "{}",
        f.detail
    );
    let ct = get(&r, "conntrack");
    assert!(ct.detail.contains("1,000/s x 10 s"), "{}", ct.detail);

    // The server closes first (`close: server`, per_request's default): its TIME_WAIT, not ours.
    let by_server = PlanNeeds {
        peak_connections: 500,
        server_closes: true,
        ..plan(0, 1_000.0, &["10.0.0.1:80"], 0)
    };
    let r = diagnose(&h, Some(&by_server));
    let f = get(&r, "ephemeral_ports");
    assert_eq!(f.status, Status::Ok, "{f:#?}");
    assert!(
        f.detail.contains(
            "500 port tuples (500 open + closed by the server first: the TIME_WAIT is the server's)"
        ),
        "{}",
        f.detail
    );

    // 600 new/s over two remote targets: 36,000 to one, 18,000 each if spread evenly.
    let two = plan(0, 600.0, &["10.0.0.1:80", "10.0.0.2:80"], 0);
    let f = diagnose(&h, Some(&two))
        .get("ephemeral_ports")
        .unwrap()
        .clone();
    assert_eq!(f.status, Status::Warn);
    assert!(
        f.detail.contains("spread evenly over the 2 targets"),
        "{}",
        f.detail
    );
}

#[test]
fn reserved_ports_are_not_ephemeral() {
    let (t, later) = good_host();
    t.sysctl("net.ipv4.ip_local_reserved_ports", "8080,9000-9099");
    let r = diagnose(&host(&(t, later)), None);
    assert!(get(&r, "ephemeral_ports")
        .observed
        .starts_with("64,411 ports (1024-65535, 101 reserved), "));
}

#[test]
fn tw_reuse_2_helps_loopback_targets_only() {
    let trees = default_ports("2");
    let h = host(&trees);
    let r = diagnose(&h, None);
    assert_eq!(get(&r, "tcp_tw_reuse").status, Status::Ok);
    assert_eq!(get(&r, "tcp_tw_reuse").observed, "2 (loopback only)");

    // 1,000 new/s to loopback: ports reused after 1 s, 1,000 tuples.
    let local = plan(0, 1_000.0, &["127.0.0.1:8080"], 0);
    let r = diagnose(&h, Some(&local));
    assert_eq!(get(&r, "ephemeral_ports").status, Status::Ok);
    assert_eq!(get(&r, "tcp_tw_reuse").status, Status::Ok);

    // The same to a remote target: no reuse, 60,000 tuples of 28,232.
    let remote = plan(0, 1_000.0, &["192.0.2.10:8080"], 0);
    let r = diagnose(&h, Some(&remote));
    assert_eq!(get(&r, "ephemeral_ports").status, Status::Bad);
    let reuse = get(&r, "tcp_tw_reuse");
    assert_eq!(reuse.status, Status::Warn);
    assert!(
        reuse.detail.contains("needs reuse for 192.0.2.10:8080"),
        "{}",
        reuse.detail
    );
    assert!(fix(reuse).starts_with("sysctl -w net.ipv4.tcp_tw_reuse=1\n"));
}

#[test]
fn tw_reuse_without_timestamps_does_nothing() {
    let (t, later) = good_host();
    t.sysctl("net.ipv4.tcp_timestamps", "0");
    let r = diagnose(&host(&(t, later)), None);
    let reuse = get(&r, "tcp_tw_reuse");
    assert_eq!(reuse.status, Status::Warn);
    assert!(fix(reuse).starts_with("sysctl -w net.ipv4.tcp_timestamps=1\n"));
}

#[test]
fn conntrack_plan_and_absent_module() {
    let (t, later) = good_host();
    t.sysctl("net.netfilter.nf_conntrack_max", "65536")
        .sysctl("net.netfilter.nf_conntrack_count", "100")
        .sysctl("net.ipv4.tcp_tw_reuse", "0");
    let h = Host::at(&t.root).with_second_sample(&later.root);
    assert_eq!(get(&diagnose(&h, None), "conntrack").status, Status::Ok);
    // 500 new/s over 4 source addresses to a remote target: entries live 120 s after the close,
    // 60,000 + what is there: 92% of the table.
    let needs = plan(0, 500.0, &["10.0.0.1:80"], 4);
    let ct = diagnose(&h, Some(&needs)).get("conntrack").unwrap().clone();
    assert_eq!(ct.status, Status::Bad, "{ct:#?}");
    assert!(ct.detail.contains("60,000 entries"), "{}", ct.detail);

    t.remove("proc/sys/net/netfilter/nf_conntrack_max");
    let ct = diagnose(&h, Some(&needs)).get("conntrack").unwrap().clone();
    assert_eq!(
        (ct.status, ct.observed.as_str()),
        (Status::Ok, "conntrack not loaded")
    );
}

#[test]
fn one_busy_process_warns() {
    let (t, later) = good_host();
    // systemd uses 6 of the 20 ticks of a core: 30%.
    later.file("proc/1/stat", &pid_stat(1, "systemd", 104, 52));
    let r = diagnose(&Host::at(&t.root).with_second_sample(&later.root), None);
    let busy = get(&r, "busy_processes");
    assert_eq!(busy.status, Status::Warn);
    assert!(
        busy.observed.starts_with("systemd (pid 1) 30%"),
        "{}",
        busy.observed
    );
}

#[test]
fn steal_time_warns() {
    let (t, later) = good_host();
    t.file("proc/stat", &proc_stat(4, 1000, 500, 10_000, 0));
    // 80 ticks pass, 20 of them stolen by the hypervisor.
    later.file("proc/stat", &proc_stat(4, 1005, 505, 10_050, 20));
    let r = diagnose(&Host::at(&t.root).with_second_sample(&later.root), None);
    let busy = get(&r, "busy_processes");
    assert_eq!(busy.status, Status::Warn);
    assert!(busy.observed.contains("25% stolen"), "{}", busy.observed);
    assert!(busy.detail.contains("(steal)"), "{}", busy.detail);
}

#[test]
fn missing_files_give_warnings_not_errors() {
    let empty = Tree::new("empty");
    let r = diagnose(
        &Host::at(&empty.root).with_sample_interval(std::time::Duration::ZERO),
        Some(&plan(100, 10.0, &["127.0.0.1:80"], 0)),
    );
    let names: Vec<&str> = r.findings.iter().map(|f| f.check).collect();
    assert_eq!(names, CHECKS);
    for f in &r.findings {
        match f.check {
            "conntrack" => assert_eq!(f.observed, "conntrack not loaded"),
            "cpu_governor" => assert_eq!(f.observed, "unknown (no cpufreq)"),
            _ => {
                assert_eq!(f.status, Status::Warn, "{f:#?}");
                assert!(f.observed.starts_with("cannot read "), "{f:#?}");
                assert!(
                    f.observed.contains(&*empty.root.to_string_lossy()),
                    "{f:#?}"
                );
            }
        }
    }
    // A tree whose CPU counters don't move can't be measured: a warning too.
    let (t, _) = good_host();
    let r = diagnose(
        &Host::at(&t.root).with_sample_interval(std::time::Duration::ZERO),
        None,
    );
    let busy = get(&r, "busy_processes");
    assert_eq!(busy.status, Status::Warn);
    assert!(
        busy.observed.starts_with("cannot measure"),
        "{}",
        busy.observed
    );
}

#[test]
fn json_and_text() {
    let trees = bad_host();
    let r = diagnose(&host(&trees), None);
    let v = serde_json::to_value(&r).unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), CHECKS.len());
    assert_eq!(findings[0]["check"], "cpus");
    assert_eq!(findings[0]["status"], "ok");
    assert!(findings[0]["fix"].is_null());
    assert_eq!(findings[2]["check"], "nofile");
    assert_eq!(findings[2]["status"], "bad");
    assert_eq!(findings[4]["status"], "warn");
    assert!(findings[4]["fix"]
        .as_str()
        .unwrap()
        .starts_with("sysctl -w net.ipv4.tcp_tw_reuse=1"));

    let mut out = Vec::new();
    print_text(&r, &mut out);
    let text = String::from_utf8(out).unwrap();
    println!("{text}"); // cargo test -- --nocapture json_and_text: the sample in docs/doctor.md
    assert!(
        text.starts_with("✓ cpus                2 CPUs\n! memory  "),
        "{text}"
    );
    assert!(
        text.contains("\n✗ nofile              soft 1,024, hard 1,024\n"),
        "{text}"
    );
    assert!(
        text.contains("\n                      fix:\n                        sysctl -w net.ipv4.tcp_tw_reuse=1\n"),
        "{text}"
    );
    assert!(
        text.ends_with("2 ok, 6 warnings, 3 problems. Nothing was changed; the fixes need root.\n")
    );
    // Explanations are wrapped at 100 columns; fix commands are never wrapped.
    let mut in_fix = false;
    for line in text.lines() {
        if line.starts_with(['✓', '!', '✗']) {
            in_fix = false;
        } else if line.trim() == "fix:" {
            in_fix = true;
        } else if !in_fix {
            assert!(line.chars().count() <= 100, "line too long: {line}");
        }
    }
}

#[test]
fn preflight_refuses_what_would_kill_the_run() {
    let trees = good_host();
    let h = host(&trees);
    // 12 GiB available: 100,000 VUs (~3 GiB) fit, 1,000,000 (~31 GiB) do not.
    let fits = PlanNeeds {
        vus: 100_000,
        peak_connections: 100_000,
        threads: 4,
        ..Default::default()
    };
    let r = onrush_doctor::preflight(&h, &fits);
    let names: Vec<&str> = r.findings.iter().map(|f| f.check).collect();
    assert_eq!(names, ["memory", "nofile", "threads"]);
    assert_eq!(r.worst(), Status::Ok, "{r:#?}");

    let too_many = PlanNeeds {
        vus: 1_000_000,
        ..fits.clone()
    };
    let f = get(&onrush_doctor::preflight(&h, &too_many), "memory").clone();
    assert_eq!(f.status, Status::Bad, "{f:#?}");
    assert!(f.detail.contains("1,000,000 VUs"), "{}", f.detail);
    assert!(f.detail.contains("30.6 GiB needed"), "{}", f.detail);
    assert!(fix(&f).contains("split the load"), "{f:#?}");

    // A cgroup limit (a container, systemd's MemoryMax=) bounds the room below MemAvailable.
    trees.0.file("proc/self/cgroup", "0::/onrush.slice\n");
    trees
        .0
        .file("sys/fs/cgroup/onrush.slice/memory.max", "2147483648\n");
    trees
        .0
        .file("sys/fs/cgroup/onrush.slice/memory.current", "1073741824\n");
    let f = get(&onrush_doctor::preflight(&h, &fits), "memory").clone();
    assert_eq!(f.status, Status::Bad, "{f:#?}");
    assert!(
        f.observed
            .contains("1.0 GiB available of 16.0 GiB (the cgroup's memory.max leaves 1.0 GiB)"),
        "{}",
        f.observed
    );
}

#[test]
fn preflight_warns_of_bodies_and_of_threads_beyond_the_cores() {
    let trees = good_host();
    let h = host(&trees);
    // 4 VUs keeping up to 512 MiB of body each could take 2 GiB: fits 12 GiB, no word;
    // 64 of them (32 GiB) warn, never refuse (bodies that large are a possibility).
    let bodies = |vus: u64| PlanNeeds {
        vus,
        peak_connections: vus,
        threads: 4,
        body_bytes: vus * (512 << 20),
        ..Default::default()
    };
    let r = onrush_doctor::preflight(&h, &bodies(4));
    assert_eq!(get(&r, "memory").status, Status::Ok, "{r:#?}");
    let f = get(&onrush_doctor::preflight(&h, &bodies(64)), "memory").clone();
    assert_eq!(f.status, Status::Warn, "{f:#?}");
    assert!(
        f.detail.contains("32.0 GiB (VUs × body_limit)"),
        "{}",
        f.detail
    );

    let threads = |threads: usize| PlanNeeds {
        threads,
        ..Default::default()
    };
    let f = get(&onrush_doctor::preflight(&h, &threads(8)), "threads").clone();
    assert_eq!(f.status, Status::Warn, "{f:#?}");
    assert_eq!(f.observed, "8 worker threads, 4 usable CPUs");
    assert_eq!(fix(&f), "-t 4   # one worker per usable core (the default)");
    let f = get(&onrush_doctor::preflight(&h, &threads(100_000)), "threads").clone();
    assert_eq!(f.status, Status::Bad, "{f:#?}");
}
