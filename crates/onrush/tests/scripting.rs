//! JavaScript in plans (`scripts:`, hooks, `js:` checks and conditions, `script:` steps),
//! end to end against a server onrush did not write: tests/servers/signed_api_server.py
//! (Python's http.server and hmac) checks every signature and every computed value, and
//! counts them; its counts are compared with onrush's.

use super::common::py_server::PyServer;
use super::common::{onrush, summary, temp_dir, text, u64_at};

fn signed_api() -> PyServer {
    let mut command = PyServer::command("signed_api_server.py");
    command.arg("k3y");
    PyServer::spawn(command, "signed API server")
}

/// Writes `plan` into `dir` and runs it; the output and the results directory.
fn run_in(dir: &std::path::Path, plan: &str) -> (std::process::Output, std::path::PathBuf) {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    let out = dir.join("out");
    let output = onrush()
        .args(["run", path.to_str().unwrap(), "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    (output, out)
}

const SIGN_JS: &str = r#"import { hmac } from 'onrush/crypto';
export function sign(req, ctx) {
  req.headers['x-signature'] = hmac('sha256', 'k3y', req.body);
}
export function remember(res, ctx) {
  ctx.vars.nonce = String(res.json().nonce);
}
"#;

/// The issue's example, as written there: every signature good, every computed value right.
#[test]
fn signed_requests_and_computed_values_are_right_on_the_server() {
    let server = signed_api();
    let dir = temp_dir("script-signed");
    std::fs::write(dir.join("sign.js"), SIGN_JS).unwrap();
    let plan = format!(
        r#"target: http://127.0.0.1:{port}
scripts: [sign.js]
scenarios:
  - name: api
    load: {{ vus: 4, iterations: 200 }}
    steps:
      - post: /orders
        body: '{{"vu": ${{vu}}, "i": ${{iteration}}}}'
        before: sign
        after: remember
        check: [ {{ js: "res.status === 200 && res.json().ok === true" }} ]
      - script: "ctx.vars.total = Number(ctx.vars.nonce) * 2 + 1"
      - get: "/next?value=${{total}}"
"#,
        port = server.port
    );
    let (output, out) = run_in(&dir, &plan);
    let counts = server.finish();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(counts["good"], 800, "{counts}");
    assert_eq!(counts["bad"], 0, "{counts}");
    assert_eq!(counts["right"], 800, "{counts}");
    assert_eq!(counts["wrong"], 0, "{counts}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/requests"), 1600, "{s:#}");
    assert_eq!(
        u64_at(&s, "/totals/checks/passes"),
        800,
        "{:#}",
        s["checks"]
    );
}

/// A custom check fails exactly the replies it should; a script that throws and one that
/// never ends are classified, and the run goes on to its last iteration.
#[test]
fn js_checks_exceptions_and_endless_loops_are_counted() {
    let server = signed_api();
    let dir = temp_dir("script-checks");
    let plan = format!(
        r#"target: http://127.0.0.1:{port}
script_timeout: 50ms
scenarios:
  - name: api
    load: {{ vus: 2, iterations: 40 }}
    steps:
      - get: "/items?n=${{random_int(0, 5)}}"
        check: [ {{ js: "res.json().items.length >= 3" }} ]
      - if: {{ js: "vars.n === undefined && ctx.iteration % 4 === 0" }}
        then:
          - script: "null.boom"
            name: throws
          - script: "for (;;) {{}}"
            name: spins
"#,
        port = server.port
    );
    let (output, out) = run_in(&dir, &plan);
    let counts = server.finish();
    // Failures make the exit code 0 still (no thresholds); the run finished every iteration.
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&out);
    let few = counts["few"].as_u64().unwrap_or(0);
    assert_eq!(counts["items"], 80, "{counts}");
    assert_eq!(
        u64_at(&s, "/totals/checks/fails"),
        few,
        "{:#} {counts}",
        s["checks"]
    );
    assert_eq!(u64_at(&s, "/totals/iterations"), 80, "{s:#}");
    let classes = &s["failure_classes"];
    // A script step is a sample of its own (as a group is: not a request), its failures by
    // class on its line.
    let class = |step: &str, name: &str| {
        let st = super::common::step(&s, "api", step);
        st["failures_by_class"][name].as_u64().unwrap_or(0)
    };
    // Iterations 0, 4, 8, ... of each VU: 10 of its 40, 20 in all.
    assert_eq!(class("throws", "script_error"), 20, "{s:#}");
    assert_eq!(class("spins", "script_timeout"), 20, "{s:#}");
    assert_eq!(
        u64_at(&s, "/totals/failures_by_class/check_failed"),
        few,
        "{s:#}"
    );
    assert_eq!(classes["script_error"]["group"], "script", "{classes:#}");
    let printed = text(&output);
    assert!(printed.contains("TypeError"), "{printed}");
}

/// A mistake in a script is a plan error at `validate`, at the script's line and column.
#[test]
fn a_syntax_error_is_placed_at_validate() {
    let dir = temp_dir("script-syntax");
    std::fs::write(
        dir.join("sign.js"),
        "export function sign(req) {\n  req.headers['x'] = ;\n}\n",
    )
    .unwrap();
    let path = dir.join("plan.yaml");
    std::fs::write(
        &path,
        "target: http://127.0.0.1:9\nscripts: [sign.js]\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - post: /\n        before: sign\n",
    )
    .unwrap();
    let output = onrush()
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    let printed = text(&output);
    assert_ne!(output.status.code(), Some(0), "{printed}");
    assert!(printed.contains("sign.js:2:"), "{printed}");
    assert!(printed.contains("SyntaxError"), "{printed}");
    assert!(printed.contains("plan.yaml:2"), "{printed}");

    // An unknown hook says what the scripts export.
    std::fs::write(dir.join("sign.js"), SIGN_JS).unwrap();
    std::fs::write(
        &path,
        "target: http://127.0.0.1:9\nscripts: [sign.js]\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - post: /\n        before: sing\n",
    )
    .unwrap();
    let output = onrush()
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    let printed = text(&output);
    assert!(
        printed.contains("no script exports a function `sing`"),
        "{printed}"
    );
    assert!(printed.contains("did you mean `sign`"), "{printed}");
}
