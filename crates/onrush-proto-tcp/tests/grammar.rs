//! `tcp:` steps: each way to end a reply compiles to its framing, and a bad one is an error
//! naming the line, the field and the fix.
use std::path::Path;

use onrush_plan::testing::{assert_step_error, load_steps};
use onrush_plan::{Grammars, Plan, PlanError, Step};
use onrush_proto_tcp::{LengthPrefix, TcpGrammar, TcpReply, TcpSpec};

fn load(steps: &str) -> Result<Plan, PlanError> {
    load_steps(&Grammars::only(TcpGrammar), here(), steps)
}

/// This crate's folder: where `send_file:` finds `Cargo.toml`.
fn here() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn spec(plan: &Plan) -> &TcpSpec {
    match &plan.scenarios[0].steps[0] {
        Step::Custom(step) => step.spec::<TcpSpec>().expect("a tcp step"),
        other => panic!("not a tcp step: {other:?}"),
    }
}

/// The reply framing of the only step of `steps`.
fn reply(steps: &str) -> TcpReply {
    let plan = load(steps).unwrap_or_else(|e| panic!("{e}"));
    spec(&plan).reply.clone()
}

/// Asserts the error is at line 5 (the steps' line), names `field` and contains `fix`.
#[track_caller]
fn check(steps: &str, field: &str, fix: &str) -> String {
    assert_step_error(&Grammars::only(TcpGrammar), here(), steps, field, fix)
}

#[test]
fn every_framing_compiles() {
    let at = "[{ tcp: 127.0.0.1:7, send: x, ";
    assert_eq!(
        reply(&format!("{at}length_prefix: 4 }}]")),
        TcpReply::LengthPrefix(LengthPrefix {
            bytes: 4,
            little_endian: false,
            includes_prefix: false
        })
    );
    assert_eq!(
        reply(&format!(
            "{at}length_prefix: {{ bytes: 2, endian: little, includes_prefix: true }} }}]"
        )),
        TcpReply::LengthPrefix(LengthPrefix {
            bytes: 2,
            little_endian: true,
            includes_prefix: true
        })
    );
    assert_eq!(
        reply(&format!("{at}idle: 200ms }}]")),
        TcpReply::Idle(std::time::Duration::from_millis(200))
    );
    assert_eq!(
        reply(&format!("{at}until_close: true }}]")),
        TcpReply::UntilClose
    );
    assert_eq!(reply(&format!("{at}reply: none }}]")), TcpReply::None);
    assert_eq!(reply(&format!("{at}}}]")), TcpReply::None);
}

#[test]
fn bad_framings_name_the_field_and_the_fix() {
    let s = check(
        "[{ tcp: 127.0.0.1:7, until: \"\\n\", length_prefix: 4 }]",
        "scenarios[0].steps[0].length_prefix",
        "`until` and `length_prefix` are both given; expected one way to end the reply",
    );
    assert!(s.contains("`reply: none`"), "{s}");
    check(
        "[{ tcp: 127.0.0.1:7, idle: 1s, until_close: true }]",
        "scenarios[0].steps[0].until_close",
        "are both given",
    );
    check(
        "[{ tcp: 127.0.0.1:7, length_prefix: 3 }]",
        "scenarios[0].steps[0].length_prefix",
        "expected 1, 2, 4 or 8",
    );
    check(
        "[{ tcp: 127.0.0.1:7, length_prefix: { bytes: 2, endian: middle } }]",
        "scenarios[0].steps[0].length_prefix.endian",
        "expected `big` or `little`",
    );
    check(
        "[{ tcp: 127.0.0.1:7, length_prefix: { endian: big } }]",
        "scenarios[0].steps[0].length_prefix",
        "missing key `bytes`",
    );
    check(
        "[{ tcp: 127.0.0.1:7, length_prefix: { bytes: 2, include_prefix: true } }]",
        "scenarios[0].steps[0].length_prefix.include_prefix",
        "did you mean `includes_prefix`?",
    );
    check(
        "[{ tcp: 127.0.0.1:7, idle: 0s }]",
        "scenarios[0].steps[0].idle",
        "e.g. `idle: 200ms`",
    );
    check(
        "[{ tcp: 127.0.0.1:7, until_close: false }]",
        "scenarios[0].steps[0].until_close",
        "`reply: none`",
    );
    check(
        "[{ tcp: 127.0.0.1:7, reply: always }]",
        "scenarios[0].steps[0].reply",
        "expected `none`",
    );
    check(
        "[{ tcp: 127.0.0.1:7, idel: 1s }]",
        "scenarios[0].steps[0].idel",
        "did you mean `idle`?",
    );
}

#[test]
fn send_file_is_checked_when_the_plan_loads() {
    let plan = load("[{ tcp: 127.0.0.1:7, send_file: Cargo.toml, until: \"\\n\" }]")
        .unwrap_or_else(|e| panic!("{e}"));
    match &spec(&plan).send {
        Some(onrush_plan::TcpPayload::File(p)) => assert!(p.ends_with("Cargo.toml")),
        other => panic!("{other:?}"),
    }
    check(
        "[{ tcp: 127.0.0.1:7, send_file: missing.bin }]",
        "scenarios[0].steps[0].send_file",
        "does not exist; expected a file to send as the payload",
    );
    check(
        "[{ tcp: 127.0.0.1:7, send: x, send_file: Cargo.toml }]",
        "scenarios[0].steps[0].send_file",
        "`send` and `send_file` are both given; expected one payload per step",
    );
}
