//! `onrush run --vus/--iterations/--duration/--rate`: the plan's load changed from the command
//! line, counted by the built-in server on the other side; a flag that does not fit a scenario
//! is refused with its name.

use super::common::{onrush, summary, temp_dir, text, u64_at, Server};

#[test]
fn load_flags_change_the_run_and_misfits_are_refused() {
    let server = Server::start();
    let dir = temp_dir("load-flags");
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n      - get: /\n",
            server.url("")
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let output = onrush()
        .args([
            "run",
            plan.to_str().unwrap(),
            "--vus",
            "3",
            "--iterations",
            "4",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 12, "{s:#}");
    assert_eq!(server.stats().requests, 12);

    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "--rate", "10/s", "--quiet"])
        .output()
        .unwrap();
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(2), "{printed}");
    assert!(
        printed.contains("scenario \"s\"") && printed.contains("--rate applies to open"),
        "{printed}"
    );

    let output = onrush()
        .args([
            "run",
            plan.to_str().unwrap(),
            "--duration",
            "1s",
            "--iterations",
            "2",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}
