//! The control connection with a CA of the operator's own and mutual TLS: certificates made
//! by rcgen here, a real controller and real agents. The token stays required throughout.

use std::path::{Path, PathBuf};
use std::process::{Child, Output};

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, KeyUsagePurpose};

use super::{dir, start_agent_with, start_controller};
use crate::common::{onrush, summary, u64_at, write_plan, RogueServer};

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ca {
        cert: p.self_signed(&key).unwrap(),
        key,
    }
}

impl Ca {
    /// Writes the CA's certificate as `<tag>.pem` in `d`.
    fn write(&self, d: &Path, tag: &str) -> PathBuf {
        let p = d.join(format!("{tag}.pem"));
        std::fs::write(&p, self.cert.pem()).unwrap();
        p
    }

    /// A certificate for `names` signed by this CA, written as `<tag>.pem` and `<tag>.key`.
    fn issue(&self, d: &Path, tag: &str, names: &[&str]) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        let (c, k) = (d.join(format!("{tag}.pem")), d.join(format!("{tag}.key")));
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (c, k)
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn finished(agent: Child) -> (Output, String) {
    let out = agent.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, err)
}

fn plan(d: &Path, target: &str) -> PathBuf {
    write_plan(
        d,
        &format!(
            "target: {target}\nscenarios:\n  - name: s\n    load: {{ vus: 3, iterations: 5 }}\n    steps:\n      - get: /once/x\n"
        ),
    )
}

#[test]
fn own_ca_and_mutual_tls_run_two_agents_with_exact_counts() {
    let server = RogueServer::start();
    let d = dir("tls-mtls");
    let out = d.join("results");
    let ca = ca("load farm CA");
    let ca_file = ca.write(&d, "ca");
    let (cert, key) = ca.issue(&d, "controller", &["127.0.0.1", "controller.test"]);
    let plan = plan(&d, &server.url(""));
    let controller = start_controller(
        &plan,
        &out,
        2,
        &[
            "-q",
            "--tls-cert",
            s(&cert),
            "--tls-key",
            s(&key),
            "--tls-client-ca",
            s(&ca_file),
        ],
    );
    let token = out.join("agent-token");
    let work = d.join("agents");
    // One agent checks the address it dialed (an IP address the certificate holds), the other
    // a DNS name given with --tls-server-name.
    let agents: Vec<Child> = [("m1", None), ("m2", Some("controller.test"))]
        .into_iter()
        .map(|(name, server_name)| {
            let (c, k) = ca.issue(&d, name, &[name]);
            let mut extra = vec![
                "--tls-ca".to_string(),
                s(&ca_file).into(),
                "--tls-cert".into(),
                s(&c).into(),
                "--tls-key".into(),
                s(&k).into(),
            ];
            if let Some(n) = server_name {
                extra.extend(["--tls-server-name".into(), n.into()]);
            }
            start_agent_with(controller.port, &token, name, 1, &work, &extra)
        })
        .collect();
    let (code, stdout, stderr) = controller.finish();
    for a in agents {
        let (o, err) = finished(a);
        assert!(o.status.success(), "an agent failed: {err}");
    }
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let sum = summary(&out);
    assert_eq!(u64_at(&sum, "/totals/requests"), 15, "{sum:#}");
    assert_eq!(u64_at(&sum, "/totals/failures"), 0, "{sum:#}");
    assert_eq!(server.received(), 15);
    for name in ["m1", "m2"] {
        let own = summary(&out.join("agents").join(name));
        assert!(u64_at(&own, "/totals/requests") > 0, "{name} ran nothing");
    }
}

#[test]
fn an_agent_with_another_ca_refuses_the_controller_before_any_load() {
    let d = dir("tls-otherca");
    let out = d.join("results");
    let (ours, theirs) = (ca("ours"), ca("theirs"));
    let (cert, key) = ours.issue(&d, "controller", &["127.0.0.1"]);
    let theirs_file = theirs.write(&d, "theirs");
    let plan = plan(&d, "http://127.0.0.1:9");
    // A missing CA file is a usage error naming the flag and the file, before any dialing.
    let some_token = d.join("some-token");
    std::fs::write(&some_token, "0123456789abcdef0123456789abcdef\n").unwrap();
    let missing = onrush()
        .args([
            "agent",
            "--connect",
            "127.0.0.1:9",
            "--token-file",
            s(&some_token),
        ])
        .args(["--tls-ca", s(&d.join("nowhere.pem"))])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(
        said.contains("--tls-ca") && said.contains("nowhere.pem"),
        "{said}"
    );
    let controller = start_controller(
        &plan,
        &out,
        1,
        &[
            "--agents-wait",
            "4",
            "--tls-cert",
            s(&cert),
            "--tls-key",
            s(&key),
        ],
    );
    let token = out.join("agent-token");
    let agent = start_agent_with(
        controller.port,
        &token,
        "wary",
        1,
        &d.join("w"),
        &["--tls-ca".into(), s(&theirs_file).into()],
    );
    let (o, err) = finished(agent);
    assert!(!o.status.success());
    assert!(err.contains("certificate verification failed"), "{err}");
    assert!(
        err.contains("not signed by the CA in --tls-ca") && err.contains("theirs.pem"),
        "{err}"
    );
    assert!(err.contains("no load was generated"), "{err}");
    let (code, _, stderr) = controller.finish();
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("agent from 127.0.0.1:"), "{stderr}");
    assert!(!d.join("w").join("wary").join("results").exists());
}

#[test]
fn a_controller_with_a_client_ca_refuses_agents_without_its_certificate_and_runs_with_a_good_one() {
    let server = RogueServer::start();
    let d = dir("tls-clientca");
    let out = d.join("results");
    let (ours, theirs) = (ca("ours"), ca("theirs"));
    let ca_file = ours.write(&d, "ca");
    let plan = plan(&d, &server.url(""));
    // The controller keeps its generated certificate: mutual TLS does not need the other.
    let controller = start_controller(
        &plan,
        &out,
        1,
        &["-q", "--tls-client-ca", s(&ca_file), "--agents-wait", "30"],
    );
    let token = out.join("agent-token");
    let work = d.join("agents");
    // Without a client certificate.
    let (o, err) = finished(start_agent_with(
        controller.port,
        &token,
        "anonymous",
        1,
        &work,
        &[],
    ));
    assert!(!o.status.success());
    assert!(err.contains("requires a client certificate"), "{err}");
    // With one from another CA.
    let (c, k) = theirs.issue(&d, "stranger", &["stranger"]);
    let (o, err) = finished(start_agent_with(
        controller.port,
        &token,
        "stranger",
        1,
        &work,
        &[
            "--tls-cert".into(),
            s(&c).into(),
            "--tls-key".into(),
            s(&k).into(),
        ],
    ));
    assert!(!o.status.success());
    assert!(err.contains("refused this agent's certificate"), "{err}");
    // The controller waited on, and takes a good agent.
    let (c, k) = ours.issue(&d, "good", &["good"]);
    let good = start_agent_with(
        controller.port,
        &token,
        "good",
        1,
        &work,
        &[
            "--tls-cert".into(),
            s(&c).into(),
            "--tls-key".into(),
            s(&k).into(),
        ],
    );
    let (code, stdout, stderr) = controller.finish();
    let (o, err) = finished(good);
    assert!(o.status.success(), "{err}");
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    // -q keeps progress quiet, not refusals: each names the address and the reason.
    let refusals: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("agent from 127.0.0.1:"))
        .collect();
    assert_eq!(refusals.len(), 2, "{stderr}");
    assert!(
        refusals[0].contains("presented no client certificate") && refusals[0].contains("ca.pem"),
        "{stderr}"
    );
    assert!(
        refusals[1].contains("not signed by the CA in --tls-client-ca"),
        "{stderr}"
    );
    assert_eq!(u64_at(&summary(&out), "/totals/requests"), 15);
    assert_eq!(server.received(), 15);
}
