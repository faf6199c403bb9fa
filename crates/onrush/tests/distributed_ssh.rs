//! `onrush run --agents N --launch ssh`: the controller starts its agents over OpenSSH.
//!
//! The load machine is a network namespace of the test's own, joined to this one by a veth
//! pair, running Debian's OpenSSH server (`sshd`, from tests/install-openssh.sh of
//! onrush-distributed) with a host key and an authorized key made for the test. The agents
//! reach the controller and the target (a Python server, the witness) across the veth, as
//! from another machine. The remote side has no onrush: the first launch copies this binary
//! there, the second finds it. Needs sshd (under CI=true its absence fails the test), and root
//! and iproute2 for the namespace (without them the test is skipped with a message).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::netns::{namespace, Namespace};
use crate::common::{onrush, scenario, summary, temp_dir, u64_at, RogueServer};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen runs");
    assert!(ok.success());
}

/// sshd in the namespace, listening on 10.231.K.2:2222, taking `client.pub`.
fn start_sshd(ns: &Namespace, k: u32, dir: &Path) -> Killed {
    keygen(&dir.join("host_key"));
    keygen(&dir.join("client"));
    std::fs::copy(dir.join("client.pub"), dir.join("authorized_keys")).unwrap();
    let config = format!(
        "Port 2222\nListenAddress 10.231.{k}.2\nHostKey {d}/host_key\n\
         AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n\
         PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
         StrictModes no\nPidFile {d}/sshd.pid\nLogLevel VERBOSE\n",
        d = dir.display()
    );
    std::fs::write(dir.join("sshd_config"), config).unwrap();
    // sshd's privilege-separation directory.
    std::fs::create_dir_all("/run/sshd").unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.name, "/usr/sbin/sshd", "-D", "-E"])
        .arg(dir.join("sshd.log"))
        .arg("-f")
        .arg(dir.join("sshd_config"))
        .stderr(Stdio::null())
        .spawn()
        .expect("sshd starts");
    // Until it accepts connections.
    let deadline = Instant::now() + Duration::from_secs(10);
    let addr: std::net::SocketAddr = format!("10.231.{k}.2:2222").parse().unwrap();
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "sshd did not start listening");
        std::thread::sleep(Duration::from_millis(50));
    }
    Killed(child)
}

fn can_run() -> Result<(), String> {
    if !Path::new("/usr/sbin/sshd").exists() {
        return Err(
            "no /usr/sbin/sshd (crates/onrush-distributed/tests/install-openssh.sh)".into(),
        );
    }
    Ok(())
}

fn skip_or_fail(why: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("the --launch ssh test cannot run under CI: {why}");
    }
    eprintln!("SKIPPED: the --launch ssh test: {why}");
}

/// What each agent's ssh said (`<out>/agents/*.ssh.log`): an agent that dies before the
/// start says why only there.
fn ssh_logs(out: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(out.join("agents"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = entry.path();
        if path.to_string_lossy().ends_with(".ssh.log") {
            let said = std::fs::read_to_string(&path).unwrap_or_default();
            text.push_str(&format!("== {}\n{said}\n", path.display()));
        }
    }
    text
}

fn controller(
    plan: &Path,
    out: &Path,
    k: u32,
    dir: &Path,
    remote: &Path,
    key: &str,
    extra: &[String],
) -> std::process::Output {
    let agents = 2;
    onrush()
        .args([
            "run",
            plan.to_str().unwrap(),
            "--agents",
            &agents.to_string(),
        ])
        .args(["--launch", "ssh", "--hosts"])
        .arg(dir.join("hosts.txt"))
        .args([
            "--listen",
            &format!("10.231.{k}.1:0"),
            "--agents-wait",
            "60",
        ])
        .arg("--out")
        .arg(out)
        .args(["--remote-dir", remote.to_str().unwrap()])
        .args([
            "--ssh-option",
            &format!("IdentityFile={}/{key}", dir.display()),
        ])
        .args([
            "--ssh-option",
            &format!("UserKnownHostsFile={}/known_hosts", dir.display()),
        ])
        .args(["--ssh-option", "StrictHostKeyChecking=accept-new"])
        .args(["-t", "1"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("the controller runs")
}

#[test]
fn launch_ssh_copies_onrush_to_a_host_that_lacks_it_and_runs_the_plan_there() {
    if let Err(why) = can_run() {
        return skip_or_fail(&why);
    }
    let k = 100 + std::process::id() % 150;
    let ns = match namespace("ssh", k) {
        Ok(ns) => ns,
        // As the port-wall test: a machine that cannot make namespaces (no root, no
        // iproute2, a sandbox that forbids them) skips, saying so.
        Err(why) => {
            eprintln!("SKIPPED: the --launch ssh test: cannot make a network namespace: {why}");
            return;
        }
    };
    let dir = temp_dir(&format!("dist-ssh-{}", std::process::id()));
    let _sshd = start_sshd(&ns, k, &dir);
    // The witness listens on this side of the veth: the agents reach it as a remote target.
    let server = RogueServer::start_on(&format!("10.231.{k}.1"));
    std::fs::write(
        dir.join("hosts.txt"),
        format!("# the load farm\nroot@10.231.{k}.2:2222\n"),
    )
    .unwrap();
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nscenarios:\n  - name: s\n    load: {{ vus: 4, shared_iterations: 301 }}\n    steps: [ {{ get: / }} ]\n",
            server.url("")
        ),
    )
    .unwrap();
    let remote: PathBuf = dir.join("remote");

    let out1 = dir.join("r1");
    let run = controller(&plan, &out1, k, &dir, &remote, "client", &[]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        run.status.code(),
        Some(0),
        "stderr:\n{stderr}\nstdout:\n{}\nagents' logs:\n{}",
        String::from_utf8_lossy(&run.stdout),
        ssh_logs(&out1)
    );
    assert!(stderr.contains("launching 2 agents over ssh"), "{stderr}");
    // Exactly the plan's iterations, on the server's own count and in the merged summary.
    assert_eq!(server.received(), 301);
    let s = summary(&out1);
    assert_eq!(u64_at(scenario(&s, "s"), "/requests"), 301, "{s}");
    let agents = s
        .pointer("/distributed/agents")
        .unwrap()
        .as_array()
        .unwrap();
    assert_eq!(agents.len(), 2);
    for a in agents {
        assert_eq!(a["results_received"], true, "{a}");
        // They dialed from the namespace, across the veth.
        assert!(
            a["address"]
                .as_str()
                .unwrap()
                .starts_with(&format!("10.231.{k}.2:")),
            "{a}"
        );
    }
    // The binary was copied whole, under a name that says its version and build.
    let bins: Vec<PathBuf> = std::fs::read_dir(remote.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(bins.len(), 1, "{bins:?}");
    let name = bins[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("onrush-{}-", env!("CARGO_PKG_VERSION"))),
        "{name}"
    );
    let ours = std::fs::read(env!("CARGO_BIN_EXE_onrush")).unwrap();
    assert!(
        std::fs::read(&bins[0]).unwrap() == ours,
        "the copy differs from this binary"
    );
    let copied_at = std::fs::metadata(&bins[0]).unwrap().modified().unwrap();
    // The token never reached the remote disk.
    let token = std::fs::read_to_string(out1.join("agent-token")).unwrap();
    let leaked = Command::new("grep")
        .args(["-rl", token.trim()])
        .arg(&remote)
        .output()
        .unwrap();
    assert!(
        leaked.stdout.is_empty(),
        "the token is on the remote disk: {}",
        String::from_utf8_lossy(&leaked.stdout)
    );

    // A second launch finds the binary there and does not copy it again. It runs with the
    // operator's own CA and mutual TLS: the agents' CA, certificate and key are copied to the
    // host and handed to each agent, which checks the controller at the address it dials (the
    // controller admits only agents with a certificate of its CA, so a success says they did).
    let out2 = dir.join("r2");
    let tls = mtls_flags(&dir, &format!("10.231.{k}.1"));
    let run = controller(&plan, &out2, k, &dir, &remote, "client", &tls);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}\nagents' logs:\n{}",
        String::from_utf8_lossy(&run.stderr),
        ssh_logs(&out2)
    );
    assert_eq!(server.received(), 602);
    assert_eq!(
        std::fs::metadata(&bins[0]).unwrap().modified().unwrap(),
        copied_at
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let key = remote.join("runs/r2/tls/agent.key");
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", key.display());
        assert_eq!(
            std::fs::read(&key).unwrap(),
            std::fs::read(dir.join("agent.key")).unwrap()
        );
    }

    // A key the host refuses: the launch fails at once, naming the host, and no load goes.
    keygen(&dir.join("stranger"));
    let started = Instant::now();
    let run = controller(&plan, &dir.join("r3"), k, &dir, &remote, "stranger", &[]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_ne!(run.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("10.231.{k}.2")) && stderr.contains("Permission denied"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.received(), 602);
    // The copied binary is ~100 MB: leave nothing behind.
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CA, a controller certificate for `ip` and an agent certificate, written to `dir`; the
/// controller's flags for mutual TLS with agents launched over ssh.
fn mtls_flags(dir: &Path, ip: &str) -> Vec<String> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = p.self_signed(&ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    for (tag, name) in [("controller", ip), ("agent", "agent")] {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        std::fs::write(dir.join(format!("{tag}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{tag}.key")), key.serialize_pem()).unwrap();
    }
    let f = |name: &str| dir.join(name).display().to_string();
    [
        ("--tls-cert", "controller.pem"),
        ("--tls-key", "controller.key"),
        ("--tls-client-ca", "ca.pem"),
        ("--agent-tls-ca", "ca.pem"),
        ("--agent-tls-cert", "agent.pem"),
        ("--agent-tls-key", "agent.key"),
    ]
    .into_iter()
    .flat_map(|(flag, name)| [flag.to_string(), f(name)])
    .collect()
}
