//! The YAML examples in docs/plan.md load (wrapped into a plan where they are fragments).
use crate::common;

use common::load;
use onrush_plan::{Plan, PlanError};

/// Loads with an environment in which every name is defined.
fn load_any_env(text: &str) -> Result<Plan, PlanError> {
    onrush_plan::load_str_with_options(
        "plan.yaml",
        text,
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        &onrush_plan::LoadOptions {
            profiles: &[],
            overrides: &[],
            env: &|_| Some("x".to_string()),
            grammars: common::grammars(),
        },
    )
}

#[test]
fn plan_md_examples_load() {
    let loaded = examples_load("plan.md");
    assert!(loaded >= 12, "only {loaded} examples found");
}

#[test]
fn thresholds_md_examples_load() {
    let loaded = examples_load("thresholds.md");
    assert!(loaded >= 2, "only {loaded} examples found");
}

/// Loads every YAML example of `docs/{file}`; returns how many.
fn examples_load(file: &str) -> usize {
    let path = format!("{}/../../docs/{file}", env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(path).unwrap();
    let mut loaded = 0;
    for block in doc.split("```yaml\n").skip(1) {
        let block = block.split("```").next().unwrap();
        if block.contains("{ ... }") || block.contains("[ ... ]") {
            continue; // an outline, not an example
        }
        let first = block.trim_start().split(':').next().unwrap_or("");
        let indented: String = block.lines().map(|l| format!("    {l}\n")).collect();
        let text = match first {
            "target" => block.to_string(),
            "scenarios" => format!("target: builtin\n{block}"),
            "vars" | "http" => format!("target: builtin\n{block}scenarios: [{{ name: s, load: {{ vus: 1, iterations: 1 }}, steps: [{{ get: / }}] }}]\n"),
            "thresholds" => format!("target: builtin\n{block}scenarios: [{{ name: closed, load: {{ vus: 1, iterations: 1 }}, steps: [{{ name: home, get: / }}] }}]\n"),
            "load" => format!("target: builtin\nscenarios:\n  - name: s\n{indented}    steps: [{{ get: / }}]\n"),
            "steps" => format!("target: builtin\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n{indented}"),
            _ if block.trim_start().starts_with("- ") => {
                let steps: String = block.lines().map(|l| format!("  {l}\n")).collect();
                format!("target: builtin\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n{steps}")
            }
            _ => continue,
        };
        // One block is a list of `load:` alternatives: load each line on its own.
        let texts: Vec<String> = if first == "load"
            && block.lines().filter(|l| l.starts_with("load:")).count() > 1
        {
            block.lines().filter(|l| l.starts_with("load:")).map(|l| format!("target: builtin\nscenarios:\n  - name: s\n    {l}\n    steps: [{{ get: / }}]\n")).collect()
        } else {
            vec![text]
        };
        for text in texts {
            // Files the examples name are stand-ins: any existing file loads.
            let text = text
                .replace("body_file: bodies/avatar.png", "body_file: Cargo.toml")
                .replace("ca_file: ca.pem", "ca_file: Cargo.toml")
                .replace("client_cert: client.pem", "client_cert: Cargo.toml")
                .replace("client_key: client.key", "client_key: Cargo.toml")
                // PKCS#12 files are opened when the plan loads: real ones (tests/fixtures/tls).
                .replace(
                    "client_p12: client.p12",
                    "client_p12: tests/fixtures/tls/client.p12",
                )
                .replace("p12: bob.p12", "p12: tests/fixtures/tls/identities/bob.p12")
                .replace(
                    "cert: alice.pem",
                    "cert: tests/fixtures/tls/identities/alice.pem",
                )
                .replace(
                    "key: alice.key",
                    "key: tests/fixtures/tls/identities/alice.key",
                )
                .replace(
                    "identities_dir: certs",
                    "identities_dir: tests/fixtures/tls/identities",
                )
                .replace("\"${P12_PASSWORD}\"", "onrush-fixture")
                .replace("\"${BOB_P12_PASSWORD}\"", "onrush-fixture")
                .replace("data/report.pdf", "Cargo.toml")
                .replace("data/", "../../examples/data/");
            // A fragment may use runtime variables that the rest of its plan would set, and
            // environment variables: retry with every name defined in the environment.
            let loaded_ok = load(&text).or_else(|e| {
                if e.to_string().contains("unknown variable") {
                    load_any_env(&text)
                } else {
                    Err(e)
                }
            });
            if let Err(e) = loaded_ok {
                panic!("docs/{file} example does not load:\n{e}\n--- as loaded:\n{text}");
            }
            loaded += 1;
        }
    }
    loaded
}
