//! Templates: the bytes as a request body template (`${...}`), inside a fixed plan that gives
//! it plan variables, runtime variables (from an extractor) and counters to refer to. The
//! body is written as a JSON string, which is also a YAML double-quoted scalar, so every
//! input reaches the template parser whatever characters it holds.

use onrush_plan::{RenderContext, Vars};
use onrush_proto_http::{Body, RequestStep};

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let plan = format!(
        "target: http://127.0.0.1:1\n\
         vars: {{ user: alice, n: 3 }}\n\
         scenarios:\n\
         - load: {{ vus: 1, iterations: 1 }}\n\
         \x20 steps:\n\
         \x20 - {{ get: /login, extract: {{ token: {{ regex: 't=(\\w+)' }} }} }}\n\
         \x20 - {{ post: /x, body: {} }}\n",
        serde_json::to_string(&text).unwrap()
    );
    let Ok(plan) = super::plan::load(&plan) else {
        return;
    };
    let scenario = &plan.scenarios[0];
    let Some(r) = scenario.steps.get(1).and_then(RequestStep::of) else {
        return;
    };
    let Body::Inline(t) = &r.body else {
        return;
    };
    let mut out = Vec::new();
    // Without runtime variables (they are unset), then with every one set.
    let ctx = RenderContext {
        vu: u64::MAX,
        iteration: 7,
        vars: None,
    };
    let rendered = t.render(&ctx, &mut out);
    if let Some(constant) = t.constant_bytes() {
        assert_eq!(out, constant, "a constant template renders to its bytes");
    }
    if rendered.is_ok() && t.var_slots().next().is_none() && !uses_functions(t.source()) {
        assert!(out.len() <= t.max_len_hint(), "longer than max_len_hint");
    }
    let mut vars = Vars::new(scenario.vars.len(), scenario.counters, 42);
    for slot in 0..scenario.vars.len() {
        vars.set(slot, b"v\"al,ue");
    }
    out.clear();
    let _ = t.render(&RenderContext::new(1, 0, &vars), &mut out);
}

/// Functions may render more than 20 bytes (`max_len_hint` is only a bound without them).
fn uses_functions(source: &str) -> bool {
    source.contains('(')
}

pub const DICT: &[&[u8]] = &[
    b"${",
    b"}",
    b"$${",
    b"${vu}",
    b"${iteration}",
    b"${user}",
    b"${n}",
    b"${token}",
    b"${token:-x}",
    b"${HOME}",
    b"${nope}",
    b":-",
    b"(",
    b")",
    b",",
    b"'",
    b"\"",
    b"\\",
    b"uuid()",
    b"counter()",
    b"counter(c)",
    b"global_counter(g)",
    b"random_int(1, 10)",
    b"random_string(8)",
    b"random_string(4, \"ab\")",
    b"now_ms()",
    b"now_s()",
    b"now(\"%Y-%m-%dT%H:%M:%SZ\")",
    b"%",
    b"choice(a, b)",
    b"base64(",
    b"base64url(",
    b"urlencode(",
    b"md5(",
    b"sha1(",
    b"sha256(",
    b"lower(",
    b"upper(",
    b"env(HOME, x)",
    b"99999999999999999999",
];
