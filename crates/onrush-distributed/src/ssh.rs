//! `--launch ssh`: the controller starts its agents over OpenSSH, as Tsung does.
//!
//! For each host the launcher runs the system's `ssh` (so `~/.ssh/config`, agents, jump
//! hosts and known-hosts policy all apply as the user set them):
//!
//! 1. a probe: is an `onrush` of this exact build already there? It looks for
//!    `<remote dir>/bin/onrush-<version>-<hash>` (the hash is of this binary's bytes, so two
//!    builds of one version never mix), then for an `onrush` on the remote `PATH` that says
//!    this version; and it reads the remote machine's architecture;
//! 2. when neither is there, a copy of this binary, streamed through the ssh connection's
//!    stdin into a temporary file that is renamed into place once whole (an interrupted
//!    copy never leaves a truncated binary behind under the final name);
//! 3. the agent, `onrush agent --connect <controller> --token-file -`: the token travels on
//!    stdin, never on a command line (where `ps` would show it) nor on the remote disk. The
//!    controller's address is the one the remote sshd saw the connection come from
//!    (`$SSH_CLIENT`), unless the user says otherwise (`--advertise`).
//!
//! Each agent's ssh output goes to a log file; an ssh that exits before its agent joined
//! (a refused key, a missing host) is a launch failure the controller reports by host,
//! instead of waiting out `--agents-wait`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The agents' certificate files: copied to each host, pointed at by the agent's flags.
#[path = "ssh_tls.rs"]
mod tls;

/// One line of a hosts file: `[ssh://][user@]host[:port]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshHost {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// The agent's name: the host, made unique in the list.
    pub name: String,
}

impl SshHost {
    /// `user@host` (or `host`): ssh's destination argument.
    fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

/// Reads a hosts file: one host per line, `#` comments and blank lines skipped. A line
/// may repeat a host to run several agents there.
pub fn read_hosts(path: &Path) -> Result<Vec<SshHost>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the hosts file {}: {e}", path.display()))?;
    parse_hosts(&text).map_err(|(line, e)| format!("{}:{line}: {e}", path.display()))
}

/// Parses hosts text; an error carries its 1-based line.
pub fn parse_hosts(text: &str) -> Result<Vec<SshHost>, (usize, String)> {
    let mut hosts: Vec<SshHost> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut host = parse_host(line).map_err(|e| (i + 1, e))?;
        let seen = hosts.iter().filter(|h| h.host == host.host).count();
        if seen > 0 {
            host.name = format!("{}-{}", host.name, seen + 1);
        }
        hosts.push(host);
    }
    if hosts.is_empty() {
        return Err((1, "no host: write one `[user@]host[:port]` per line".into()));
    }
    Ok(hosts)
}

/// One `[ssh://][user@]host[:port]`; an IPv6 address with a port is written `[::1]:22`.
pub fn parse_host(spec: &str) -> Result<SshHost, String> {
    let rest = spec.strip_prefix("ssh://").unwrap_or(spec);
    let rest = rest.trim_end_matches('/');
    let (user, rest) = match rest.rsplit_once('@') {
        Some((u, r)) if !u.is_empty() => (Some(u.to_string()), r),
        Some(_) => return Err(format!("{spec:?}: the user before '@' is empty")),
        None => (None, rest),
    };
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let (h, after) = inner
            .split_once(']')
            .ok_or_else(|| format!("{spec:?}: '[' without ']'"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(parse_port(spec, p)?),
            None if after.is_empty() => None,
            None => return Err(format!("{spec:?}: unexpected {after:?} after ']'")),
        };
        (h.to_string(), port)
    } else if rest.matches(':').count() == 1 {
        let (h, p) = rest.split_once(':').unwrap_or((rest, ""));
        (h.to_string(), Some(parse_port(spec, p)?))
    } else {
        (rest.to_string(), None)
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || ".-_:%".contains(c);
    if host.is_empty() || !host.chars().all(valid) {
        return Err(format!(
            "{spec:?}: not a host name or address (write [user@]host[:port])"
        ));
    }
    if let Some(u) = &user {
        if !u
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(format!("{spec:?}: not a user name: {u:?}"));
        }
    }
    let name = host.replace([':', '%'], "_");
    Ok(SshHost {
        user,
        host,
        port,
        name,
    })
}

fn parse_port(spec: &str, p: &str) -> Result<u16, String> {
    p.parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("{spec:?}: {p:?} is not a port"))
}

/// How to reach the hosts and what to start there.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// The `ssh` program.
    pub ssh: PathBuf,
    /// `-o KEY=VALUE` options for every ssh (IdentityFile, UserKnownHostsFile, ...).
    pub ssh_options: Vec<String>,
    /// Where binaries and agents' work dirs go on the remote side; relative to the remote
    /// home unless absolute.
    pub remote_dir: String,
    /// The binary to copy (this one).
    pub local_binary: PathBuf,
    pub version: String,
    /// The controller's port; its host is `$SSH_CLIENT`'s address unless `advertise` is set.
    pub controller_port: u16,
    pub advertise: Option<String>,
    pub token: String,
    /// `-t` for each agent; `None`: one worker per core of that machine.
    pub threads: Option<usize>,
    /// The run's name: remote work dirs are `<remote dir>/runs/<run>/<agent>`.
    pub run: String,
    /// One log file per agent goes here: `<name>.ssh.log`.
    pub log_dir: PathBuf,
    /// Seconds ssh may take to connect.
    pub connect_timeout: u64,
    /// The agents' TLS settings, with local paths: the files are copied to each host and the
    /// flags point at the copies.
    pub tls: crate::tls::AgentTls,
}

/// The agents started over ssh; dropping it does not stop them (their own loss detection
/// does when the controller goes).
pub struct Launched {
    agents: Vec<(String, Child)>,
    failures: Arc<Mutex<Vec<String>>>,
}

impl Launched {
    /// Hosts whose ssh ended with an error before the run ended, with what it said.
    pub fn failures(&self) -> Vec<String> {
        self.failures.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// Polls the ssh processes; a non-zero exit is recorded as a failure of that host.
    pub fn poll(&mut self, log_dir: &Path) -> bool {
        let mut failed = false;
        for (name, child) in &mut self.agents {
            if let Ok(Some(status)) = child.try_wait() {
                if !status.success() {
                    let said = last_line(&log_dir.join(format!("{name}.ssh.log")));
                    let msg = format!("{name}: ssh exited with {status}: {said}");
                    if let Ok(mut f) = self.failures.lock() {
                        if !f.contains(&msg) {
                            f.push(msg);
                        }
                    }
                    failed = true;
                }
            }
        }
        failed
    }

    /// Waits up to `grace` for every agent's ssh to end (agents exit once their results are
    /// handed over), then ends the rest.
    pub fn finish(mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        for (_, child) in &mut self.agents {
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() >= deadline => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        }
    }
}

/// The `error:` lines of the agents' ssh logs in `log_dir`, each prefixed by its agent's
/// name: what a failed run shows so that nobody has to open the logs to learn why.
pub fn agents_errors(log_dir: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let Ok(entries) = std::fs::read_dir(log_dir) else {
        return said;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        let Some(name) = file.strip_suffix(".ssh.log") else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().filter(|l| l.starts_with("error:")) {
            said.push(format!("agent {name} said: {line}"));
        }
    }
    said
}

fn last_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "(nothing on its stderr)".into())
}

/// What the probe found on one host.
#[derive(Debug)]
enum Found {
    /// A binary of this build, at this remote path.
    Have(String),
    /// None; the remote machine's `uname -m`.
    Need(String),
}

/// Makes sure every host has this build and starts one agent per host line. Probes and
/// copies run in parallel, one thread per host; any failure names its host.
pub fn launch(hosts: &[SshHost], options: &LaunchOptions) -> Result<Launched, String> {
    std::fs::create_dir_all(&options.log_dir)
        .map_err(|e| format!("cannot create {}: {e}", options.log_dir.display()))?;
    let hash = binary_hash(&options.local_binary)?;
    let remote_bin = format!(
        "{}/bin/onrush-{}-{}",
        options.remote_dir, options.version, hash
    );
    // Distinct destinations only: two agents on one host share one binary.
    let mut distinct: Vec<&SshHost> = Vec::new();
    for h in hosts {
        if !distinct
            .iter()
            .any(|d| d.destination() == h.destination() && d.port == h.port)
        {
            distinct.push(h);
        }
    }
    let results: Vec<Result<(String, String), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = distinct
            .iter()
            .map(|h| {
                let remote_bin = remote_bin.clone();
                s.spawn(move || {
                    let bin = provision(h, options, &remote_bin)?;
                    tls::copy_files(h, options)?;
                    Ok((h.destination() + &format!(":{:?}", h.port), bin))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("the launcher thread failed".into()))
            })
            .collect()
    });
    let mut binaries = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(pair) => binaries.push(pair),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    let mut agents = Vec::new();
    for h in hosts {
        let key = h.destination() + &format!(":{:?}", h.port);
        let bin = binaries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, b)| b.clone())
            .ok_or_else(|| format!("{}: no binary was provisioned", h.name))?;
        agents.push((h.name.clone(), start_agent(h, options, &bin)?));
    }
    Ok(Launched {
        agents,
        failures: Arc::new(Mutex::new(Vec::new())),
    })
}

/// The remote path of a binary of this build on `host`, copying it there if needed.
fn provision(host: &SshHost, options: &LaunchOptions, remote_bin: &str) -> Result<String, String> {
    let want = format!("onrush {}", options.version);
    let probe = format!(
        "b={bin}; if [ -x \"$b\" ]; then echo \"have $b\"; \
         elif command -v onrush >/dev/null 2>&1 && [ \"$(onrush --version 2>/dev/null)\" = {want} ]; \
         then echo \"have $(command -v onrush)\"; else echo \"need $(uname -m)\"; fi",
        bin = shell_quote(remote_bin),
        want = shell_quote(&want),
    );
    let out = ssh_command(host, options, &probe)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: cannot run {}: {e}", host.name, options.ssh.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{}: ssh {} failed ({}): {}",
            host.name,
            host.destination(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    match parse_probe(&String::from_utf8_lossy(&out.stdout)) {
        Some(Found::Have(path)) => Ok(path),
        Some(Found::Need(arch)) => {
            if arch != std::env::consts::ARCH {
                return Err(format!(
                    "{}: the remote machine is {arch} and this onrush is built for {}: install \
                     onrush {} there (on its PATH) and launch again",
                    host.name,
                    std::env::consts::ARCH,
                    options.version
                ));
            }
            copy_binary(host, options, remote_bin)?;
            Ok(remote_bin.to_string())
        }
        None => Err(format!(
            "{}: unexpected answer to the probe: {:?}",
            host.name,
            String::from_utf8_lossy(&out.stdout).trim()
        )),
    }
}

fn parse_probe(stdout: &str) -> Option<Found> {
    // The last line: a login banner or a shell rc file may print before it.
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    if let Some(path) = line.strip_prefix("have ") {
        Some(Found::Have(path.to_string()))
    } else {
        line.strip_prefix("need ")
            .map(|arch| Found::Need(arch.to_string()))
    }
}

fn copy_binary(host: &SshHost, options: &LaunchOptions, remote_bin: &str) -> Result<(), String> {
    let script = format!(
        "set -e; b={bin}; mkdir -p \"$(dirname \"$b\")\"; t=\"$b.part.$$\"; \
         cat > \"$t\"; chmod 755 \"$t\"; mv \"$t\" \"$b\"; \"$b\" --version",
        bin = shell_quote(remote_bin)
    );
    let mut child = ssh_command(host, options, &script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: cannot run {}: {e}", host.name, options.ssh.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut file = std::fs::File::open(&options.local_binary)
        .map_err(|e| format!("cannot read {}: {e}", options.local_binary.display()))?;
    let copied = std::io::copy(&mut file, &mut stdin);
    drop(stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{}: {e}", host.name))?;
    if copied.is_err() || !out.status.success() {
        return Err(format!(
            "{}: copying onrush to {remote_bin} failed ({}): {}",
            host.name,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let said = String::from_utf8_lossy(&out.stdout);
    if !said.contains(&format!("onrush {}", options.version)) {
        return Err(format!(
            "{}: the copied binary does not run there (it said {:?}; is the remote libc older?)",
            host.name,
            said.trim()
        ));
    }
    Ok(())
}

fn start_agent(host: &SshHost, options: &LaunchOptions, bin: &str) -> Result<Child, String> {
    let connect = match &options.advertise {
        Some(a) => shell_quote(&format!("{a}:{}", options.controller_port)),
        None => format!("\"$c:{}\"", options.controller_port),
    };
    let threads = options
        .threads
        .map(|t| format!(" -t {t}"))
        .unwrap_or_default();
    let work_dir = format!("{}/runs/{}/{}", options.remote_dir, options.run, host.name);
    // $SSH_CLIENT is "<client address> <client port> <server port>"; an IPv6 address needs
    // brackets before a port is appended.
    let script = format!(
        "c=${{SSH_CLIENT%% *}}; case \"$c\" in *:*) c=\"[$c]\";; esac; \
         exec {bin} agent --connect {connect} --token-file - --name {name} --work-dir {dir}{threads}{tls} -q",
        tls = tls::flags(options),
        bin = shell_quote(bin),
        name = shell_quote(&host.name),
        dir = shell_quote(&work_dir),
    );
    let log_path = options.log_dir.join(format!("{}.ssh.log", host.name));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let log2 = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut child = ssh_command(host, options, &script)
        .stdin(Stdio::piped())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        .spawn()
        .map_err(|e| format!("{}: cannot run {}: {e}", host.name, options.ssh.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    // The agent reads one line; closing stdin after it leaves nothing waiting on the pipe.
    stdin
        .write_all(format!("{}\n", options.token).as_bytes())
        .map_err(|e| format!("{}: cannot hand the token over: {e}", host.name))?;
    drop(stdin);
    Ok(child)
}

fn ssh_command(host: &SshHost, options: &LaunchOptions, script: &str) -> Command {
    let mut c = Command::new(&options.ssh);
    // BatchMode: never stop to ask for a password or a host-key confirmation on the
    // controller's terminal; a host that needs one fails with ssh's own message.
    c.args(["-o", "BatchMode=yes"]);
    c.args([
        "-o".to_string(),
        format!("ConnectTimeout={}", options.connect_timeout),
    ]);
    for o in &options.ssh_options {
        c.args(["-o", o]);
    }
    if let Some(p) = host.port {
        c.args(["-p".to_string(), p.to_string()]);
    }
    c.arg(host.destination());
    c.arg("--");
    // The remote login shell runs this string: `sh -c` makes it POSIX whatever that shell is.
    c.arg(format!("sh -c {}", shell_quote(script)));
    c
}

/// Single-quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The first 12 hex digits of the SHA-256 of the binary.
fn binary_hash(path: &Path) -> Result<String, String> {
    let mut f =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(ctx
        .finish()
        .as_ref()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_take_users_ports_ipv6_and_repeats() {
        let hosts = parse_hosts(
            "# load farm\nssh://load@10.0.0.5:2222\n10.0.0.6\n\n[::1]:22\nload@10.0.0.6 # twice\n",
        )
        .unwrap();
        assert_eq!(hosts.len(), 4);
        assert_eq!(hosts[0].user.as_deref(), Some("load"));
        assert_eq!(hosts[0].port, Some(2222));
        assert_eq!(hosts[0].name, "10.0.0.5");
        assert_eq!(hosts[1].destination(), "10.0.0.6");
        assert_eq!(hosts[2].host, "::1");
        assert_eq!(hosts[2].name, "__1");
        assert_eq!(hosts[3].name, "10.0.0.6-2");
    }

    #[test]
    fn bad_host_lines_are_refused_with_their_line() {
        let (line, msg) = parse_hosts("a\nb:0\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(msg.contains("not a port"), "{msg}");
        let (line, msg) = parse_hosts("ok\n\nhost; rm -rf /\n").unwrap_err();
        assert_eq!(line, 3);
        assert!(msg.contains("not a host"), "{msg}");
        assert!(parse_hosts("# nothing\n").is_err());
        assert!(parse_host("@h").is_err());
    }

    #[test]
    fn the_probe_answer_is_read_from_its_last_line() {
        assert!(matches!(
            parse_probe("Welcome!\nhave /opt/onrush\n"),
            Some(Found::Have(p)) if p == "/opt/onrush"
        ));
        assert!(matches!(parse_probe("need x86_64\n"), Some(Found::Need(a)) if a == "x86_64"));
        assert!(parse_probe("sh: 1: syntax error\n").is_none());
    }

    #[test]
    fn agents_errors_are_read_from_their_logs() {
        let dir = std::env::temp_dir().join(format!("onrush-ssh-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("b.ssh.log"), "warning: x\nerror: no plan\n").unwrap();
        std::fs::write(dir.join("a.ssh.log"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "error: not a log\n").unwrap();
        assert_eq!(agents_errors(&dir), ["agent b said: error: no plan"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shell_quoting_survives_quotes() {
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
        let out = Command::new("sh")
            .args([
                "-c",
                &format!("printf %s {}", shell_quote("it's $HOME `x`")),
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's $HOME `x`");
    }
}
