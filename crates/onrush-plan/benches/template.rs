//! Template rendering per request: the /json and /html sample documents as body templates with
//! runtime variables, built-ins and functions in them, rendered into a reused buffer.
//!
//! `cargo bench -p onrush-plan --bench template`

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use onrush_plan::{RenderContext, Template, Vars};
use onrush_proto_http::{Body, RequestStep};

/// Compiles `body` as the inline body of a request in a scenario that extracts `token` and `user`.
fn body_template(body: &str) -> (Template, usize, usize) {
    let plan = format!(
        "target: builtin\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n      - get: /json\n        extract: {{ token: {{ jsonpath: \"$.token\" }}, user: {{ jsonpath: \"$.user.name\" }} }}\n      - post: /echo\n        body: {}\n",
        serde_json::to_string(body).unwrap()
    );
    let grammars = onrush_protocols::grammars();
    let p = onrush_plan::load_str_with_grammars(
        "bench.yaml",
        &plan,
        Path::new("."),
        &[],
        &[],
        grammars,
    )
    .unwrap();
    let s = &p.scenarios[0];
    let r = RequestStep::of(&s.steps[1]).unwrap();
    let Body::Inline(t) = &r.body else {
        unreachable!()
    };
    let slot = |n: &str| s.vars.iter().position(|v| v == n).unwrap();
    (t.clone(), slot("token"), slot("user"))
}

fn bench(c: &mut Criterion) {
    let json = onrush_server::samples::JSON
        .replace("onrush-session-7f3c9a2e41d8", "${token}")
        .replace("Ada Lovelace", "${user}")
        .replace("\"id\": 42", "\"id\": ${vu}")
        .replace("\"expires_in\": 3600", "\"expires_in\": ${iteration}");
    let html = onrush_server::samples::HTML
        .replace("csrf-5b8e1d4a9c07", "${token}")
        .replace("Sign in</h1>", "Sign in, ${user}</h1>")
        .replace("product=1", "product=${vu}")
        .replace("product=2", "product=${iteration}");
    let with_functions = r#"{"id": "${uuid()}", "n": ${random_int(1, 1000)}, "c": ${counter()}, "user": "${user}", "sig": "${base64(token)}"}"#;
    let mut group = c.benchmark_group("template");
    for (name, text) in [
        ("json_4_slots", json.as_str()),
        ("html_4_slots", html.as_str()),
        ("functions", with_functions),
    ] {
        let (t, token, user) = body_template(text);
        let mut vars = Vars::new(2, 1, 7);
        vars.set(token, b"onrush-session-7f3c9a2e41d8");
        vars.set(user, b"Ada Lovelace");
        let mut buf = Vec::with_capacity(4096);
        let len = {
            let ctx = RenderContext::new(42, 7, &vars);
            t.render(&ctx, &mut buf).unwrap();
            buf.len()
        };
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("{name}_{len}B"), |b| {
            let ctx = RenderContext::new(42, 7, &vars);
            b.iter(|| {
                buf.clear();
                t.render(black_box(&ctx), &mut buf).unwrap();
                black_box(buf.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
