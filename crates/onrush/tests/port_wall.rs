//! The ephemeral-port wall, reproduced and avoided.
//!
//! The host reuses TIME_WAIT ports on loopback (tcp_tw_reuse=2), which hides the wall, so the
//! test makes a network namespace of its own where the kernel does not help: tcp_tw_reuse=0 and
//! 1,000 local ports. There, a client that opens a new connection per request and closes it
//! first (as JMeter does) keeps a TIME_WAIT per connection and runs out of ports: EADDRNOTAVAIL,
//! classified and explained. The same run spread over 8 source addresses, or closing with a
//! reset, completes without one such failure. Needs root and iproute2; says so when it cannot
//! run.

use crate::common;
use common::*;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Namespace(String);

impl Namespace {
    fn create() -> Result<Self, String> {
        let name = format!(
            "onrush-wall-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        );
        let ok = |c: &mut Command| c.status().map(|s| s.success()).unwrap_or(false);
        if !ok(Command::new("ip")
            .args(["netns", "add", &name])
            .stderr(Stdio::null()))
        {
            return Err("cannot create a network namespace (needs root and iproute2)".into());
        }
        let ns = Namespace(name);
        let setup = [
            vec!["ip", "link", "set", "lo", "up"],
            vec!["sysctl", "-q", "-w", "net.ipv4.tcp_tw_reuse=0"],
            vec![
                "sysctl",
                "-q",
                "-w",
                "net.ipv4.ip_local_port_range=40000 40999",
            ],
        ];
        for cmd in setup {
            if !ok(&mut ns.exec(&cmd)) {
                return Err(format!("cannot run {cmd:?} in the namespace"));
            }
        }
        Ok(ns)
    }

    fn exec(&self, cmd: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).args(cmd);
        c
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_in(ns: &Namespace, dir: &Path, name: &str, http: &str) -> serde_json::Value {
    // 3,000 new connections in ~2 s: three times what 1,000 ports without reuse allow.
    let plan = format!(
        "target: http://127.0.0.1:18080\nhttp: {{ connections: per_request, timeout: 5s{http} }}\nscenarios:\n  - name: churn\n    load: {{ vus: 4, shared_iterations: 3000 }}\n    steps: [ {{ get: / }} ]\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, plan).unwrap();
    let out = dir.join(name);
    let output = ns
        .exec(&[
            env!("CARGO_BIN_EXE_onrush"),
            "run",
            path.to_str().unwrap(),
            "-q",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 4)),
        "{}",
        text(&output)
    );
    summary(&out)
}

#[test]
fn new_connection_per_request_hits_the_port_wall_and_onrush_avoids_it() {
    let ns = match Namespace::create() {
        Ok(ns) => ns,
        Err(why) => {
            eprintln!("SKIPPED port-wall test: {why}");
            return;
        }
    };
    let _server = Killed(
        ns.exec(&[
            env!("CARGO_BIN_EXE_onrush"),
            "serve",
            "--addr",
            "127.0.0.1:18080",
            "--threads",
            "1",
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let dir = temp_dir("port-wall");

    // First, as it leaves no TIME_WAIT behind: closing with a reset never runs out of ports.
    let reset = run_in(&ns, &dir, "reset", ", close: reset");
    assert_eq!(u64_at(&reset, "/totals/failures"), 0, "{reset:#}");
    assert_eq!(u64_at(&reset, "/totals/connections_opened"), 3000);

    let wall = run_in(&ns, &dir, "wall", "");
    let refused = u64_at(&wall, "/totals/failures_by_class/addr_not_available");
    assert!(
        refused >= 1000,
        "the wall: {refused} EADDRNOTAVAIL of 3000\n{wall:#}"
    );
    assert_eq!(u64_at(&wall, "/totals/requests"), 3000);
    let causes = wall["generator"]["causes"].as_array().unwrap();
    assert!(
        causes.iter().any(|c| c["cause"] == "ports"),
        "the monitor saw the ports run out: {:#}",
        wall["generator"]
    );

    // The wall's TIME_WAITs still hold every port of 127.0.0.1: other source addresses have
    // ports of their own.
    let spread = run_in(
        &ns,
        &dir,
        "spread",
        ", source_addresses: \"127.0.0.2-127.0.0.9\"",
    );
    assert_eq!(u64_at(&spread, "/totals/failures"), 0, "{spread:#}");
    assert_eq!(u64_at(&spread, "/totals/connections_opened"), 3000);

    eprintln!(
        "port wall: {refused} of 3000 requests failed with EADDRNOTAVAIL on 1,000 ports without reuse; 0 with 8 source addresses; 0 with close: reset"
    );
}
