//! The engine end to end on modules in a temporary folder: load, hooks, checks, templates,
//! failures of each kind.

use std::time::Duration;

use onrush_template::{VarValue, Vars};

use crate::{load, Caller, Engine, FailureKind, Reply, Request};

fn folder(files: &[(&str, &str)]) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "onrush-script-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

const SIGN: &str = r#"
import { hmac } from 'onrush/crypto';
import { twice } from './util.js';
const secret = open('key.txt').trim();
export function sign(req, ctx) { req.headers['x-signature'] = hmac('sha256', secret, req.body); }
export function remember(res, ctx) { ctx.vars.nonce = String(res.json().nonce); ctx.vars.seen = (ctx.vars.seen || 0) + 1; }
export function double(x) { return twice(Number(x)); }
export function spin() { for (;;) {} }
export function boom() { null.x; }
export function refuse(res, ctx) { ctx.fail('no ' + res.status); }
"#;

const WHO: Caller = Caller {
    scenario: 0,
    vu: 1,
    iteration: 0,
};

#[test]
fn hooks_checks_and_templates_run_in_one_engine() {
    let dir = folder(&[
        ("lib/sign.js", SIGN),
        ("lib/util.js", "export function twice(n) { return n * 2; }"),
        ("key.txt", "k3y\n"),
        ("lib/count.js", "import { counter } from 'onrush/shared';\nconst orders = counter('orders');\nexport function order() { return orders.add(1); }\nexport function orders_now() { return orders.value; }\n"),
    ]);
    let mut b = load(
        &dir,
        &["lib/sign.js".into(), "lib/count.js".into()],
        Duration::from_millis(200),
    )
    .unwrap();
    let order = b.export("order").unwrap();
    let orders_now = b.export("orders_now").unwrap();
    let sign = b.export("sign").unwrap();
    let remember = b.export("sign.remember").unwrap();
    let double = b.export("double").unwrap();
    let spin = b.export("spin").unwrap();
    let boom = b.export("boom").unwrap();
    let refuse = b.export("refuse").unwrap();
    let step = b
        .inline(
            "vars.total = Number(vars.nonce) * 2 + 1",
            false,
            "plan.yaml:9:15",
        )
        .unwrap();
    let check = b
        .inline(
            "res.status === 200 && res.json().ok === true",
            true,
            "plan.yaml:7:20",
        )
        .unwrap();
    let e = b.export("nope").unwrap_err();
    assert!(
        e.contains("exported functions: ") && e.contains("sign"),
        "{e}"
    );
    let scripts = b.finish();
    assert_eq!(
        scripts.files().collect::<Vec<_>>(),
        ["lib/sign.js", "lib/util.js", "lib/count.js", "key.txt"]
    );

    let engine = Engine::new(
        &scripts,
        &[("api".into(), vec!["nonce".into(), "total".into()])],
    )
    .unwrap();
    let mut vars = Vars::new(2, 0, 1);

    let mut req = Request {
        method: "POST".into(),
        url: "/orders".into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: b"{\"a\":1}".to_vec(),
    };
    engine.before(sign, WHO, &vars, &mut req).unwrap();
    let expected = {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"k3y");
        ring::hmac::sign(&key, b"{\"a\":1}")
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert!(req.headers.contains(&("x-signature".into(), expected)));
    assert!(req
        .headers
        .contains(&("content-type".into(), "application/json".into())));

    let body = br#"{"ok":true,"nonce":21}"#;
    let reply = Reply {
        status: 200,
        headers: vec![(b"Content-Type", b"application/json")],
        body,
        url: b"/orders",
    };
    engine.after(remember, WHO, &mut vars, &reply).unwrap();
    assert_eq!(vars.get(0), &VarValue::One(b"21".to_vec()));
    // A value kept outside the plan's variables stays in the VU's script state.
    engine.after(remember, WHO, &mut vars, &reply).unwrap();
    assert!(engine.check(check, WHO, &vars, &reply).unwrap());
    let bad = Reply {
        status: 500,
        ..reply
    };
    assert!(!engine.check(check, WHO, &vars, &bad).unwrap());
    // A binary body: `bytes()` has it as it came (the text has U+FFFD for the 0xff).
    let mut b2 = load(&dir, &["lib/sign.js".into()], Duration::from_millis(200)).unwrap();
    let raw = b2
        .inline(
            "res.bytes() instanceof Uint8Array && res.bytes().length === 4 \
             && res.bytes()[0] === 0 && res.bytes()[1] === 255 && res.bytes()[3] === 65 \
             && res.body.charCodeAt(1) === 0xfffd",
            true,
            "plan.yaml:8:20",
        )
        .unwrap();
    let e2 = Engine::new(&b2.finish(), &[("api".into(), vec![])]).unwrap();
    let binary = Reply {
        status: 200,
        headers: vec![],
        body: b"\x00\xffzA",
        url: b"/bin",
    };
    assert!(e2.check(raw, WHO, &Vars::new(0, 0, 1), &binary).unwrap());

    engine.run_step(step, WHO, &mut vars).unwrap();
    assert_eq!(vars.get(1), &VarValue::One(b"43".to_vec()));

    let mut out = Vec::new();
    engine
        .template_call(double, &[b"21".to_vec()], &vars, &mut out)
        .unwrap();
    assert_eq!(out, b"42");

    let e = engine.run_step(spin, WHO, &mut vars).unwrap_err();
    assert_eq!(e.kind, FailureKind::Timeout, "{e:?}");
    let e = engine.run_step(boom, WHO, &mut vars).unwrap_err();
    assert_eq!(e.kind, FailureKind::Error);
    assert!(e.message.starts_with("lib/sign.js:9:"), "{}", e.message);
    assert!(e.message.contains("TypeError"), "{}", e.message);
    let e = engine.after(refuse, WHO, &mut vars, &bad).unwrap_err();
    assert_eq!(e.kind, FailureKind::Failed);
    assert!(e.message.ends_with("no 500"), "{}", e.message);
    // A counter is one for the process: two engines (two workers) add to the same.
    let second = Engine::new(
        &scripts,
        &[("api".into(), vec!["nonce".into(), "total".into()])],
    )
    .unwrap();
    let before = {
        let mut o = Vec::new();
        engine
            .template_call(orders_now, &[], &vars, &mut o)
            .unwrap();
        String::from_utf8(o).unwrap().parse::<i64>().unwrap()
    };
    engine.run_step(order, WHO, &mut vars).unwrap();
    second.run_step(order, WHO, &mut vars).unwrap();
    let mut o = Vec::new();
    second
        .template_call(orders_now, &[], &vars, &mut o)
        .unwrap();
    assert_eq!(
        String::from_utf8(o).unwrap().parse::<i64>().unwrap(),
        before + 2
    );
    // After all that, the engine still runs.
    engine.run_step(step, WHO, &mut vars).unwrap();
    // Variables are read-only in before hooks.
    let mut b2 = load(&dir, &["lib/sign.js".into()], Duration::from_secs(1)).unwrap();
    let _ = b2.export("sign").unwrap();
    let w = b2
        .inline("vars.nonce = 'x'", false, "plan.yaml:3:1")
        .unwrap();
    let scripts = b2.finish();
    let engine = Engine::new(&scripts, &[("api".into(), vec!["nonce".into()])]).unwrap();
    let e = engine.condition(w, WHO, &vars).unwrap_err();
    assert!(e.message.contains("read-only"), "{}", e.message);
}

#[test]
fn mistakes_are_placed() {
    let dir = folder(&[("bad.js", "export function f() {\n  let x = ;\n}\n")]);
    let e = load(&dir, &["bad.js".into()], Duration::from_secs(1))
        .err()
        .unwrap();
    assert_eq!(e.place.as_deref().map(|p| &p[..6]), Some("bad.js"), "{e:?}");
    assert!(e.to_string().contains("bad.js:2:"), "{e}");
    assert!(e.message.contains("SyntaxError"), "{e}");

    let dir = folder(&[(
        "a.js",
        "import { x } from 'lodash';\nexport function f() {}",
    )]);
    let e = load(&dir, &["a.js".into()], Duration::from_secs(1))
        .err()
        .unwrap();
    assert!(e.to_string().contains("relative"), "{e}");

    let dir = folder(&[("a.js", "export function f() {}")]);
    let mut b = load(&dir, &["a.js".into()], Duration::from_secs(1)).unwrap();
    let e = b
        .inline("res.status ===", true, "plan.yaml:4:9")
        .unwrap_err();
    assert!(e.contains("SyntaxError"), "{e}");
    let e = load(&dir, &["../a.js".into()], Duration::from_secs(1))
        .err()
        .unwrap();
    assert!(e.to_string().contains("outside the plan's folder"), "{e}");
}
