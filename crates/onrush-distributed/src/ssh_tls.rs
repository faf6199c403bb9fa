//! `--launch ssh` and the agents' TLS files (`--agent-tls-*`): each file is copied to every
//! host beside the run's work dirs, and the agent's `--tls-*` flags point at the copies.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use super::{shell_quote, ssh_command, LaunchOptions, SshHost};

/// The agents' TLS files: (flag of `onrush agent`, local file, name of the remote copy).
fn files(tls: &crate::tls::AgentTls) -> Vec<(&'static str, &Path, &'static str)> {
    let mut files = Vec::new();
    if let Some(p) = &tls.ca {
        files.push(("--tls-ca", p.as_path(), "ca.pem"));
    }
    if let Some(p) = &tls.cert {
        files.push(("--tls-cert", p.as_path(), "agent.pem"));
    }
    if let Some(p) = &tls.key {
        files.push(("--tls-key", p.as_path(), "agent.key"));
    }
    files
}

/// Where a run's TLS files go on a host (shared by its agents there).
fn remote_dir(options: &LaunchOptions) -> String {
    format!("{}/runs/{}/tls", options.remote_dir, options.run)
}

/// The `onrush agent` flags of the TLS settings, pointing at the remote copies.
pub(super) fn flags(options: &LaunchOptions) -> String {
    let dir = remote_dir(options);
    let mut flags = String::new();
    for (flag, _, name) in files(&options.tls) {
        flags += &format!(" {flag} {}", shell_quote(&format!("{dir}/{name}")));
    }
    if let Some(n) = &options.tls.server_name {
        flags += &format!(" --tls-server-name {}", shell_quote(n));
    }
    flags
}

/// Copies the agents' TLS files to `host`, readable by the login user only (the key is a
/// secret: like the token, it travels over ssh's stdin, never on a command line).
pub(super) fn copy_files(host: &SshHost, options: &LaunchOptions) -> Result<(), String> {
    for (flag, local, name) in files(&options.tls) {
        let data = std::fs::read(local)
            .map_err(|e| format!("{flag} {}: cannot read it: {e}", local.display()))?;
        let script = format!(
            "set -e; umask 077; d={dir}; mkdir -p \"$d\"; t=\"$d/{name}.part.$$\"; \
             cat > \"$t\"; mv \"$t\" \"$d/{name}\"",
            dir = shell_quote(&remote_dir(options)),
        );
        let mut child = ssh_command(host, options, &script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: cannot run {}: {e}", host.name, options.ssh.display()))?;
        let mut stdin = child.stdin.take().expect("piped");
        let written = stdin.write_all(&data);
        drop(stdin);
        let out = child
            .wait_with_output()
            .map_err(|e| format!("{}: {e}", host.name))?;
        if written.is_err() || !out.status.success() {
            return Err(format!(
                "{}: copying {} ({flag}) failed ({}): {}",
                host.name,
                local.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_point_at_the_remote_copies() {
        let mut o = LaunchOptions {
            ssh: "ssh".into(),
            ssh_options: vec![],
            remote_dir: ".onrush".into(),
            local_binary: "/bin/onrush".into(),
            version: "0.1.0".into(),
            controller_port: 7878,
            advertise: None,
            token: "t".into(),
            threads: None,
            run: "checkout-1".into(),
            log_dir: "/tmp".into(),
            connect_timeout: 10,
            tls: Default::default(),
        };
        assert_eq!(flags(&o), "");
        o.tls = crate::tls::AgentTls {
            ca: Some("/etc/farm/ca.pem".into()),
            server_name: Some("ctl.example".into()),
            cert: Some("/etc/farm/agent.pem".into()),
            key: Some("/etc/farm/agent.key".into()),
        };
        assert_eq!(
            flags(&o),
            " --tls-ca '.onrush/runs/checkout-1/tls/ca.pem' --tls-cert \
             '.onrush/runs/checkout-1/tls/agent.pem' --tls-key \
             '.onrush/runs/checkout-1/tls/agent.key' --tls-server-name 'ctl.example'"
        );
    }
}
