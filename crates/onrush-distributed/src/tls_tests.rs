//! The configurations built from files, their errors, and what each side says when a
//! handshake (run in memory, no sockets) fails.

use super::*;
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, KeyUsagePurpose};

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

/// A leaf for `names` signed by `ca`, valid now unless `expired`.
fn leaf(ca: &Ca, names: &[&str], expired: bool) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut p =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    if expired {
        p.not_before = rcgen::date_time_ymd(2001, 1, 1);
        p.not_after = rcgen::date_time_ymd(2002, 1, 1);
    }
    let cert = p.signed_by(&key, &ca.cert, &ca.key).unwrap();
    (cert.pem(), key.serialize_pem())
}

struct Files(tempdir::Dir);

mod tempdir {
    /// A directory removed when dropped.
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Files {
    fn new(test: &str) -> Files {
        let dir = std::env::temp_dir().join(format!("onrush-tls-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Files(tempdir::Dir(dir))
    }
    fn put(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0 .0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

/// Runs a handshake in memory; then the client writes, as the agent's hello does, and reads
/// (in TLS 1.3 a server refuses a client certificate after the client thinks it is done).
/// The client's and the server's errors, if any.
fn handshake(
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    name: ServerName<'static>,
) -> (Option<rustls::Error>, Option<rustls::Error>) {
    let mut c = rustls::ClientConnection::new(client, name).unwrap();
    let mut s = rustls::ServerConnection::new(server).unwrap();
    let (mut c_err, mut s_err) = (None, None);
    use std::io::Write;
    c.writer().write_all(b"hello").unwrap();
    for _ in 0..10 {
        let mut buf = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut buf).unwrap();
        }
        if !buf.is_empty() && s_err.is_none() && s.read_tls(&mut &buf[..]).is_ok() {
            if let Err(e) = s.process_new_packets() {
                s_err = Some(e);
            }
        }
        let mut buf = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut buf).unwrap();
        }
        if !buf.is_empty() && c_err.is_none() && c.read_tls(&mut &buf[..]).is_ok() {
            if let Err(e) = c.process_new_packets() {
                c_err = Some(e);
            }
        }
    }
    if c_err.is_none() && s_err.is_none() {
        // No error must mean a finished handshake, not one that stalled.
        assert!(
            !c.is_handshaking() && !s.is_handshaking(),
            "the handshake stalled"
        );
        let mut got = [0u8; 5];
        std::io::Read::read_exact(&mut s.reader(), &mut got).unwrap();
        assert_eq!(&got, b"hello");
    }
    (c_err, s_err)
}

fn ip() -> ServerName<'static> {
    ServerName::try_from("127.0.0.1").unwrap()
}

#[test]
fn own_ca_and_mutual_tls_complete_a_handshake() {
    let f = Files::new("ok");
    let ca = ca("run CA");
    let (cert, key) = leaf(&ca, &["127.0.0.1", "controller.test"], false);
    let (acert, akey) = leaf(&ca, &["agent-1"], false);
    let server = server_config(&ControllerTls {
        cert: Some(f.put("c.pem", &cert)),
        key: Some(f.put("c.key", &key)),
        client_ca: Some(f.put("ca.pem", &ca.cert.pem())),
    })
    .unwrap();
    let tls = AgentTls {
        ca: Some(f.put("ca.pem", &ca.cert.pem())),
        server_name: None,
        cert: Some(f.put("a.pem", &acert)),
        key: Some(f.put("a.key", &akey)),
    };
    let name = server_name(&tls, "127.0.0.1:7878").unwrap();
    assert_eq!(name, ip());
    let (c, s) = handshake(client_config(&tls).unwrap(), server, name);
    assert!(c.is_none() && s.is_none(), "client {c:?}, server {s:?}");
}

#[test]
fn the_default_accepts_the_generated_certificate() {
    let server = server_config(&ControllerTls::default()).unwrap();
    let tls = AgentTls::default();
    let name = server_name(&tls, "10.0.0.1:7878").unwrap();
    assert_eq!(name.to_str(), GENERATED_NAME);
    let (c, s) = handshake(client_config(&tls).unwrap(), server, name);
    assert!(c.is_none() && s.is_none(), "client {c:?}, server {s:?}");
}

#[test]
fn an_agent_refuses_a_controller_from_another_ca_or_for_another_name_or_expired() {
    let f = Files::new("refuse");
    let (ours, theirs) = (ca("ours"), ca("theirs"));
    let tls = AgentTls {
        ca: Some(f.put("ours.pem", &ours.cert.pem())),
        ..Default::default()
    };
    let controller = |ca: &Ca, names: &[&str], expired: bool, tag: &str| {
        let (cert, key) = leaf(ca, names, expired);
        server_config(&ControllerTls {
            cert: Some(f.put(&format!("{tag}.pem"), &cert)),
            key: Some(f.put(&format!("{tag}.key"), &key)),
            client_ca: None,
        })
    };
    // Signed by another CA.
    let server = controller(&theirs, &["127.0.0.1"], false, "other").unwrap();
    let (c, _) = handshake(client_config(&tls).unwrap(), server, ip());
    let msg = agent_side(&c.expect("refused"), &tls, &ip());
    assert!(msg.contains("not signed by the CA in --tls-ca"), "{msg}");
    assert!(msg.contains("ours.pem"), "{msg}");
    // Valid for another name than the one dialed.
    let server = controller(&ours, &["controller.test"], false, "name").unwrap();
    let (c, _) = handshake(client_config(&tls).unwrap(), server, ip());
    let msg = agent_side(&c.expect("refused"), &tls, &ip());
    assert!(msg.contains("not valid for the name 127.0.0.1"), "{msg}");
    assert!(msg.contains("--tls-server-name"), "{msg}");
    assert!(msg.contains("(it is valid for controller.test)"), "{msg}");
    // The same certificate with --tls-server-name set to its name passes.
    let named = AgentTls {
        server_name: Some("controller.test".into()),
        ..tls.clone()
    };
    let server = controller(&ours, &["controller.test"], false, "name2").unwrap();
    let name = server_name(&named, "127.0.0.1:7878").unwrap();
    let (c, _) = handshake(client_config(&named).unwrap(), server, name);
    assert!(c.is_none(), "{c:?}");
    // An expired certificate is refused by the controller itself, at start.
    let err = controller(&ours, &["127.0.0.1"], true, "expired").unwrap_err();
    assert!(
        err.contains("expired.pem") && err.contains("expired on"),
        "{err}"
    );
}

#[test]
fn a_controller_with_a_client_ca_refuses_an_agent_without_a_certificate_or_from_another_ca() {
    let f = Files::new("mtls");
    let (ours, theirs) = (ca("ours"), ca("theirs"));
    let ctl = ControllerTls {
        client_ca: Some(f.put("ours.pem", &ours.cert.pem())),
        ..Default::default()
    };
    // No certificate: the controller says so, and the agent hears it needs one.
    let (c, s) = handshake(
        client_config(&AgentTls::default()).unwrap(),
        server_config(&ctl).unwrap(),
        server_name(&AgentTls::default(), "x:1").unwrap(),
    );
    let msg = controller_side(&s.expect("refused"), &ctl);
    assert!(msg.contains("presented no client certificate"), "{msg}");
    assert!(msg.contains("ours.pem"), "{msg}");
    let msg = agent_side(&c.expect("alerted"), &AgentTls::default(), &ip());
    assert!(msg.contains("requires a client certificate"), "{msg}");
    // A certificate from another CA.
    let (cert, key) = leaf(&theirs, &["agent"], false);
    let agent = AgentTls {
        cert: Some(f.put("a.pem", &cert)),
        key: Some(f.put("a.key", &key)),
        ..Default::default()
    };
    let (c, s) = handshake(
        client_config(&agent).unwrap(),
        server_config(&ctl).unwrap(),
        server_name(&agent, "x:1").unwrap(),
    );
    let msg = controller_side(&s.expect("refused"), &ctl);
    assert!(
        msg.contains("not signed by the CA in --tls-client-ca"),
        "{msg}"
    );
    let msg = agent_side(&c.expect("alerted"), &agent, &ip());
    assert!(
        msg.contains("refused this agent's certificate (") && msg.contains("a.pem"),
        "{msg}"
    );
}

#[test]
fn bad_files_are_errors_naming_the_flag_and_the_file() {
    let f = Files::new("files");
    let ca = ca("ca");
    let (cert, key) = leaf(&ca, &["x"], false);
    let (_, other_key) = leaf(&ca, &["x"], false);
    let cert = f.put("cert.pem", &cert);
    let key = f.put("key.pem", &key);
    let other_key = f.put("other.key", &other_key);
    let text = f.put("notes.txt", "not a certificate\n");
    let missing = f.0 .0.join("missing.pem");
    let ctl = |cert: &Path, key: &Path| {
        server_config(&ControllerTls {
            cert: Some(cert.to_path_buf()),
            key: Some(key.to_path_buf()),
            client_ca: None,
        })
        .unwrap_err()
    };
    let e = ctl(&missing, &key);
    assert!(
        e.starts_with("--tls-cert ") && e.contains("missing.pem"),
        "{e}"
    );
    let e = ctl(&text, &key);
    assert!(
        e.contains("notes.txt") && e.contains("no PEM certificate"),
        "{e}"
    );
    let e = ctl(&cert, &text);
    assert!(
        e.starts_with("--tls-key ") && e.contains("notes.txt"),
        "{e}"
    );
    let e = ctl(&cert, &other_key);
    assert!(
        e.contains("other.key") && e.contains("cert.pem") && e.contains("not the private key"),
        "{e}"
    );
    let e = server_config(&ControllerTls {
        client_ca: Some(text.clone()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        e.starts_with("--tls-client-ca ") && e.contains("notes.txt"),
        "{e}"
    );
    let e = client_config(&AgentTls {
        ca: Some(missing.clone()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        e.starts_with("--tls-ca ") && e.contains("missing.pem"),
        "{e}"
    );
    let e = client_config(&AgentTls {
        cert: Some(cert.clone()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.contains("--tls-cert needs --tls-key"), "{e}");
    let e = client_config(&AgentTls {
        cert: Some(cert),
        key: Some(other_key),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.contains("not the private key"), "{e}");
}

#[test]
fn the_server_name_is_the_dialed_host_unless_given() {
    let with_ca = AgentTls {
        ca: Some("ca.pem".into()),
        ..Default::default()
    };
    let name =
        |tls: &AgentTls, connect: &str| server_name(tls, connect).map(|n| n.to_str().into_owned());
    assert_eq!(name(&with_ca, "ctl.example:7878").unwrap(), "ctl.example");
    assert_eq!(name(&with_ca, "[::1]:7878").unwrap(), "::1");
    assert_eq!(name(&with_ca, "10.1.2.3:7878").unwrap(), "10.1.2.3");
    let given = AgentTls {
        server_name: Some("controller.internal".into()),
        ..with_ca.clone()
    };
    assert_eq!(
        name(&given, "10.1.2.3:7878").unwrap(),
        "controller.internal"
    );
    let bad = AgentTls {
        server_name: Some("no spaces allowed".into()),
        ..with_ca
    };
    let e = name(&bad, "x:1").unwrap_err();
    assert!(e.starts_with("--tls-server-name"), "{e}");
}
