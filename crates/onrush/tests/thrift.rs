//! End to end: `thrift:` steps against servers onrush did not write — Apache Thrift's own Python
//! library serving code that Apache's `thrift` compiler generates from tests/servers/thrift/
//! calc.thrift at test time (tests/servers/thrift_server.py) — in binary and compact protocols,
//! framed and buffered transports, plain and multiplexed, the server's call counts checked
//! against onrush's; declared exceptions, TApplicationExceptions and broken replies classified
//! while the run goes on; IDL and argument errors from `onrush validate`.
//!
//! Peers: crates/onrush-proto-thrift/tests/install-thrift.sh. Without them the tests fail under
//! CI=true and skip loudly elsewhere.

use crate::common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const IDL_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/thrift");

/// Generates the Python code of the test IDL into a fresh directory, or says why it cannot.
pub(crate) fn generated(name: &str) -> Option<PathBuf> {
    generated_from(name, &Path::new(IDL_DIR).join("calc.thrift"))
}

/// Generates the Python code of `idl` (and what it includes) into a fresh directory, or says
/// why it cannot: fails under CI=true, skips loudly elsewhere.
pub(crate) fn generated_from(name: &str, idl: &Path) -> Option<PathBuf> {
    let dir = temp_dir(&format!("thrift-gen-{name}"));
    let compiled = Command::new("thrift")
        .args(["-r", "--gen", "py", "-out"])
        .arg(&dir)
        .arg(idl)
        .status();
    let library = Command::new("python3")
        .args(["-c", "import thrift.protocol.TCompactProtocol"])
        .stderr(Stdio::null())
        .status();
    if matches!(compiled, Ok(s) if s.success()) && matches!(library, Ok(s) if s.success()) {
        return Some(dir);
    }
    let why = "Apache Thrift's compiler (`thrift`) or Python library is missing: run \
               crates/onrush-proto-thrift/tests/install-thrift.sh";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{why}");
    }
    eprintln!("\n!!! SKIPPED {name}: {why} !!!\n");
    None
}

/// The Python server; `finish` closes its stdin and returns the counts it printed.
pub(crate) struct ThriftServer(PyServer);

impl ThriftServer {
    fn start(generated: &Path, args: &[&str]) -> Self {
        Self::start_with(generated, args, &[])
    }

    /// [`ThriftServer::start`] with environment variables (`THRIFT_SERVER_CERT`, ...).
    pub(crate) fn start_with(generated: &Path, args: &[&str], env: &[(&str, &Path)]) -> Self {
        let mut command = PyServer::command("thrift_server.py");
        command
            .args(args)
            .env("PYTHONPATH", generated)
            .envs(env.iter().copied());
        ThriftServer(PyServer::spawn(command, "Thrift server"))
    }

    pub(crate) fn finish(self) -> Value {
        self.0.finish()
    }
}

impl std::ops::Deref for ThriftServer {
    type Target = PyServer;
    fn deref(&self) -> &PyServer {
        &self.0
    }
}

/// Writes `plan` beside a copy of the test IDL and runs it; returns summary.json.
pub(crate) fn run(name: &str, plan: &str) -> Value {
    let dir = temp_dir(name);
    for idl in ["calc.thrift", "shared.thrift"] {
        std::fs::copy(Path::new(IDL_DIR).join(idl), dir.join(idl)).unwrap();
    }
    let path = write_plan(&dir, plan);
    let out = dir.join("out");
    let output = onrush()
        .args(["run", path.to_str().unwrap(), "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0) | Some(1)),
        "{}",
        text(&output)
    );
    summary(&out)
}

fn class(s: &Value, name: &str, class: &str) -> u64 {
    step(s, "s", name)
        .pointer(&format!("/failures_by_class/{class}"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

#[test]
fn thrift_calls_in_every_protocol_and_transport_count_like_the_server() {
    let Some(gen) = generated("calls") else {
        return;
    };
    let combos = [
        ("binary", "framed", "plain"),
        ("binary", "buffered", "plain"),
        ("compact", "framed", "plain"),
        ("compact", "buffered", "plain"),
        ("binary", "framed", "multiplexed"),
        ("compact", "buffered", "multiplexed"),
    ];
    for (protocol, transport, mode) in combos {
        let server = ThriftServer::start(&gen, &[protocol, transport, mode]);
        let multiplexed = mode == "multiplexed";
        let common = format!(
            "thrift: 127.0.0.1:{port}, protocol: {protocol}, transport: {transport}, \
             multiplexed: {multiplexed}",
            port = server.port
        );
        let plan = format!(
            r#"
target: http://127.0.0.1:1
thrift: {{ idl: calc.thrift }}
scenarios:
  - name: s
    load: {{ vus: 2, iterations: 5 }}
    steps:
      - {{ {common}, call: Calculator.ping, check: [{{ body_contains: "null" }}] }}
      - {{ {common}, call: Calculator.add, args: {{ num1: 40, num2: 2 }},
           extract: {{ sum: {{ jsonpath: "$" }} }}, check: [{{ jsonpath: "$", equals: 42 }}] }}
      - {{ {common}, name: subtract, call: Calculator.calculate,
           args: {{ logid: "${{vu}}", w: {{ num1: "${{sum}}", num2: 2, op: SUBTRACT }} }},
           check: [{{ jsonpath: "$", equals: 40 }}] }}
      - {{ {common}, name: divide, call: Calculator.calculate,
           args: {{ logid: 1, w: {{ num2: 0, op: "DIVIDE", comment: "by ${{iteration}}" }} }},
           extract: {{ why: {{ jsonpath: "$.why" }} }},
           check: [{{ header: exception, equals: InvalidOperation }}, {{ jsonpath: "$.whatOp", equals: 4 }}] }}
      - {{ {common}, name: no-op, call: Calculator.calculate, args: {{ logid: 1, w: {{ num2: 1 }} }},
           check: [{{ jsonpath: "$.type", equals: 6 }}] }}
      - {{ {common}, call: Calculator.summarize,
           args: {{ works: [{{ num1: 1, num2: 2, op: ADD, comment: a }}, {{ num1: 3, num2: "${{iteration}}", op: MULTIPLY }}],
                    weights: {{ x: 1, "y z": -7 }}, flag: false }},
           check: [{{ jsonpath: "$.values[0]", equals: 1002 }}, {{ jsonpath: "$.counts['y z']", equals: -7 }},
                   {{ jsonpath: "$.tags[0]", equals: a }}, {{ jsonpath: "$.flag", equals: "true" }},
                   {{ jsonpath: "$.ratio", equals: 0.5 }}, {{ jsonpath: "$.last", equals: MULTIPLY }}] }}
      - {{ {common}, call: Calculator.getStruct, args: {{ key: 7 }},
           check: [{{ jsonpath: "$.value", equals: v7 }}, {{ jsonpath: "$.key", equals: 7 }}] }}
      - {{ {common}, call: Calculator.zip, args: {{ n: "${{iteration}}" }} }}
"#
        );
        let s = run(&format!("thrift-{protocol}-{transport}-{mode}"), &plan);
        let what = format!("{protocol} {transport} {mode}");
        let requests = |name: &str| u64_at(step(&s, "s", name), "/requests");
        for name in [
            "Calculator.ping",
            "Calculator.add",
            "subtract",
            "divide",
            "no-op",
            "Calculator.summarize",
            "Calculator.getStruct",
            "Calculator.zip",
        ] {
            assert_eq!(requests(name), 10, "{what} {name}: {s:#}");
        }
        assert_eq!(class(&s, "divide", "thrift_exception"), 10, "{what}: {s:#}");
        assert_eq!(
            class(&s, "no-op", "thrift_application_exception"),
            10,
            "{what}: {s:#}"
        );
        // Every check passed; the only failures are the two exceptions the plan provokes.
        assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{what}: {s:#}");
        assert_eq!(u64_at(&s, "/totals/failures"), 20, "{what}: {s:#}");
        // Keep-alive (per_vu): one connection per VU.
        assert_eq!(u64_at(scenario(&s, "s"), "/connections_opened"), 2, "{s:#}");

        let counts = server.finish();
        // The server handled exactly what onrush counted.
        assert_eq!(
            u64_at(&counts, "/ping"),
            requests("Calculator.ping"),
            "{what} {counts}"
        );
        assert_eq!(
            u64_at(&counts, "/add"),
            requests("Calculator.add"),
            "{what} {counts}"
        );
        assert_eq!(
            u64_at(&counts, "/calculate"),
            requests("subtract") + requests("divide") + requests("no-op"),
            "{what} {counts}"
        );
        assert_eq!(
            u64_at(&counts, "/thrown"),
            class(&s, "divide", "thrift_exception")
        );
        assert_eq!(
            u64_at(&counts, "/summarize"),
            requests("Calculator.summarize")
        );
        assert_eq!(
            u64_at(&counts, "/getStruct"),
            requests("Calculator.getStruct")
        );
        assert_eq!(
            u64_at(&counts, "/zip"),
            requests("Calculator.zip"),
            "{what} {counts}"
        );
    }
}

#[test]
fn thrift_faults_are_classified_and_the_run_goes_on() {
    let Some(gen) = generated("faults") else {
        return;
    };
    // Broken replies, one kind per connection in turn (per_request: a connection per call).
    let rogue = ThriftServer::start(&gen, &["rogue"]);
    let real = ThriftServer::start(&gen, &["binary", "framed", "plain"]);
    let plan = format!(
        r#"
target: http://127.0.0.1:1
http: {{ connections: per_request, timeout: 2s }}
thrift: {{ idl: [calc.thrift] }}
scenarios:
  - name: s
    load: {{ vus: 1, iterations: 9 }}
    steps:
      - {{ thrift: 127.0.0.1:{rogue}, name: broken, call: Calculator.add, args: {{ num1: 1, num2: 2 }},
           max_message: 65536 }}
      # A value extracted at run time that an i32 cannot hold: not sent, bad_argument.
      - {{ thrift: 127.0.0.1:{real}, call: Calculator.getStruct, args: {{ key: 1 }},
           extract: {{ word: {{ jsonpath: "$.value" }} }} }}
      - {{ thrift: 127.0.0.1:{real}, name: bad-arg, call: Calculator.add, args: {{ num1: "${{word}}", num2: 1 }} }}
      - {{ thrift: 127.0.0.1:{real}, name: after, call: Calculator.add, args: {{ num1: 1, num2: 1 }},
           check: [{{ jsonpath: "$", equals: 2 }}] }}
"#,
        rogue = rogue.port,
        real = real.port
    );
    let s = run("thrift-faults", &plan);
    assert_eq!(class(&s, "broken", "bad_response"), 6, "{s:#}");
    assert_eq!(class(&s, "broken", "closed_early"), 3, "{s:#}");
    assert_eq!(class(&s, "bad-arg", "bad_argument"), 9, "{s:#}");
    assert_eq!(u64_at(step(&s, "s", "after"), "/failures"), 0, "{s:#}");
    assert_eq!(u64_at(step(&s, "s", "after"), "/requests"), 9, "{s:#}");
    let counts = rogue.finish();
    assert_eq!(u64_at(&counts, "/garbage"), 3, "{counts}");
    assert_eq!(u64_at(&counts, "/oversized"), 3, "{counts}");
    assert_eq!(u64_at(&counts, "/half"), 3, "{counts}");
    let counts = real.finish();
    // bad-arg never reached the server: only `after` added.
    assert_eq!(u64_at(&counts, "/add"), 9, "{counts}");
    assert_eq!(u64_at(&counts, "/getStruct"), 9, "{counts}");
}

/// `onrush validate` on a plan whose steps are `steps`, with `idl` as calc.thrift's text
/// (None: the test IDL); returns stderr.
fn validate_error(steps: &str, idl: Option<&str>) -> String {
    let dir = temp_dir("thrift-validate");
    std::fs::copy(
        Path::new(IDL_DIR).join("shared.thrift"),
        dir.join("shared.thrift"),
    )
    .unwrap();
    match idl {
        Some(text) => std::fs::write(dir.join("calc.thrift"), text).unwrap(),
        None => std::fs::copy(
            Path::new(IDL_DIR).join("calc.thrift"),
            dir.join("calc.thrift"),
        )
        .map(|_| ())
        .unwrap(),
    }
    let plan = format!(
        "target: http://127.0.0.1:1\nthrift: {{ idl: [calc.thrift] }}\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n{steps}"
    );
    let path = write_plan(&dir, &plan);
    let output = onrush()
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", text(&output));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn thrift_plan_and_idl_errors_name_the_place_and_the_fix() {
    let step = |rest: &str| format!("      - {{ thrift: 127.0.0.1:9, {rest} }}\n");
    let e = validate_error(
        &step("call: Calculator.add"),
        Some("service Calculator {\n  i32 add(1: i32 a,\n}\n"),
    );
    assert!(e.contains("calc.thrift:3:1: expected a type"), "{e}");
    let e = validate_error(&step("call: Calculater.add"), None);
    assert!(
        e.contains("plan.yaml:7:") && e.contains("unknown service `Calculater`"),
        "{e}"
    );
    assert!(e.contains("did you mean `Calculator`?"), "{e}");
    let e = validate_error(&step("call: Calculator.ad"), None);
    assert!(
        e.contains("has no method `ad`") && e.contains("did you mean `add`?"),
        "{e}"
    );
    assert!(e.contains("getStruct"), "inherited methods are listed: {e}");
    let e = validate_error(
        &step("call: Calculator.add, args: { num1: 1, num3: 2 }"),
        None,
    );
    assert!(
        e.contains("args.num3: unknown argument `num3` of Calculator.add"),
        "{e}"
    );
    assert!(e.contains("did you mean `num1`?"), "{e}");
    let e = validate_error(
        &step("call: Calculator.calculate, args: { logid: 1, w: { num2: x } }"),
        None,
    );
    assert!(e.contains("args.w.num2: expected i32"), "{e}");
    let e = validate_error(
        &step("call: Calculator.calculate, args: { logid: 1, w: { num1: 1 } }"),
        None,
    );
    assert!(
        e.contains("args.w: missing required field `num2` of Work"),
        "{e}"
    );
    let e = validate_error(
        &step("call: Calculator.calculate, args: { logid: 1, w: { num2: 1, op: DIVDE } }"),
        None,
    );
    assert!(
        e.contains("args.w.op: expected a value of enum Operation"),
        "{e}"
    );
    assert!(e.contains("did you mean `DIVIDE`?"), "{e}");
    let e = validate_error(
        &step("call: Calculator.summarize, args: { works: 3 }"),
        None,
    );
    assert!(e.contains("args.works: expected list<Work>"), "{e}");
    let e = validate_error(
        &step("call: Calculator.zip, check: [{ status: 200 }]"),
        None,
    );
    assert!(e.contains("is oneway"), "{e}");
}

#[test]
fn an_open_models_warm_up_opens_the_vus_thrift_connections_before_the_load() {
    // `warm_up: 5` with `max_vus: 5`: the five VUs connect before the schedule starts, so no
    // call opens a connection; the calls are the server's, exactly.
    let Some(gen) = generated("warm-up") else {
        return;
    };
    let server = ThriftServer::start(&gen, &["binary", "framed", "plain"]);
    let plan = format!(
        "target: http://127.0.0.1:1\nthrift: {{ idl: calc.thrift }}\nscenarios:\n  - name: s\n    load: {{ rate: 50/s, duration: 1s, max_vus: 5, warm_up: 5 }}\n    steps:\n      - {{ thrift: 127.0.0.1:{port}, protocol: binary, transport: framed, call: Calculator.ping }}\n",
        port = server.port
    );
    let s = run("thrift-warm-up", &plan);
    let t = |p: &str| u64_at(&s, &format!("/totals/{p}"));
    assert_eq!(t("iterations") + t("dropped_iterations"), 50, "{s:#}");
    assert_eq!(t("failures"), 0, "{s:#}");
    let ping = step(&s, "s", "Calculator.ping");
    assert_eq!(
        u64_at(ping, "/connect_ms/count"),
        0,
        "no call connected: {ping:#}"
    );
    assert_eq!(u64_at(scenario(&s, "s"), "/connections_opened"), 5, "{s:#}");
    let counts = server.finish();
    assert_eq!(u64_at(&counts, "/ping"), t("iterations"), "{counts}");
}
