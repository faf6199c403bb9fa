//! `http.source_addresses` and `http.close`: the settings against the ephemeral-port wall.
use crate::common;

use std::net::IpAddr;

use common::{err, ok};
use onrush_plan::*;

fn plan(http: &str, scenario_http: &str) -> String {
    format!(
        "target: http://127.0.0.1:8080\nhttp:\n{http}scenarios:\n  - name: a\n    load: {{ vus: 1, iterations: 1 }}\n{scenario_http}    steps: [{{ get: / }}]\n  - name: b\n    load: {{ vus: 1, iterations: 1 }}\n    steps: [{{ get: / }}]\n"
    )
}

fn ips(v: &[&str]) -> Vec<IpAddr> {
    v.iter().map(|s| s.parse().unwrap()).collect()
}

#[test]
fn defaults() {
    let p = ok(&plan("  timeout: 5s\n", ""));
    assert!(p.http.source_addresses.is_empty());
    assert_eq!(p.http.close, CloseMode::Auto);
    assert_eq!(
        p.http.close_mode(),
        CloseMode::Normal,
        "per_vu: onrush closes"
    );
    assert_eq!(HttpSettings::default().close, CloseMode::Auto);
    assert_eq!(CloseMode::Reset.as_str(), "reset");
}

#[test]
fn auto_asks_the_server_to_close_only_connections_used_once() {
    // per_request: the server closes first (`Connection: close`), as k6 and JMeter do.
    let p = ok(&plan(
        "  connections: per_request
",
        "",
    ));
    assert_eq!(p.http.close_mode(), CloseMode::Server);
    assert_eq!(p.scenarios[1].http.close_mode(), CloseMode::Server);
    // A scenario that reuses its connections resolves `auto` for its own scope.
    let p = ok(&plan(
        "  connections: per_request
",
        "    http: { connections: per_iteration }
",
    ));
    assert_eq!(p.scenarios[0].http.close_mode(), CloseMode::Normal);
    assert_eq!(p.scenarios[1].http.close_mode(), CloseMode::Server);
    // Written modes are kept whatever the scope.
    for (http, mode) in [
        (
            "  connections: per_request\n  close: normal\n",
            CloseMode::Normal,
        ),
        (
            "  connections: per_request\n  close: reset\n",
            CloseMode::Reset,
        ),
        (
            "  connections: per_request\n  close: server\n",
            CloseMode::Server,
        ),
        (
            "  connections: per_iteration\n  close: auto\n",
            CloseMode::Normal,
        ),
    ] {
        assert_eq!(ok(&plan(http, "")).http.close_mode(), mode, "{http}");
    }
}

#[test]
fn lists_ranges_and_blocks_expand() {
    let p = ok(&plan(
        "  source_addresses: [\"127.0.0.2\", \"127.0.0.3\"]\n  close: reset\n",
        "",
    ));
    assert_eq!(p.http.source_addresses, ips(&["127.0.0.2", "127.0.0.3"]));
    assert_eq!(p.http.close, CloseMode::Reset);
    // Scenarios inherit the plan level.
    assert_eq!(
        p.scenarios[1].http.source_addresses,
        p.http.source_addresses
    );
    assert_eq!(p.scenarios[1].http.close, CloseMode::Reset);

    let p = ok(&plan("  source_addresses: \"127.0.0.2-127.0.0.254\"\n", ""));
    assert_eq!(p.http.source_addresses.len(), 253);
    assert_eq!(
        p.http.source_addresses[0],
        "127.0.0.2".parse::<IpAddr>().unwrap()
    );
    assert_eq!(
        p.http.source_addresses[252],
        "127.0.0.254".parse::<IpAddr>().unwrap()
    );

    let p = ok(&plan("  source_addresses: 127.0.1.0/24\n", ""));
    assert_eq!(
        p.http.source_addresses.len(),
        254,
        "network and broadcast left out"
    );
    assert_eq!(
        p.http.source_addresses[0],
        "127.0.1.1".parse::<IpAddr>().unwrap()
    );

    let p = ok(&plan(
        "  source_addresses:\n    - 127.0.0.2\n    - 127.0.2.0/30\n    - 127.0.3.1-127.0.3.2\n",
        "",
    ));
    assert_eq!(
        p.http.source_addresses,
        ips(&[
            "127.0.0.2",
            "127.0.2.1",
            "127.0.2.2",
            "127.0.3.1",
            "127.0.3.2"
        ])
    );

    // The cap: 65,536 addresses.
    let p = ok(&plan(
        "  source_addresses: [10.0.0.0/16, 10.1.0.0-10.1.0.1]\n",
        "",
    ));
    assert_eq!(p.http.source_addresses.len(), 65_536);
}

#[test]
fn ipv6_with_an_ipv6_target() {
    let text = "target: http://[::1]:8080\nhttp: { source_addresses: [\"fd00::10\", \"fd00::20-fd00::21\", \"fd00:1::/126\"] }\nscenarios: [{ name: s, load: { vus: 1, iterations: 1 }, steps: [{ get: / }] }]\n";
    let p = ok(text);
    assert_eq!(
        p.http.source_addresses,
        ips(&[
            "fd00::10",
            "fd00::20",
            "fd00::21",
            "fd00:1::",
            "fd00:1::1",
            "fd00:1::2",
            "fd00:1::3"
        ])
    );
    // A host name target: no family to check against.
    let text = text.replace("[::1]", "localhost");
    assert_eq!(ok(&text).http.source_addresses.len(), 7);
}

#[test]
fn scenario_level_overrides() {
    let p = ok(&plan(
        "  source_addresses: [127.0.0.2]\n",
        "    http: { source_addresses: [127.0.0.5, 127.0.0.6], close: reset }\n",
    ));
    assert_eq!(
        p.scenarios[0].http.source_addresses,
        ips(&["127.0.0.5", "127.0.0.6"])
    );
    assert_eq!(p.scenarios[0].http.close, CloseMode::Reset);
    assert_eq!(p.scenarios[1].http.source_addresses, ips(&["127.0.0.2"]));
    assert_eq!(p.scenarios[1].http.close, CloseMode::Auto);
    // An empty list switches binding off for one scenario.
    let p = ok(&plan(
        "  source_addresses: [127.0.0.2]\n",
        "    http: { source_addresses: [] }\n",
    ));
    assert!(p.scenarios[0].http.source_addresses.is_empty());
    assert_eq!(p.scenarios[1].http.source_addresses.len(), 1);
}

#[track_caller]
fn check(text: &str, line: usize, field: &str, expected: &[&str]) {
    let e = err(text);
    let shown = e.to_string();
    assert_eq!(e.line(), Some(line), "wrong line in:\n{shown}");
    assert!(shown.starts_with(&format!("plan.yaml:{line}:")), "{shown}");
    assert_eq!(e.field(), field, "wrong field in:\n{shown}");
    for x in expected {
        assert!(shown.contains(x), "expected {x:?} in:\n{shown}");
    }
    assert!(shown.contains('^'), "no caret in:\n{shown}");
}

#[test]
fn errors() {
    check(
        &plan("  source_addresses: [127.0.0.2, localhost]\n", ""),
        3,
        "http.source_addresses[1]",
        &["`localhost` is not an IP address", "names are not resolved"],
    );
    check(
        &plan(
            "  source_addresses:\n    - 127.0.0.2\n    - 127.0.0.300\n",
            "",
        ),
        5,
        "http.source_addresses[1]",
        &["`127.0.0.300` is not an IP address"],
    );
    check(
        &plan("  source_addresses: 10.0.0.0/8\n", ""),
        3,
        "http.source_addresses",
        &["more than 65536 source addresses"],
    );
    check(
        &plan("  source_addresses: [10.0.0.0/16, 10.1.0.0-10.1.0.2]\n", ""),
        3,
        "http.source_addresses[1]",
        &["more than 65536 source addresses in all"],
    );
    check(
        &plan("  source_addresses: 127.0.1.7/24\n", ""),
        3,
        "http.source_addresses",
        &["host bits set", "write `127.0.1.0/24`"],
    );
    check(
        &plan("  source_addresses: 127.0.0.9-127.0.0.2\n", ""),
        3,
        "http.source_addresses",
        &["ends before it starts", "write `127.0.0.2-127.0.0.9`"],
    );
    check(
        &plan("  source_addresses: [127.0.0.2, 127.0.0.1-127.0.0.3]\n", ""),
        3,
        "http.source_addresses[1]",
        &["127.0.0.2 is listed twice"],
    );
    check(
        &plan("  source_addresses: [\"::1\"]\n", ""),
        3,
        "http.source_addresses[0]",
        &["::1 is IPv6 but the target 127.0.0.1 is IPv4"],
    );
    check(
        "target: http://localhost:8080\nhttp: { source_addresses: [127.0.0.2, \"::2\"] }\nscenarios: [{ name: s, load: { vus: 1, iterations: 1 }, steps: [{ get: / }] }]\n",
        2,
        "http.source_addresses[1]",
        &["::2 is IPv6 but 127.0.0.2 is IPv4", "one family"],
    );
    check(
        &plan("  source_addresses: [0.0.0.0]\n", ""),
        3,
        "http.source_addresses[0]",
        &["the unspecified address", "leave `source_addresses` out"],
    );
    check(
        &plan("  source_addresses: [224.0.0.1]\n", ""),
        3,
        "http.source_addresses[0]",
        &["a multicast address"],
    );
    check(
        &plan("  source_addresses: { a: 1 }\n", ""),
        3,
        "http.source_addresses",
        &["expected a list of source addresses, found a mapping"],
    );
    check(
        &plan("  close: rst\n", ""),
        3,
        "http.close",
        &[
            "unknown close mode \"rst\"; expected `auto`, `normal`, `server` or `reset`",
            "did you mean `reset`?",
        ],
    );
    check(
        &plan("  close: abrupt\n", ""),
        3,
        "http.close",
        &["expected `auto`, `normal`, `server` or `reset`", "RST"],
    );
    // `server` would make every reused connection a connection per request.
    check(
        &plan("  close: server
", ""),
        3,
        "http.close",
        &[
            "`close: server` asks the server to close after every request, but `connections: per_vu` reuses connections",
            "use `connections: per_request` beside `close: server`",
        ],
    );
    check(
        &plan(
            "  connections: per_request
  close: server
",
            "    http: { connections: shared }
",
        ),
        8,
        "scenarios[0].http.connections",
        &["but `connections: shared` reuses connections"],
    );
    check(
        &plan(
            "  timeout: 5s\n",
            "    http: { source_adresses: [127.0.0.2] }\n",
        ),
        7,
        "scenarios[0].http.source_adresses",
        &["did you mean `source_addresses`?"],
    );
    check(
        &plan(
            "  timeout: 5s\n",
            "    http: { source_addresses: [\"::1\"] }\n",
        ),
        7,
        "scenarios[0].http.source_addresses[0]",
        &["the target 127.0.0.1 is IPv4"],
    );
}
