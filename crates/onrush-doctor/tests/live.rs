//! A smoke test on the machine running the tests: every check produces a finding, the limits
//! match what the kernel says, and printing works. Statuses depend on the machine, so they are
//! not asserted.

use std::time::{Duration, Instant};

use onrush_doctor::{diagnose, print_text, Host, PlanNeeds, Status, CHECKS};

#[test]
fn live_host() {
    let started = Instant::now();
    let r = diagnose(&Host::live(), None);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(200),
        "the CPU sample waits 200 ms"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    let names: Vec<&str> = r.findings.iter().map(|f| f.check).collect();
    assert_eq!(names, CHECKS);
    for f in &r.findings {
        assert!(!f.observed.is_empty() && !f.detail.is_empty(), "{f:#?}");
        if f.status != Status::Ok && !f.observed.starts_with("cannot ") {
            assert!(f.fix.is_some(), "a problem without a fix: {f:#?}");
        }
    }

    // nofile: what getrlimit says.
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to a local struct.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) }, 0);
    let nofile = &r.get("nofile").unwrap().observed;
    if l.rlim_cur != libc::RLIM_INFINITY {
        let soft = l.rlim_cur.to_string();
        assert!(
            nofile
                .replace(',', "")
                .starts_with(&format!("soft {soft} hard")),
            "{nofile} vs {soft}"
        );
    }

    // The port range, when this is Linux.
    if let Ok(range) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range") {
        let mut it = range.split_whitespace();
        let (lo, hi) = (it.next().unwrap(), it.next().unwrap());
        let ports = &r.get("ephemeral_ports").unwrap().observed;
        assert!(ports.contains(&format!("({lo}-{hi})")), "{ports}");
    }

    // This test process is busy right now, but never listed.
    let me = format!("(pid {})", std::process::id());
    assert!(!r.get("busy_processes").unwrap().observed.contains(&me));

    let mut out = Vec::new();
    print_text(&r, &mut out);
    let text = String::from_utf8(out).unwrap();
    println!("{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with(['✓', '!', '✗']))
            .count(),
        CHECKS.len()
    );
}

#[test]
fn live_host_with_a_plan() {
    let needs = PlanNeeds {
        peak_connections: 1_000,
        new_connections_per_s: 100.0,
        targets: vec!["127.0.0.1:8080".parse().unwrap()],
        source_addresses: 0,
        close_reset: false,
        ..Default::default()
    };
    let host = Host::live().with_sample_interval(Duration::from_millis(50));
    let r = diagnose(&host, Some(&needs));
    assert_eq!(r.findings.len(), CHECKS.len());
    let json = serde_json::to_string(&r).unwrap();
    assert!(
        json.starts_with("{\"findings\":[{\"check\":\"cpus\""),
        "{json}"
    );
}
