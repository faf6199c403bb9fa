//! Network namespaces that stand for other machines: each joined to this namespace by a veth
//! pair, at 10.231.K.2 with its peer here at 10.231.K.1, and a default route back here, so a
//! process in one namespace reaches a server here on any of this side's addresses (those of
//! other namespaces' pairs too) as a remote host. Needs root and iproute2; a test that cannot
//! make one says so and skips (see the callers).

use std::process::Command;

/// A namespace of the test's own; removed, with its veth pair, when dropped.
pub struct Namespace {
    pub name: String,
    host_if: String,
    /// K of its addresses: 10.231.K.1 here, 10.231.K.2 there.
    pub k: u32,
}

impl Namespace {
    /// This side's address of the pair.
    pub fn here(&self) -> String {
        format!("10.231.{}.1", self.k)
    }

    /// The namespace's own address.
    pub fn there(&self) -> String {
        format!("10.231.{}.2", self.k)
    }

    /// `program` run inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A namespace `onrush-TAG-PID-K` at 10.231.K.2 whose peer here is 10.231.K.1 (K < 256, and
/// not used by another namespace of this process).
pub fn namespace(tag: &str, k: u32) -> Result<Namespace, String> {
    let pid = std::process::id();
    let name = format!("onrush-{tag}-{pid}-{k}");
    // Interface names are at most 15 bytes.
    let host_if = format!("or{}x{k}h", pid % 10_000);
    let peer_if = format!("or{}x{k}n", pid % 10_000);
    run(&["ip", "netns", "add", &name])?;
    let ns = Namespace {
        name: name.clone(),
        host_if: host_if.clone(),
        k,
    };
    let here = format!("{}/24", ns.here());
    let there = format!("{}/24", ns.there());
    run(&[
        "ip", "link", "add", &host_if, "type", "veth", "peer", "name", &peer_if,
    ])?;
    run(&["ip", "link", "set", &peer_if, "netns", &name])?;
    run(&["ip", "addr", "add", &here, "dev", &host_if])?;
    run(&["ip", "link", "set", &host_if, "up"])?;
    let gateway = ns.here();
    for cmd in [
        vec!["ip", "addr", "add", &there, "dev", &peer_if],
        vec!["ip", "link", "set", &peer_if, "up"],
        vec!["ip", "link", "set", "lo", "up"],
        vec!["ip", "route", "add", "default", "via", &gateway],
    ] {
        let mut full = vec!["ip", "netns", "exec", &name];
        full.extend(cmd);
        run(&full)?;
    }
    Ok(ns)
}
