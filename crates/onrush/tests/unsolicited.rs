//! A server that answers each request twice (tests/servers/rogue_http_server.py): the second
//! answer is never taken for the next request's; the requests it spoils fail as
//! `unsolicited_response`, and onrush's counts agree with the server's.

use crate::common::*;

#[test]
fn two_answers_in_one_write_fail_every_request_and_none_counts_as_200() {
    let rogue = RogueServer::start();
    let out = temp_dir("unsolicited-quick");
    // Exit 4: no request succeeded.
    let s = run_expect(
        4,
        &["quick", &rogue.url("/twice/x"), "-n", "60", "-c", "3"],
        &out,
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 60);
    assert_eq!(
        s["totals"]["failures_by_class"],
        serde_json::json!({ "unsolicited_response": 60 }),
        "{s:#}"
    );
    assert_eq!(s["totals"]["status_codes"], serde_json::json!({}), "{s:#}");
    // Every request was sent (each then spoiled by the second answer behind its own).
    assert_eq!(rogue.received(), 60);
}

#[test]
fn a_second_answer_arriving_while_idle_is_never_the_next_requests_answer() {
    let rogue = RogueServer::start();
    let dir = temp_dir("unsolicited-late");
    // The second answer comes 20 ms after the first, while the VU thinks: the next request
    // finds it waiting, is not sent, and fails; the one after goes on a new connection.
    let plan = write_plan(
        &dir,
        &format!(
            r#"
target: {}
scenarios:
  - name: s
    load: {{ vus: 2, iterations: 15 }}
    steps:
      - name: ask
        get: "/twice-later/${{vu}}-${{iteration}}"
        check: [ {{ body_contains: "answer ${{vu}}-${{iteration}}" }} ]
      - think: 80ms
"#,
            rogue.url("")
        ),
    );
    let out = dir.join("out");
    let s = run_expect(0, &["run", plan.to_str().unwrap()], &out);
    let requests = u64_at(&s, "/totals/requests");
    assert_eq!(requests, 30);
    let passes = u64_at(&s, "/totals/checks/passes");
    let spoiled = u64_at(&s, "/totals/failures_by_class/unsolicited_response");
    // No answer was matched to the wrong request: every check that ran passed.
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    assert_eq!(
        s["totals"]["failures_by_class"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["unsolicited_response"],
        "{s:#}"
    );
    assert!(spoiled >= 10, "{spoiled} of {requests}");
    assert_eq!(passes + spoiled, requests);
    // The server received exactly the requests that were answered: the spoiled ones were
    // never sent.
    assert_eq!(rogue.received(), passes, "{s:#}");
}

/// A `bad_response` says why: summary.json keeps the first message of each class, and the
/// printed summary shows it under the class (which byte, what was expected).
#[test]
fn malformed_responses_are_classified_with_their_parse_reason() {
    let rogue = RogueServer::start();
    let out = temp_dir("bad-response-reason");
    let output = onrush()
        .args([
            "quick",
            &rogue.url("/garbage/x"),
            "-n",
            "5",
            "-c",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(
        u64_at(&s, "/totals/failures_by_class/bad_response"),
        5,
        "{s:#}"
    );
    let example = s["failure_examples"]["bad_response"].as_str().unwrap();
    assert!(
        example.contains("not an HTTP/1.x status line") && example.contains("began \"GARBAGE 200"),
        "{example}"
    );
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        printed.contains("first seen: bad response head"),
        "{printed}"
    );

    let out = temp_dir("bad-chunk-reason");
    let s = run_expect(
        4,
        &["quick", &rogue.url("/bad-chunk/x"), "-n", "3", "-c", "1"],
        &out,
    );
    let example = s["failure_examples"]["bad_response"].as_str().unwrap();
    assert!(
        example.contains("invalid chunk size (at byte 'g' (0x67))"),
        "{example}"
    );
}
