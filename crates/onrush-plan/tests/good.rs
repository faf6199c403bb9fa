use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{load, load_env, ok, scenario, EXAMPLE};
use onrush_plan::*;
use onrush_proto_http::{Body, RequestStep};

fn requests(steps: &[Step]) -> Vec<RequestStep> {
    let mut out = Vec::new();
    for s in steps {
        match s {
            Step::Custom(_) => out.extend(RequestStep::of(s)),
            Step::Loop { steps, .. } => out.extend(requests(steps)),
            Step::Think { .. } => {}
            _ => {}
        }
    }
    out
}

fn render(t: &Template, vu: u64, iteration: u64) -> String {
    let vars = Vars::default();
    String::from_utf8(
        t.render_to_vec(&RenderContext::new(vu, iteration, &vars))
            .unwrap(),
    )
    .unwrap()
}

fn metric_names(s: &Scenario) -> Vec<&str> {
    s.metrics.iter().map(|m| m.name.as_str()).collect()
}

#[test]
fn example_loads_with_port_unset() {
    let plan = ok(EXAMPLE);
    assert_eq!(plan.name, "plan");
    assert_eq!(plan.source, Path::new("plan.yaml"));
    assert_eq!(
        plan.target,
        Target::Url(TargetUrl {
            scheme: Scheme::Http,
            host: "127.0.0.1".into(),
            port: 8080,
            base_path: String::new()
        })
    );
    assert_eq!(
        plan.http,
        HttpSettings {
            timeout: Duration::from_secs(5),
            connections: ConnectionScope::PerVu,
            ..HttpSettings::default()
        }
    );
    assert_eq!(plan.vars.get("vus").map(String::as_str), Some("4"));
    assert_eq!(plan.scenarios.len(), 2);

    let closed = &plan.scenarios[0];
    assert_eq!(closed.name, "closed");
    assert_eq!(
        closed.load,
        LoadModel::ClosedIterations {
            vus: 4,
            iterations: 25,
            ramp_up: Duration::ZERO
        }
    );
    assert_eq!(closed.http, plan.http);
    assert_eq!(metric_names(closed), ["home", "bytes", "echo"]);
    let reqs = requests(&closed.steps);
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        (
            reqs[0].method.as_str(),
            render(&reqs[0].path, 1, 0).as_str(),
            reqs[0].metric
        ),
        ("GET", "/", 0)
    );
    assert_eq!(
        (
            reqs[1].method.as_str(),
            render(&reqs[1].path, 1, 0).as_str(),
            reqs[1].metric
        ),
        ("GET", "/bytes/1024", 1)
    );
    assert_eq!((reqs[2].method.as_str(), reqs[2].metric), ("POST", 2));
    let Body::Inline(body) = &reqs[2].body else {
        panic!("inline body expected: {:?}", reqs[2].body)
    };
    assert_eq!(render(body, 3, 7), "vu 3 iteration 7");
    assert!(!body.is_constant());
    assert!(reqs[0].path.is_constant());
    assert_eq!(reqs[0].target, None);
    assert_eq!(reqs[0].timeout, None);
    assert_eq!(reqs[0].expect_status, None);

    let open = &plan.scenarios[1];
    assert_eq!(
        open.load,
        LoadModel::Open {
            start_rate: 200.0,
            stages: vec![RateStage {
                per_second: 200.0,
                over: Duration::from_secs(5)
            }],
            max_vus: 50,
            slack: onrush_plan::DEFAULT_ARRIVAL_SLACK,
            warm_up: onrush_plan::WarmUp::Auto,
        }
    );
    assert_eq!(metric_names(open), ["GET /delay/5"]);
    assert_eq!(open.steps.len(), 2);
    let ten = Duration::from_millis(10);
    assert_eq!(open.steps[1], Step::Think { min: ten, max: ten });
}

#[test]
fn example_port_from_env() {
    let plan = load_env(EXAMPLE, &[("PORT", "9999")], &[]).unwrap();
    let Target::Url(u) = &plan.target else {
        panic!()
    };
    assert_eq!(u.port, 9999);
    // An empty environment value falls back to the default, as in the shell.
    let plan = load_env(EXAMPLE, &[("PORT", "")], &[]).unwrap();
    let Target::Url(u) = &plan.target else {
        panic!()
    };
    assert_eq!(u.port, 8080);
}

#[test]
fn real_process_environment() {
    // A variable name used by no other test, so setting it cannot race with them.
    std::env::set_var("ONRUSH_PLAN_TEST_REAL_ENV_PORT_4d1c", "7777");
    let text = EXAMPLE.replace("${PORT:-8080}", "${ONRUSH_PLAN_TEST_REAL_ENV_PORT_4d1c}");
    let plan = onrush_plan::load_str_with_grammars(
        "plan.yaml",
        &text,
        Path::new("."),
        &[],
        &[],
        common::grammars(),
    )
    .unwrap();
    let Target::Url(u) = &plan.target else {
        panic!()
    };
    assert_eq!(u.port, 7777);
}

#[test]
fn example_files_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let basic =
        onrush_plan::load_with_grammars(&dir.join("basic.yaml"), &[], &[], common::grammars())
            .unwrap();
    assert_eq!(basic.name, "basic");
    assert_eq!(
        std::fs::read_to_string(dir.join("basic.yaml")).unwrap(),
        EXAMPLE,
        "examples/basic.yaml is the issue's example"
    );
    let quick =
        onrush_plan::load_with_grammars(&dir.join("quickstart.yaml"), &[], &[], common::grammars())
            .unwrap();
    assert_eq!(quick.target, Target::Builtin);
    assert_eq!(quick.scenarios.len(), 2);
    assert!(matches!(
        quick.scenarios[0].load,
        LoadModel::ClosedIterations {
            vus: 8,
            iterations: 200,
            ..
        }
    ));
    assert!(matches!(
        quick.scenarios[1].load,
        LoadModel::Open { max_vus: 50, .. }
    ));
    assert_eq!(
        quick.scenarios[1].load.duration(),
        Some(Duration::from_secs(5))
    );
}

#[test]
fn load_closed_iterations_with_ramp_up() {
    let p = ok(&scenario(
        "{ vus: 10, iterations: 5, ramp_up: 2s }",
        "[{ get: / }]",
    ));
    assert_eq!(
        p.scenarios[0].load,
        LoadModel::ClosedIterations {
            vus: 10,
            iterations: 5,
            ramp_up: Duration::from_secs(2)
        }
    );
}

#[test]
fn load_closed_duration() {
    let p = ok(&scenario("{ vus: 10, duration: 1m30s }", "[{ get: / }]"));
    assert_eq!(
        p.scenarios[0].load,
        LoadModel::ClosedStages {
            start_vus: 10,
            stages: vec![VuStage {
                vus: 10,
                over: Duration::from_secs(90)
            }]
        }
    );
    let p = ok(&scenario(
        "{ vus: 10, duration: 60s, ramp_up: 10s }",
        "[{ get: / }]",
    ));
    assert_eq!(
        p.scenarios[0].load,
        LoadModel::ClosedStages {
            start_vus: 0,
            stages: vec![
                VuStage {
                    vus: 10,
                    over: Duration::from_secs(10)
                },
                VuStage {
                    vus: 10,
                    over: Duration::from_secs(50)
                }
            ]
        }
    );
    assert_eq!(
        p.scenarios[0].load.duration(),
        Some(Duration::from_secs(60))
    );
    assert_eq!(p.scenarios[0].load.max_vus(), 10);
}

#[test]
fn graceful_stop_defaults_to_30s_and_goes_with_any_load_that_has_a_duration() {
    let p = ok(&scenario("{ vus: 2, duration: 10s }", "[{ get: / }]"));
    assert_eq!(p.scenarios[0].graceful_stop, Duration::from_secs(30));
    for load in [
        "{ vus: 2, duration: 10s, graceful_stop: 5s }",
        "{ stages: [{ vus: 2, over: 10s }], graceful_stop: 5s }",
        "{ rate: 10/s, duration: 10s, max_vus: 5, graceful_stop: 5s }",
        "{ start_rate: 1/s, stages: [{ rate: 10/s, over: 10s }], max_vus: 5, graceful_stop: 5s }",
    ] {
        let p = ok(&scenario(load, "[{ get: / }]"));
        assert_eq!(
            p.scenarios[0].graceful_stop,
            Duration::from_secs(5),
            "{load}"
        );
    }
    let p = ok(&scenario(
        "{ vus: 2, duration: 10s, graceful_stop: 0s }",
        "[{ get: / }]",
    ));
    assert_eq!(p.scenarios[0].graceful_stop, Duration::ZERO);
}

#[test]
fn load_closed_stages() {
    let p = ok(&scenario("{ start_vus: 2, stages: [{ vus: 20, over: 30s }, { vus: 20, over: 1m }, { vus: 0, over: 10s }] }", "[{ get: / }]"));
    assert_eq!(
        p.scenarios[0].load,
        LoadModel::ClosedStages {
            start_vus: 2,
            stages: vec![
                VuStage {
                    vus: 20,
                    over: Duration::from_secs(30)
                },
                VuStage {
                    vus: 20,
                    over: Duration::from_secs(60)
                },
                VuStage {
                    vus: 0,
                    over: Duration::from_secs(10)
                },
            ]
        }
    );
    let p = ok(&scenario(
        "{ stages: [{ vus: 5, over: 10s }] }",
        "[{ get: / }]",
    ));
    assert!(
        matches!(&p.scenarios[0].load, LoadModel::ClosedStages { start_vus: 0, stages } if stages.len() == 1)
    );
}

#[test]
fn load_open_warm_up() {
    let warm_up = |extra: &str| match ok(&scenario(
        &format!("{{ rate: 100/s, duration: 10s, max_vus: 20{extra} }}"),
        "[{ get: / }]",
    ))
    .scenarios[0]
        .load
    {
        LoadModel::Open { warm_up, .. } => warm_up,
        ref other => panic!("{other:?}"),
    };
    assert_eq!(warm_up(""), onrush_plan::WarmUp::Auto);
    assert_eq!(warm_up(", warm_up: true"), onrush_plan::WarmUp::Auto);
    assert_eq!(warm_up(", warm_up: false"), onrush_plan::WarmUp::Off);
    assert_eq!(warm_up(", warm_up: 0"), onrush_plan::WarmUp::Off);
    assert_eq!(warm_up(", warm_up: 20"), onrush_plan::WarmUp::Vus(20));
    // `true`: the first second's arrivals at 50 ms each, at most max_vus.
    assert_eq!(onrush_plan::WarmUp::Auto.vus(100, 20), 5);
    assert_eq!(onrush_plan::WarmUp::Auto.vus(60_000, 20), 20);
    assert_eq!(onrush_plan::WarmUp::Auto.vus(1, 20), 1);
    assert_eq!(onrush_plan::WarmUp::Off.vus(60_000, 20), 0);
}

#[test]
fn load_open_arrival_slack() {
    let p = ok(&scenario(
        "{ rate: 100/s, duration: 10s, max_vus: 20, arrival_slack: 0ms }",
        "[{ get: / }]",
    ));
    assert!(
        matches!(&p.scenarios[0].load, LoadModel::Open { slack, .. } if slack.is_zero()),
        "{:?}",
        p.scenarios[0].load
    );
    let p = ok(&scenario(
        "{ stages: [{ rate: 100/s, over: 5s }], max_vus: 5, arrival_slack: 250us }",
        "[{ get: / }]",
    ));
    assert!(
        matches!(&p.scenarios[0].load, LoadModel::Open { slack, .. } if *slack == Duration::from_micros(250)),
        "{:?}",
        p.scenarios[0].load
    );
}

#[test]
fn load_open_rate_and_stages() {
    let p = ok(&scenario(
        "{ rate: 12000/m, duration: 10s, max_vus: 20 }",
        "[{ get: / }]",
    ));
    assert_eq!(
        p.scenarios[0].load,
        LoadModel::Open {
            start_rate: 200.0,
            stages: vec![RateStage {
                per_second: 200.0,
                over: Duration::from_secs(10)
            }],
            max_vus: 20,
            slack: onrush_plan::DEFAULT_ARRIVAL_SLACK,
            warm_up: onrush_plan::WarmUp::Auto,
        }
    );
    let p = ok(&scenario(
        "{ rate: 50, duration: 1s, max_vus: 2 }",
        "[{ get: / }]",
    ));
    assert!(
        matches!(&p.scenarios[0].load, LoadModel::Open { start_rate, .. } if *start_rate == 50.0)
    );
    let p = ok(&scenario("{ start_rate: 10/s, stages: [{ rate: 2000/s, over: 60s }, { rate: 0, over: 5s }], max_vus: 500 }", "[{ get: / }]"));
    assert_eq!(
        p.scenarios[0].load,
        LoadModel::Open {
            start_rate: 10.0,
            stages: vec![
                RateStage {
                    per_second: 2000.0,
                    over: Duration::from_secs(60)
                },
                RateStage {
                    per_second: 0.0,
                    over: Duration::from_secs(5)
                }
            ],
            max_vus: 500,
            slack: onrush_plan::DEFAULT_ARRIVAL_SLACK,
            warm_up: onrush_plan::WarmUp::Auto,
        }
    );
    let p = ok(&scenario(
        "{ stages: [{ rate: 100/s, over: 5s }], max_vus: 5 }",
        "[{ get: / }]",
    ));
    assert!(
        matches!(&p.scenarios[0].load, LoadModel::Open { start_rate, .. } if *start_rate == 0.0)
    );
}

#[test]
fn unnamed_steps_are_named_by_method_and_unrendered_path() {
    let p = ok(&scenario(
        "{ vus: 1, iterations: 1 }",
        r#"[{ get: /delay/5 }, { post: "/users/${vu}" }, { delete: "/items/${iteration}?force=1" }]"#,
    ));
    assert_eq!(
        metric_names(&p.scenarios[0]),
        [
            "GET /delay/5",
            "POST /users/${vu}",
            "DELETE /items/${iteration}?force=1"
        ]
    );
    let reqs = requests(&p.scenarios[0].steps);
    assert_eq!(render(&reqs[1].path, 42, 0), "/users/42");
    assert_eq!(reqs[1].path.source(), "/users/${vu}");
    assert_eq!(render(&reqs[2].path, 1, 9), "/items/9?force=1");
}

#[test]
fn steps_sharing_a_name_share_a_metric() {
    let p = ok(&scenario(
        "{ vus: 1, iterations: 1 }",
        "[{ name: page, get: /a }, { get: /b }, { name: page, get: /c }, { loop: { count: 2, steps: [{ name: page, get: /d }, { get: /b }, { name: api, post: /e }] } }]",
    ));
    let s = &p.scenarios[0];
    assert_eq!(metric_names(s), ["page", "GET /b", "api"]);
    let ids: Vec<usize> = requests(&s.steps).iter().map(|r| r.metric).collect();
    assert_eq!(ids, [0, 1, 0, 0, 1, 2]);
}

#[test]
fn overrides_replace_and_add_vars() {
    let p = load_env(EXAMPLE, &[], &[("vus", "7"), ("extra", "x y")]).unwrap();
    assert!(matches!(
        p.scenarios[0].load,
        LoadModel::ClosedIterations { vus: 7, .. }
    ));
    assert_eq!(p.vars.get("vus").map(String::as_str), Some("7"));
    assert_eq!(p.vars.get("extra").map(String::as_str), Some("x y"));
}

#[test]
fn env_defaults_vars_win_and_vars_refer_to_vars() {
    let text = "target: http://${HOST:-localhost}:${port}/${base}\nvars:\n  port: ${APP_PORT:-9000}\n  base: api\n  greeting: hello ${who}\n  who: ${USER_X:-world}\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps: [{ post: /x, body: '${greeting}' }]\n";
    let p = load(text).unwrap();
    assert_eq!(
        p.target,
        Target::Url(TargetUrl {
            scheme: Scheme::Http,
            host: "localhost".into(),
            port: 9000,
            base_path: "/api".into()
        })
    );
    assert_eq!(
        p.vars.get("greeting").map(String::as_str),
        Some("hello world")
    );
    let p = load_env(
        text,
        &[
            ("APP_PORT", "1234"),
            ("HOST", "10.0.0.1"),
            ("USER_X", "bob"),
        ],
        &[],
    )
    .unwrap();
    let Target::Url(u) = &p.target else { panic!() };
    assert_eq!((u.host.as_str(), u.port), ("10.0.0.1", 1234));
    assert_eq!(
        p.vars.get("greeting").map(String::as_str),
        Some("hello bob")
    );
    // A plan variable named like the environment variable wins over the environment.
    let p = load_env("target: http://h:${PORT:-1}\nvars: { PORT: 2 }\nscenarios: [{ name: s, load: { vus: 1, iterations: 1 }, steps: [{ get: / }] }]\n", &[("PORT", "3")], &[]).unwrap();
    let Target::Url(u) = &p.target else { panic!() };
    assert_eq!(u.port, 2);
}

#[test]
fn escape_dollar_brace() {
    let p = ok(&scenario(
        "{ vus: 1, iterations: 1 }",
        r#"[{ name: "cost $${price}", post: /x, body: "literal $${vu} and ${vu} and $5" }]"#,
    ));
    let s = &p.scenarios[0];
    assert_eq!(s.metrics[0].name, "cost ${price}");
    let Some(r) = RequestStep::of(&s.steps[0]) else {
        panic!()
    };
    let Body::Inline(b) = &r.body else { panic!() };
    assert_eq!(render(b, 6, 0), "literal ${vu} and 6 and $5");
}

#[test]
fn base_path_is_prefixed_and_absolute_urls_get_their_own_target() {
    let text = "target: http://example.test:8080/api/\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - get: /users?page=1\n      - get: \"http://other.test:9000/x/${vu}?q=${iteration}\"\n      - get: https://secure.test\n";
    let p = ok(text);
    let reqs = requests(&p.scenarios[0].steps);
    assert_eq!(render(&reqs[0].path, 1, 0), "/api/users?page=1");
    assert_eq!(reqs[0].target, None);
    assert_eq!(
        reqs[1].target,
        Some(TargetUrl {
            scheme: Scheme::Http,
            host: "other.test".into(),
            port: 9000,
            base_path: String::new()
        })
    );
    assert_eq!(render(&reqs[1].path, 3, 4), "/x/3?q=4");
    assert_eq!(
        reqs[2].target.as_ref().map(|t| (t.scheme, t.port)),
        Some((Scheme::Https, 443))
    );
    assert_eq!(render(&reqs[2].path, 1, 0), "/");
    assert_eq!(
        metric_names(&p.scenarios[0])[1],
        "GET http://other.test:9000/x/${vu}?q=${iteration}"
    );
}

#[test]
fn request_options() {
    let text = r#"target: builtin
http: { timeout: 2s, connections: per_request }
scenarios:
  - name: s
    http: { connections: per_iteration }
    load: { vus: 1, iterations: 1 }
    steps:
      - put: /a
        headers: { Content-Type: application/json, X-Vu: "${vu}", X-Num: 0012 }
        body: '{"vu": ${vu}}'
        timeout: 250ms
        expect_status: 201
      - patch: /b
        body_file: Cargo.toml
        expect_status: [200, 204]
      - head: /c
      - options: /d
"#;
    let p = ok(text);
    let s = &p.scenarios[0];
    assert_eq!(
        s.http,
        HttpSettings {
            timeout: Duration::from_secs(2),
            connections: ConnectionScope::PerIteration,
            ..HttpSettings::default()
        }
    );
    assert_eq!(p.http.connections, ConnectionScope::PerRequest);
    let reqs = requests(&s.steps);
    assert_eq!(
        reqs.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(),
        ["PUT", "PATCH", "HEAD", "OPTIONS"]
    );
    let h: Vec<(&str, String)> = reqs[0]
        .headers
        .iter()
        .map(|(n, t)| (n.as_str(), render(t, 5, 0)))
        .collect();
    assert_eq!(
        h,
        [
            ("Content-Type", "application/json".to_string()),
            ("X-Vu", "5".into()),
            ("X-Num", "0012".into())
        ]
    );
    let Body::Inline(b) = &reqs[0].body else {
        panic!()
    };
    assert_eq!(render(b, 5, 0), r#"{"vu": 5}"#);
    assert_eq!(reqs[0].timeout, Some(Duration::from_millis(250)));
    assert_eq!(reqs[0].expect_status, Some(vec![201]));
    assert_eq!(
        reqs[1].body,
        Body::File(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
    );
    assert_eq!(reqs[1].expect_status, Some(vec![200, 204]));
    assert_eq!(reqs[2].body, Body::None);
}

#[test]
fn think_fixed_and_range() {
    let p = ok(&scenario(
        "{ vus: 1, iterations: 1 }",
        "[{ think: 1s..3s }, { think: 250ms }, { think: 0s }, { get: / }]",
    ));
    let s = &p.scenarios[0].steps;
    assert_eq!(
        s[0],
        Step::Think {
            min: Duration::from_secs(1),
            max: Duration::from_secs(3)
        }
    );
    assert_eq!(
        s[1],
        Step::Think {
            min: Duration::from_millis(250),
            max: Duration::from_millis(250)
        }
    );
    assert_eq!(
        s[2],
        Step::Think {
            min: Duration::ZERO,
            max: Duration::ZERO
        }
    );
}

#[test]
fn loops_nest() {
    let text = "target: builtin\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - get: /login\n      - loop:\n          count: 3\n          steps:\n            - get: /list\n            - loop: { count: 2, steps: [{ get: /item }, { think: 1ms }] }\n";
    let p = ok(text);
    let steps = &p.scenarios[0].steps;
    assert_eq!(steps.len(), 2);
    let Step::Loop {
        count: 3,
        steps: inner,
    } = &steps[1]
    else {
        panic!("{:?}", steps[1])
    };
    assert_eq!(inner.len(), 2);
    let Step::Loop {
        count: 2,
        steps: innermost,
    } = &inner[1]
    else {
        panic!("{:?}", inner[1])
    };
    assert_eq!(innermost.len(), 2);
    assert_eq!(
        metric_names(&p.scenarios[0]),
        ["GET /login", "GET /list", "GET /item"]
    );
}

#[test]
fn yaml_anchors_and_merge_keys() {
    let text = "target: builtin\nscenarios:\n  - name: a\n    load: &load { vus: 2, iterations: 3 }\n    steps: &steps [{ get: / }]\n  - name: b\n    load: *load\n    steps:\n      - <<: { headers: { X-A: a } }\n        get: /b\n";
    let p = ok(text);
    assert_eq!(p.scenarios[1].load, p.scenarios[0].load);
    let Some(r) = RequestStep::of(&p.scenarios[1].steps[0]) else {
        panic!()
    };
    assert_eq!(r.headers.len(), 1);
}

#[test]
fn builtin_and_https_targets() {
    assert_eq!(
        ok(&scenario("{ vus: 1, iterations: 1 }", "[{ get: / }]")
            .replace("http://127.0.0.1:8080", "builtin"))
        .target,
        Target::Builtin
    );
    let p = ok(&scenario("{ vus: 1, iterations: 1 }", "[{ get: / }]")
        .replace("http://127.0.0.1:8080", "https://[::1]"));
    assert_eq!(
        p.target,
        Target::Url(TargetUrl {
            scheme: Scheme::Https,
            host: "::1".into(),
            port: 443,
            base_path: String::new()
        })
    );
}

#[test]
fn load_from_a_path_resolves_body_files_next_to_the_plan() {
    let dir = std::env::temp_dir().join(format!(
        "onrush-plan-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(dir.join("bodies")).unwrap();
    std::fs::write(dir.join("bodies/order.json"), "{}").unwrap();
    std::fs::write(
        dir.join("shop.yaml"),
        "target: builtin\nscenarios: [{ name: s, load: { vus: 1, iterations: 1 }, steps: [{ post: /o, body_file: bodies/order.json }] }]\n",
    )
    .unwrap();
    let p = onrush_plan::load_with_grammars(&dir.join("shop.yaml"), &[], &[], common::grammars())
        .unwrap();
    assert_eq!(p.name, "shop");
    let Some(r) = RequestStep::of(&p.scenarios[0].steps[0]) else {
        panic!()
    };
    assert_eq!(r.body, Body::File(dir.join("bodies/order.json")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn json_is_yaml_too() {
    // `onrush quick` builds its plan as JSON.
    let text = r#"{
  "target": "http://127.0.0.1:8080",
  "http": { "timeout": "30s" },
  "scenarios": [{ "name": "quick", "load": { "rate": 200.0, "duration": "10s", "max_vus": 50 },
                  "steps": [{ "get": "/a?b=1", "headers": { "X-A": "1" }, "body": "x" }] }]
}"#;
    let p = ok(text);
    assert!(
        matches!(&p.scenarios[0].load, LoadModel::Open { start_rate, max_vus: 50, .. } if *start_rate == 200.0)
    );
    assert_eq!(p.scenarios[0].metrics[0].name, "GET /a?b=1");
}

/// A `body_size` check is named with its bounds as written (it used to be plain "body size"
/// for a range, which said nothing of what was checked).
#[test]
fn body_size_checks_are_named_with_their_bounds() {
    let p = ok("target: http://127.0.0.1:1\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - get: /\n        check:\n          - body_size: { max: 1KiB }\n          - body_size: { min: 100 }\n          - body_size: { min: 100, max: 2MB }\n          - body_size: 512\n");
    let names: Vec<&str> = p.scenarios[0]
        .checks
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "body size <= 1KiB",
            "body size >= 100",
            "body size in [100, 2MB]",
            "body size = 512"
        ]
    );
}

/// A plan without JavaScript carries no scripts: its workers make no engine and its requests
/// call into none. Inline `js:` alone is enough to make them (without any `scripts:` file),
/// and the names it assigns become runtime variables templates can read.
#[test]
fn scripts_only_when_the_plan_has_javascript() {
    let plan = ok(EXAMPLE);
    assert!(plan.scripts.is_none());
    let plan = ok("target: http://127.0.0.1:8080\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - get: /\n        check: [ { js: \"res.status === 200\" } ]\n      - script: \"vars.next = 1\"\n      - get: \"/n/${next}\"\n");
    let scripts = plan
        .scripts
        .as_ref()
        .expect("inline JavaScript makes scripts");
    assert_eq!(scripts.functions.len(), 2);
    assert!(scripts.modules.is_empty());
    assert!(plan.scenarios[0].vars.contains(&"next".to_string()));
}
