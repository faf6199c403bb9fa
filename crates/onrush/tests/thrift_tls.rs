//! End to end: `thrift: tls://HOST:PORT` steps against Apache Thrift's own Python library
//! serving over its TSSLServerSocket (tests/servers/thrift_server.py with THRIFT_SERVER_CERT),
//! mutual TLS required, framed and buffered: the server's counts of calls and of TLS
//! handshakes (full or resumed, by OpenSSL's account) checked against onrush's.
//!
//! Peers: crates/onrush-proto-thrift/tests/install-thrift.sh (as tests/thrift.rs).

use crate::common;
use crate::tcp_tls::pki;
use crate::thrift::{generated, run, ThriftServer};
use common::*;

#[test]
fn thrift_over_mutual_tls_framed_and_buffered_counts_like_tsslserversocket() {
    let Some(gen) = generated("tls") else {
        return;
    };
    let dir = temp_dir("thrift-tls-pki");
    let pki = pki(&dir);
    for (protocol, transport) in [("binary", "framed"), ("compact", "buffered")] {
        let server = ThriftServer::start_with(
            &gen,
            &[protocol, transport, "plain"],
            &[
                ("THRIFT_SERVER_CERT", &pki.server_cert),
                ("THRIFT_SERVER_KEY", &pki.server_key),
                ("THRIFT_SERVER_CLIENT_CA", &pki.ca),
            ],
        );
        let common = format!(
            "thrift: \"tls://localhost:{port}\", protocol: {protocol}, transport: {transport}",
            port = server.port
        );
        let plan = format!(
            r#"
target: http://127.0.0.1:1
thrift: {{ idl: calc.thrift }}
scenarios:
  - name: s
    http:
      connections: per_iteration
      tls: {{ ca_file: "{ca}", client_cert: "{cc}", client_key: "{ck}" }}
    load: {{ vus: 2, iterations: 4 }}
    steps:
      - {{ {common}, call: Calculator.ping, check: [{{ body_contains: "null" }}] }}
      - {{ {common}, call: Calculator.add, args: {{ num1: 40, num2: 2 }},
           check: [{{ jsonpath: "$", equals: 42 }}] }}
      - {{ {common}, name: divide, call: Calculator.calculate,
           args: {{ logid: 1, w: {{ num1: 1, num2: 0, op: DIVIDE }} }},
           check: [{{ header: exception, equals: InvalidOperation }}] }}
      - {{ {common}, call: Calculator.zip, args: {{ n: 1 }} }}
  - name: untrusted
    load: {{ vus: 1, iterations: 2 }}
    steps:
      - {{ {common}, call: Calculator.ping }}
"#,
            ca = pki.ca.display(),
            cc = pki.client_cert.display(),
            ck = pki.client_key.display(),
        );
        let s = run(&format!("thrift-tls-{protocol}-{transport}"), &plan);
        let what = format!("{protocol} {transport}");
        let requests = |name: &str| u64_at(step(&s, "s", name), "/requests");
        for name in [
            "Calculator.ping",
            "Calculator.add",
            "divide",
            "Calculator.zip",
        ] {
            assert_eq!(requests(name), 8, "{what} {name}: {s:#}");
        }
        assert_eq!(
            u64_at(
                step(&s, "s", "divide"),
                "/failures_by_class/thrift_exception"
            ),
            8,
            "{what}: {s:#}"
        );
        assert_eq!(
            u64_at(scenario(&s, "s"), "/failures"),
            8,
            "only the provoked exceptions fail: {what}: {s:#}"
        );
        assert_eq!(
            u64_at(scenario(&s, "s"), "/checks/fails"),
            0,
            "{what}: {s:#}"
        );
        // per_iteration: a connection per iteration, opened by its first call; each VU's first
        // handshake is full, the later ones resume (`session: resume`, the default).
        let ping = step(&s, "s", "Calculator.ping");
        assert_eq!(u64_at(ping, "/handshakes/full"), 2, "{what}: {ping:#}");
        assert_eq!(u64_at(ping, "/handshakes/resumed"), 6, "{what}: {ping:#}");
        assert_eq!(
            u64_at(scenario(&s, "s"), "/connections_opened"),
            8,
            "{what}: {s:#}"
        );
        let untrusted = step(&s, "untrusted", "Calculator.ping");
        assert_eq!(
            u64_at(untrusted, "/failures_by_class/tls_certificate_unknown"),
            2,
            "{what}: {untrusted:#}"
        );
        let counts = server.finish();
        for (key, name) in [
            ("/ping", "Calculator.ping"),
            ("/add", "Calculator.add"),
            ("/calculate", "divide"),
            ("/zip", "Calculator.zip"),
        ] {
            assert_eq!(u64_at(&counts, key), requests(name), "{what} {counts}");
        }
        assert_eq!(u64_at(&counts, "/tls_full"), 2, "{what} {counts}");
        assert_eq!(u64_at(&counts, "/tls_resumed"), 6, "{what} {counts}");
        assert_eq!(u64_at(&counts, "/tls_failed"), 2, "{what} {counts}");
    }
}
