//! Secrets never reach what onrush writes: values from `secrets:` (environment, file) and
//! from variables whose names say they are secret (`-D session_key=...`) are sent to the
//! target, and appear in no results file, report, log line or printed summary.

use crate::common::*;

#[test]
fn secret_values_are_sent_but_never_written() {
    let server = Server::start();
    let dir = temp_dir("secrets");
    std::fs::write(dir.join("db.txt"), "pw-SECRET-5678\n").unwrap();
    let plan = write_plan(
        &dir,
        &format!(
            r#"
target: http://127.0.0.1:{port}
secrets:
  api_token: {{ env: ONRUSH_TEST_API_TOKEN }}
  db_pass: {{ file: db.txt }}
vars: {{ user: alice }}
scenarios:
  - name: s
    load: {{ vus: 2, iterations: 3 }}
    steps:
      - get: "/headers?t=${{api_token}}"
        name: "headers for ${{user}}"
        headers: {{ Authorization: "Bearer ${{api_token}}", X-Db: "${{db_pass}}", X-Key: "${{session_key}}" }}
        check: {{ body_contains: "${{db_pass}}" }}
"#,
            port = server.port()
        ),
    );
    let out = dir.join("out");
    let output = onrush()
        .args([
            "run",
            plan.to_str().unwrap(),
            "-D",
            "session_key=key-XYZW9876",
            "--out",
        ])
        .arg(&out)
        .env("ONRUSH_TEST_API_TOKEN", "tok-ABCD1234")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&out);
    // The values were really sent: the echo of the headers holds db_pass (the check passed).
    assert_eq!(u64_at(&s, "/totals/checks/passes"), 6, "{s:#}");
    assert_eq!(s["vars"]["api_token"], "***", "{s:#}");
    assert_eq!(s["vars"]["db_pass"], "***");
    assert_eq!(s["vars"]["session_key"], "***");
    assert_eq!(s["vars"]["user"], "alice");
    assert!(step(&s, "s", "headers for alice")["requests"].as_u64() == Some(6));

    let mut written = text(&output);
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        written.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
    }
    let export = onrush()
        .args(["export", out.to_str().unwrap(), "--csv"])
        .output()
        .unwrap();
    written.push_str(&text(&export));
    for secret in ["tok-ABCD1234", "pw-SECRET-5678", "key-XYZW9876"] {
        assert!(!written.contains(secret), "{secret} was written");
    }
    assert!(written.len() > 10_000, "the outputs were read");
}

#[test]
fn a_secret_whose_source_is_missing_names_it() {
    let dir = temp_dir("secrets-missing");
    let plan = write_plan(
        &dir,
        "target: http://127.0.0.1:9\nsecrets:\n  api_token: { env: ONRUSH_TEST_UNSET_TOKEN }\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps: [ { get: / } ]\n",
    );
    let output = onrush()
        .args(["validate", plan.to_str().unwrap()])
        .env_remove("ONRUSH_TEST_UNSET_TOKEN")
        .output()
        .unwrap();
    let t = text(&output);
    assert_eq!(output.status.code(), Some(2), "{t}");
    assert!(
        t.contains(":3:")
            && t.contains("the environment variable ONRUSH_TEST_UNSET_TOKEN is not set"),
        "{t}"
    );
    assert!(t.contains("-D api_token="), "{t}");
    // -D gives the value instead.
    let output = onrush()
        .args(["validate", plan.to_str().unwrap(), "-D", "api_token=x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
}
