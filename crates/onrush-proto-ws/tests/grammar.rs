//! `ws:` steps: each action compiles to its shape, and a bad one is an error naming the line,
//! the field and the fix.
use std::path::Path;

use onrush_plan::testing::{assert_step_error, load_steps};
use onrush_plan::{Grammars, Step};
use onrush_proto_ws::{WsAction, WsGrammar, WsPayload, WsSpec};

/// This crate's folder (the plan's).
fn here() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The actions of the steps, in order.
fn actions(steps: &str) -> Vec<WsAction> {
    let plan =
        load_steps(&Grammars::only(WsGrammar), here(), steps).unwrap_or_else(|e| panic!("{e}"));
    plan.scenarios[0]
        .steps
        .iter()
        .map(|s| match s {
            Step::Custom(step) => step.spec::<WsSpec>().expect("a ws step").action.clone(),
            other => panic!("not a ws step: {other:?}"),
        })
        .collect()
}

/// Asserts the error is at line 5 (the steps' line), names `field`, contains `fix` and has a
/// hint.
#[track_caller]
fn check(steps: &str, field: &str, fix: &str) -> String {
    let shown = assert_step_error(&Grammars::only(WsGrammar), here(), steps, field, fix);
    assert!(shown.contains("hint:"), "no hint in:\n{shown}");
    shown
}

const CONNECT: &str = "{ ws: connect, url: \"wss://example.com:8443/chat?u=${vu}\", \
    headers: { X-Token: t }, subprotocols: [chat.v1, chat.v2], max_message: 4096 }";

#[test]
fn every_action_compiles() {
    let steps = format!(
        "[{CONNECT}, {{ ws: send, text: \"hi ${{vu}}\", await: {{ match: \"hi (\\\\d+)\", \
         timeout: 2s }} }}, {{ ws: send, binary_hex: \"DE AD\" }}, {{ ws: receive, count: 3 }}, \
         {{ ws: ping }}, {{ ws: close, code: 4000 }}, {{ ws: close }}]"
    );
    let a = actions(&steps);
    let WsAction::Connect(c) = &a[0] else {
        panic!("{:?}", a[0])
    };
    assert!(c.tls);
    assert_eq!((c.host.as_str(), c.port), ("example.com", 8443));
    assert_eq!(c.subprotocols, ["chat.v1", "chat.v2"]);
    assert_eq!(c.headers.len(), 1);
    assert_eq!(c.max_message, 4096);
    assert!(
        c.deflate,
        "permessage-deflate is offered unless `compression: none`"
    );
    let WsAction::Send {
        payload: WsPayload::Text(_),
        until: Some(until),
    } = &a[1]
    else {
        panic!("{:?}", a[1])
    };
    assert!(until.pattern.is_some());
    assert_eq!(until.timeout, Some(std::time::Duration::from_secs(2)));
    assert!(matches!(
        &a[2],
        WsAction::Send { payload: WsPayload::Binary(b), until: None } if b == &[0xde, 0xad]
    ));
    assert!(matches!(&a[3], WsAction::Receive(u) if u.count == 3 && u.pattern.is_none()));
    assert_eq!(a[4], WsAction::Ping);
    assert_eq!(a[5], WsAction::Close { code: 4000 });
    assert_eq!(a[6], WsAction::Close { code: 1000 });
    // The default port of the scheme, and a path of "/" when none is given.
    let a = actions("[{ ws: connect, url: \"ws://h\" }]");
    assert!(matches!(&a[0], WsAction::Connect(c) if c.port == 80 && !c.tls));
    let a = actions("[{ ws: connect, url: \"ws://h\", compression: none }]");
    assert!(matches!(&a[0], WsAction::Connect(c) if !c.deflate));
}

#[test]
fn a_url_that_is_not_ws_is_an_error() {
    check(
        "[{ ws: connect, url: \"http://127.0.0.1:8765/chat\" }]",
        "scenarios[0].steps[0].url",
        "expected a ws:// or wss:// URL",
    );
    let s = check(
        "[{ ws: connect, url: \"https://example.com/chat\" }]",
        "scenarios[0].steps[0].url",
        "wss://",
    );
    assert!(s.contains("for TLS"), "{s}");
    check(
        "[{ ws: connect, url: \"ws://h${vu}:80/chat\" }]",
        "scenarios[0].steps[0].url",
        "per-request value",
    );
}

#[test]
fn an_unknown_action_is_an_error() {
    let s = check(
        "[{ ws: sned, text: hi }]",
        "scenarios[0].steps[0].ws",
        "unknown WebSocket action \"sned\"",
    );
    assert!(s.contains("did you mean `ws: send`?"), "{s}");
}

#[test]
fn connect_needs_a_url() {
    check(
        "[{ ws: connect, subprotocols: [chat.v1] }]",
        "scenarios[0].steps[0]",
        "missing key `url`",
    );
}

#[test]
fn other_mistakes_are_errors() {
    // A key of another action.
    check(
        &format!("[{CONNECT}, {{ ws: ping, text: hi }}]"),
        "scenarios[0].steps[1].text",
        "unknown key `text`",
    );
    // Nothing to send, or two things.
    check(
        &format!("[{CONNECT}, {{ ws: send }}]"),
        "scenarios[0].steps[1]",
        "no message given",
    );
    check(
        &format!("[{CONNECT}, {{ ws: send, text: a, binary_hex: \"00\" }}]"),
        "scenarios[0].steps[1].binary_hex",
        "both given",
    );
    check(
        &format!("[{CONNECT}, {{ ws: send, binary_hex: \"0g\" }}]"),
        "scenarios[0].steps[1].binary_hex",
        "not hexadecimal",
    );
    check(
        &format!("[{CONNECT}, {{ ws: receive, match: a, count: 2 }}]"),
        "scenarios[0].steps[1].count",
        "both given",
    );
    let shown = check(
        "[{ ws: connect, url: \"ws://h\", compression: deflat }]",
        "scenarios[0].steps[0].compression",
        "unknown compression \"deflat\"",
    );
    assert!(
        shown.contains("did you mean `compression: deflate`?"),
        "{shown}"
    );
    check(
        "[{ ws: connect, url: \"ws://h\", compression: gzip }]",
        "scenarios[0].steps[0].compression",
        "expected",
    );
    check(
        &format!("[{CONNECT}, {{ ws: close, code: 1005 }}]"),
        "scenarios[0].steps[1].code",
        "reserved",
    );
    // A socket used before any connect: found when the plan loads, not at run time.
    check(
        "[{ ws: send, text: hi }]",
        "scenarios[0].steps[0]",
        "no `ws: connect` before it",
    );
}
