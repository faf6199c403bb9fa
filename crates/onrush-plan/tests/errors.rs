//! Bad plans: every error names the line, the field and the fix.
use crate::common;

use common::{err, load, load_env, scenario, EXAMPLE};

/// Asserts the error is at `line`, names `field`, and its text (message + hint) contains `fix`.
#[track_caller]
fn check(text: &str, line: usize, field: &str, fix: &str) -> String {
    let e = err(text);
    let shown = e.to_string();
    assert_eq!(e.line(), Some(line), "wrong line in:\n{shown}");
    assert!(
        shown.starts_with(&format!("plan.yaml:{line}:")),
        "no FILE:LINE: prefix in:\n{shown}"
    );
    assert_eq!(e.field(), field, "wrong field in:\n{shown}");
    assert!(
        shown.contains(&format!(": {field}: ")) || field.is_empty(),
        "field not shown in:\n{shown}"
    );
    assert!(shown.contains(fix), "expected {fix:?} in:\n{shown}");
    assert!(shown.contains('^'), "no caret in:\n{shown}");
    assert!(
        !shown.contains("Error(") && !shown.contains("invalid type:"),
        "raw serde text in:\n{shown}"
    );
    shown
}

#[test]
fn misspelled_load_key() {
    let s = check(
        &scenario("{ vus: 2, iteratons: 25 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.iteratons",
        "did you mean `iterations`?",
    );
    assert!(s.contains("expected `vus`, `iterations`"), "{s}");
    assert!(s.contains("plan.yaml:4:21:"), "{s}");
}

#[test]
fn misspelled_method_key() {
    let text = "target: builtin\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - methd: GET\n        path: /\n";
    check(text, 6, "scenarios[0].steps[0].methd", "`- { post: /echo");
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ gett: / }]"),
        5,
        "scenarios[0].steps[0].gett",
        "did you mean `get`?",
    );
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ GET: / }]"),
        5,
        "scenarios[0].steps[0].GET",
        "write `get:`",
    );
    check(
        &scenario(
            "{ vus: 1, iterations: 1 }",
            "[{ get: /, hedaers: { A: b } }]",
        ),
        5,
        "scenarios[0].steps[0].hedaers",
        "did you mean `headers`?",
    );
}

#[test]
fn misspelled_top_level_key() {
    check(
        "target: builtin\nscenario: []\n",
        2,
        "scenario",
        "did you mean `scenarios`?",
    );
}

#[test]
fn duration_without_unit() {
    let s = check(
        &scenario("{ vus: 2, duration: 30 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.duration",
        "write `30s`",
    );
    assert!(s.contains("has no unit; expected a duration"), "{s}");
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ think: 10 }]"),
        5,
        "scenarios[0].steps[0].think",
        "`10ms`",
    );
    check(
        "target: builtin\nhttp: { timeout: 5 sec }\nscenarios: []\n",
        2,
        "http.timeout",
        "`sec` is not a unit",
    );
}

#[test]
fn a_duration_too_long_says_so() {
    // Was "write a number such as 1.5s" for a number that is perfectly written.
    let s = check(
        &scenario("{ vus: 2, duration: 99999999999999h }", "[{ get: / }]"),
        4,
        "scenarios[0].load.duration",
        "the longest duration is a year",
    );
    assert!(s.contains("longer than a year"), "{s}");
    assert!(!s.contains("write a number"), "{s}");
}

#[test]
fn yaml_anchor_and_nesting_errors_name_their_cause() {
    // Both hinted "check the indentation" before.
    let unknown = err("target: builtin\nvars: { a: *nowhere }\nscenarios: []\n").to_string();
    assert!(unknown.contains("anchor (`&name`)"), "{unknown}");
    assert!(!unknown.contains("indentation"), "{unknown}");
    let deep = format!(
        "target: builtin\nvars: {{ a: {}1{} }}\nscenarios: []\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let nested = err(&deep).to_string();
    assert!(nested.contains("nested more than 64 levels"), "{nested}");
    assert!(!nested.contains("indentation"), "{nested}");
}

#[test]
fn unknown_variable() {
    let text = "target: builtin\nvars: { vus: 4 }\nscenarios:\n  - name: s\n    load: { vus: \"${vsu}\", iterations: 1 }\n    steps: [{ get: / }]\n";
    let s = check(text, 5, "scenarios[0].load.vus", "did you mean `${vus}`?");
    assert!(
        s.contains("plan.yaml:5:19:"),
        "the column points at the reference: {s}"
    );
    check(
        "target: http://127.0.0.1:${PORT}\nscenarios: []\n",
        1,
        "target",
        "-D PORT=VALUE",
    );
}

#[test]
fn open_model_without_max_vus() {
    check(
        &scenario("{ rate: 200/s, duration: 5s }", "[{ get: / }]"),
        4,
        "scenarios[0].load",
        "add e.g. `max_vus: 100`",
    );
}

#[test]
fn open_model_warm_up_bad_values() {
    check(
        &scenario(
            "{ rate: 200/s, duration: 5s, max_vus: 10, warm_up: yes }",
            "[{ get: / }]",
        ),
        4,
        "scenarios[0].load.warm_up",
        "`warm_up: true` (the default)",
    );
    let e = err(&scenario(
        "{ rate: 200/s, duration: 5s, max_vus: 10, warm_up: 11 }",
        "[{ get: / }]",
    ));
    assert!(e.to_string().contains("more than `max_vus: 10`"), "{e}");
    check(
        &scenario("{ vus: 2, duration: 5s, warm_up: true }", "[{ get: / }]"),
        4,
        "scenarios[0].load.warm_up",
        "cannot be combined with `vus`",
    );
}

#[test]
fn target_without_scheme() {
    check(
        "target: 127.0.0.1:8080\nscenarios: []\n",
        1,
        "target",
        "http://127.0.0.1:8080",
    );
    check(
        "target: http://127.0.0.1:99999\nscenarios: []\n",
        1,
        "target",
        "1..65535",
    );
    check(
        "target: ftp://x\nscenarios: []\n",
        1,
        "target",
        "`http://127.0.0.1:8080`",
    );
}

#[test]
fn missing_body_file() {
    let s = check(
        &scenario(
            "{ vus: 1, iterations: 1 }",
            "[{ post: /x, body_file: no/such/file.json }]",
        ),
        5,
        "scenarios[0].steps[0].body_file",
        "relative to the plan file's directory",
    );
    assert!(s.contains("no/such/file.json does not exist"), "{s}");
}

#[test]
fn duplicate_scenario_name() {
    let text = "target: builtin\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    steps: [{ get: / }]\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    steps: [{ get: / }]\n";
    check(
        text,
        6,
        "scenarios[1].name",
        "scenarios[0] is already named \"a\"; rename one",
    );
}

#[test]
fn iterations_and_duration() {
    let s = check(
        &scenario("{ vus: 2, iterations: 5, duration: 10s }", "[{ get: / }]"),
        4,
        "scenarios[0].load.duration",
        "Keep one",
    );
    assert!(
        s.contains("`duration` cannot be combined with `iterations`"),
        "{s}"
    );
}

#[test]
fn zero_vus() {
    check(
        &scenario("{ vus: 0, iterations: 5 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.vus",
        "at least 1",
    );
    check(
        &scenario("{ vus: many, iterations: 5 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.vus",
        "e.g. `vus: 10`",
    );
}

#[test]
fn empty_steps() {
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[]"),
        5,
        "scenarios[0].steps",
        "add e.g. `- { get: / }`",
    );
    let text = "target: builtin\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n";
    check(text, 3, "scenarios[0]", "add `steps:`");
}

#[test]
fn closed_and_open_mixed() {
    let s = check(
        &scenario("{ vus: 2, rate: 10/s, duration: 5s }", "[{ get: / }]"),
        4,
        "scenarios[0].load.rate",
        "open model: new iterations start at a fixed `rate`",
    );
    assert!(s.contains("closed model: `vus` virtual users"), "{s}");
    check(
        &scenario("{ rate: 10/s, iterations: 5, max_vus: 3 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.iterations",
        "closed model",
    );
    check(
        &scenario(
            "{ stages: [{ vus: 5, over: 5s }, { rate: 5/s, over: 5s }] }",
            "[{ get: / }]",
        ),
        4,
        "scenarios[0].load.stages[1].rate",
        "open model",
    );
    let steps = "[{ get: / }]";
    check(
        &scenario(
            "{ start_vus: 2, stages: [{ rate: 5/s, over: 5s }], max_vus: 2 }",
            steps,
        ),
        4,
        "scenarios[0].load.max_vus",
        "open model",
    );
    check(
        &scenario("{ start_vus: 2, stages: [{ rate: 5/s, over: 5s }] }", steps),
        4,
        "scenarios[0].load.start_vus",
        "open model",
    );
    check(
        &scenario("{ start_rate: 2/s, stages: [{ vus: 5, over: 5s }] }", steps),
        4,
        "scenarios[0].load.stages[0].vus",
        "closed model",
    );
}

#[test]
fn yaml_bad_indentation() {
    let text = "target: builtin\nscenarios:\n  - name: s\n   load: { vus: 1, iterations: 1 }\n    steps: [{ get: / }]\n";
    check(text, 4, "", "check the indentation");
}

#[test]
fn yaml_unclosed_brace_and_quote() {
    let text = "target: builtin\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1\n    steps: [{ get: / }]\n";
    let s = check(text, 5, "", "the `{` at line 4 column 11 is not closed");
    assert!(s.contains("invalid YAML"), "{s}");
    let text = "target: \"http://x:80\nscenarios: []\n";
    check(text, 2, "", "quoted string is closed");
}

#[test]
fn path_without_slash() {
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ get: users }]"),
        5,
        "scenarios[0].steps[0].get",
        "write `/users`",
    );
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ get: /a b }]"),
        5,
        "scenarios[0].steps[0].get",
        "%20",
    );
}

#[test]
fn runtime_values_outside_requests() {
    check(
        &scenario("{ vus: \"${vu}\", iterations: 1 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.vus",
        "use a plan variable",
    );
    check(
        &scenario(
            "{ vus: 1, iterations: 1 }",
            "[{ name: \"n${iteration}\", get: / }]",
        ),
        5,
        "scenarios[0].steps[0].name",
        "use a plan variable",
    );
    check(
        &scenario(
            "{ vus: 1, iterations: 1 }",
            "[{ get: \"http://h${vu}:80/\" }]",
        ),
        5,
        "scenarios[0].steps[0].get",
        "only the path, query, headers and body",
    );
    check(
        "target: builtin\nvars: { vu: 3 }\nscenarios: []\n",
        2,
        "vars.vu",
        "always available",
    );
}

#[test]
fn bad_connection_scope() {
    check(
        "target: builtin\nhttp:\n  connections: per_vus\nscenarios: []\n",
        3,
        "http.connections",
        "did you mean `per_vu`?",
    );
}

#[test]
fn two_method_keys() {
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ get: /a, post: /b }]"),
        5,
        "scenarios[0].steps[0].post",
        "make each request its own step",
    );
}

#[test]
fn ramp_up_not_shorter_than_duration() {
    check(
        &scenario("{ vus: 2, duration: 10s, ramp_up: 10s }", "[{ get: / }]"),
        4,
        "scenarios[0].load.ramp_up",
        "the duration includes the ramp-up",
    );
}

#[test]
fn bad_status_and_think_range() {
    check(
        &scenario(
            "{ vus: 1, iterations: 1 }",
            "[{ get: /, expect_status: [200, 700] }]",
        ),
        5,
        "scenarios[0].steps[0].expect_status[1]",
        "100..599",
    );
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ think: 3s..1s }]"),
        5,
        "scenarios[0].steps[0].think",
        "write `1s..3s`",
    );
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ think: 1s, name: x }]"),
        5,
        "scenarios[0].steps[0].name",
        "only the `think:` key",
    );
}

#[test]
fn both_body_and_body_file() {
    check(
        &scenario(
            "{ vus: 1, iterations: 1 }",
            "[{ post: /, body: x, body_file: Cargo.toml }]",
        ),
        5,
        "scenarios[0].steps[0].body_file",
        "keep `body:`",
    );
}

#[test]
fn missing_and_misplaced_load() {
    check(
        &scenario("{}", "[{ get: / }]"),
        4,
        "scenarios[0].load",
        "e.g. `load: { vus: 10",
    );
    check(
        &scenario("{ vus: 3 }", "[{ get: / }]"),
        4,
        "scenarios[0].load",
        "add `iterations: 100`",
    );
    check(
        &scenario("{ vus: 3, duration: 5s, max_vus: 4 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.max_vus",
        "open model",
    );
    check(
        &scenario("{ rate: 0/s, duration: 5s, max_vus: 4 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.rate",
        "use `stages`",
    );
}

#[test]
fn vars_problems() {
    check(
        "target: builtin\nvars:\n  a: ${b}\n  b: ${a}\nscenarios: []\n",
        3,
        "vars.a",
        "cycle",
    );
    check(
        "target: builtin\nvars:\n  list: [1, 2]\nscenarios: []\n",
        3,
        "vars.list",
        "expected a text, number or boolean",
    );
    check(
        "target: builtin\nvars:\n  bad-name: 1\nscenarios: []\n",
        3,
        "vars.bad-name",
        "letters, digits and `_`",
    );
    check(
        "target: builtin\nvars: { x: \"${\" }\nscenarios: []\n",
        2,
        "vars.x",
        "write `$${` for a literal",
    );
    let e = load_env(EXAMPLE, &[], &[("not a name", "1")]).unwrap_err();
    assert!(
        e.to_string()
            .contains("-D not a name: `not a name` is not a valid variable name"),
        "{e}"
    );
    assert_eq!(e.line(), None);
}

#[test]
fn empty_and_non_mapping_files() {
    for text in ["", "# only a comment\n", "---\n"] {
        let e = load(text).unwrap_err();
        assert_eq!(e.line(), Some(1), "{e}");
        assert!(
            e.to_string()
                .contains("the plan is empty; expected a mapping with `target:` and `scenarios:`"),
            "{e}"
        );
    }
    check("- a\n- b\n", 1, "", "a plan file starts with keys");
    check("just text\n", 1, "", "a plan file starts with keys");
    check(
        "target: builtin\nscenarios: []\n---\ntarget: builtin\n",
        3,
        "",
        "one document",
    );
    check(
        "target: builtin\ntarget: builtin\n",
        2,
        "",
        "remove one of the two",
    );
    check("target: builtin\n", 1, "", "add `scenarios:` to the plan");
    check(
        "target: builtin\nscenarios: []\n",
        2,
        "scenarios",
        "add `- { name: main",
    );
}

#[test]
fn hostile_input_hits_budgets_not_memory_or_stack() {
    // "Billion laughs": each level doubles; the node budget stops it.
    let mut text = String::from("a0: &a0 [x, x]\n");
    for i in 1..40 {
        text.push_str(&format!("a{i}: &a{i} [*a{}, *a{}]\n", i - 1, i - 1));
    }
    let e = load(&text).unwrap_err();
    assert!(e.to_string().contains("YAML nodes"), "{e}");
    // Deep nesting.
    let deep = format!("target: {}x{}\n", "[".repeat(10_000), "]".repeat(10_000));
    let e = load(&deep).unwrap_err();
    assert!(e.line().is_some(), "{e}");
    let deep_block: String = (0..500)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    assert!(load(&deep_block).is_err());
}

const RICH: &str = r#"target: http://127.0.0.1:8080/api
vars: { user: alice, n: 3 }
http: { timeout: 2s, connections: per_iteration }
scenarios:
  - name: ramp
    load:
      start_vus: 1
      stages: [{ vus: 5, over: 1s }, { vus: 0, over: 1s }]
    steps:
      - name: login
        post: /login
        headers: { Content-Type: application/json, X-U: "${user}-${vu}" }
        body: '{"user": "${user}", "it": ${iteration}}'
        expect_status: [200, 201]
      - loop: { count: "${n}", steps: [{ get: "/items?page=${iteration}" }, { think: 1ms..2ms }] }
  - name: arrivals
    load: { start_rate: 1/s, stages: [{ rate: 10/s, over: 2s }], max_vus: 4 }
    steps: [{ get: "http://127.0.0.1:9/x", timeout: 1s }]
"#;

/// Thresholds and the port-wall settings, for the mangling sweep.
const SLA: &str = r#"target: http://127.0.0.1:8080
http: { source_addresses: ["127.0.0.2", "127.0.1.0/30", "127.0.2.1-127.0.2.3"], close: reset }
thresholds:
  - "p99 < 100ms"
  - "closed/GET /x?a=b: p99.9 <= 1.5s"
  - home: failure_rate < 1%
  - generator: healthy
  - { threshold: "rate > 7000/s", abort_on_fail: true, grace: 10s }
scenarios:
  - name: closed
    load: { vus: 1, iterations: 1 }
    thresholds: ["p90 < 20ms", "home: ttfb_p75 != 2us"]
    steps: [{ name: home, get: / }, { get: "/x?a=b" }]
"#;

#[test]
fn never_panics_on_truncated_or_mangled_plans() {
    for plan in [RICH, SLA] {
        if let Err(e) = load(plan) {
            panic!("{e}");
        }
    }
    let junks = [
        "{", "]", "\"", "'", ":", "-", "\t", "${", "&a", "*a", "\n  ", "!!", "|", "%", "<<: ",
    ];
    let mut checked = 0;
    for plan in [EXAMPLE, RICH, SLA] {
        for cut in (0..=plan.len()).filter(|c| plan.is_char_boundary(*c)) {
            if let Err(e) = load(&plan[..cut]) {
                assert!(e.line().is_some(), "{e}");
            }
            for junk in junks {
                let mangled = format!("{}{junk}{}", &plan[..cut], &plan[cut..]);
                if let Err(e) = load(&mangled) {
                    let shown = e.to_string();
                    assert!(shown.starts_with("plan.yaml:"), "{shown}");
                    assert!(e.line().is_some(), "{shown}");
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 1000);
}

#[test]
fn unquoted_template_in_flow_style() {
    let text = "target: builtin\nvars: { vus: 3 }\nscenarios:\n  - name: s\n    load: { vus: ${vus}, iterations: 1 }\n    steps: [{ get: / }]\n";
    check(text, 5, "", "quote values that contain `${...}`");
    // In block style no quotes are needed.
    let text = "target: builtin\nvars: { vus: 3 }\nscenarios:\n  - name: s\n    load:\n      vus: ${vus}\n      iterations: 1\n    steps:\n      - get: /x/${vu}\n";
    let p = load(text).unwrap();
    assert_eq!(p.scenarios[0].load.max_vus(), 3);
}

#[test]
fn any_method_needs_a_token_and_a_path_and_no_method_key() {
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ method: PURGE }]"),
        5,
        "scenarios[0].steps[0]",
        "without `path:`",
    );
    check(
        &scenario("{ vus: 1, iterations: 1 }", "[{ path: /x }]"),
        5,
        "scenarios[0].steps[0]",
        "`path:` without `method:`",
    );
    check(
        &scenario(
            "{ vus: 1, iterations: 1 }",
            "[{ method: \"PUR GE\", path: /x }]",
        ),
        5,
        "scenarios[0].steps[0].method",
        "is not an HTTP method",
    );
    check(
        &scenario(
            "{ vus: 1, iterations: 1 }",
            "[{ get: /a, method: PURGE, path: /x }]",
        ),
        5,
        "scenarios[0].steps[0].get",
        "expected one way to give the method",
    );
}

#[test]
fn graceful_stop_without_a_duration() {
    let s = check(
        &scenario(
            "{ vus: 2, iterations: 5, graceful_stop: 5s }",
            "[{ get: / }]",
        ),
        4,
        "scenarios[0].load.graceful_stop",
        "give the load a `duration` instead of `iterations`",
    );
    assert!(s.contains("ends when its iterations are done"), "{s}");
    check(
        &scenario("{ vus: 2, duration: 5s, graceful_stop: 5 }", "[{ get: / }]"),
        4,
        "scenarios[0].load.graceful_stop",
        "write `5s`",
    );
}

#[test]
fn a_plan_without_target_needs_full_urls_in_its_http_steps() {
    // Steps that name their own servers need no `target:`.
    let text = "scenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { tcp: 127.0.0.1:9, send: x, until: \"\\n\" }\n      - { get: \"http://127.0.0.1:8080/health\" }\n";
    let plan =
        common::load(text).expect("a plan without target whose steps name their servers loads");
    assert_eq!(plan.target, onrush_plan::Target::None);
    // A bare path has nowhere to go: the error is at the step, with both fixes.
    check(
        "scenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { get: /health }\n",
        5,
        "scenarios[0].steps[0].get",
        "add `target: http://host:port`",
    );
}

#[test]
fn a_step_that_is_no_step_lists_every_kind_this_build_has() {
    // The hint lists onrush-plan's own steps, then each protocol's as its grammar writes it.
    let shown = check(
        &scenario("{ vus: 1, iterations: 1 }", "[ 42 ]"),
        5,
        "scenarios[0].steps[0]",
        "expected a step (a mapping)",
    );
    for kind in [
        "`{ get: /path }`",
        "`{ think: 1s }`",
        "`{ tcp: HOST:PORT, send, until }`",
        "`{ exec: [program, arg...] }`",
    ] {
        assert!(shown.contains(kind), "{kind} missing in:\n{shown}");
    }
    assert!(
        shown.contains(" or `{"),
        "the last kind after `or` in:\n{shown}"
    );
}
