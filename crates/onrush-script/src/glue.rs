//! The JavaScript onrush writes around the plan's: the glue module that imports the plan's
//! modules, holds the functions the plan calls, makes each VU's `ctx` (its `vars` a proxy onto
//! the VU's variables) and dispatches the engine's calls.

use crate::load::{Function as PlanFunction, Scripts};

/// The name of the module onrush writes to reach the plan's functions.
pub(crate) const GLUE: &str = "<onrush>";

/// What every engine defines before the plan's modules: each VU's `ctx`, `vars` as a proxy onto
/// the VU's runtime variables, `ctx.fail`, and the dispatcher the engine calls through.
pub(crate) const PRELUDE: &str = r#"
class OnrushFail extends Error { constructor(m) { super(m); this.name = 'OnrushFail'; } }
globalThis.__onrush_fail_class = OnrushFail;
"#;

pub(crate) fn inline_function(code: &str, expression: bool) -> String {
    if expression {
        format!("(function (ctx, vars, res, req) {{ return (\n{code}\n); }})")
    } else {
        format!("(function (ctx, vars, res, req) {{\n{code}\n}})")
    }
}

/// The module that reaches the plan's functions: each of the plan's modules imported, the
/// functions in an array, each VU's `ctx` made at its first call, and the dispatcher.
pub(crate) fn glue(
    scripts: &Scripts,
    exports: &[(String, String)],
    scenarios: &[(String, Vec<String>)],
) -> String {
    use std::fmt::Write;
    let mut g = String::new();
    for (i, m) in scripts.entries.iter().enumerate() {
        let _ = writeln!(g, "import * as m{i} from {m:?};");
    }
    // Inline code may call exported functions by their bare names (those exported once).
    for (i, m) in scripts.entries.iter().enumerate() {
        for (module, name) in exports.iter().filter(|(module, _)| module == m) {
            let once = exports.iter().filter(|(_, n)| n == name).count() == 1;
            if once && is_identifier(name) {
                let _ = writeln!(g, "const {name} = m{i}.{name}; // {module}");
            }
        }
    }
    g.push_str("const fns = [\n");
    let mut inline = Vec::new();
    for f in &scripts.functions {
        match f {
            PlanFunction::Export { module, name } => {
                let i = scripts
                    .entries
                    .iter()
                    .position(|e| e == module)
                    .unwrap_or(0);
                let _ = writeln!(g, "  m{i}[{name:?}],");
                inline.push(false);
            }
            PlanFunction::Inline {
                code, expression, ..
            } => {
                let _ = writeln!(g, "  {},", inline_function(code, *expression));
                inline.push(true);
            }
        }
    }
    g.push_str("];\n");
    let _ = writeln!(g, "const inline = {inline:?};");
    g.push_str("const scenarios = [\n");
    for (name, vars) in scenarios {
        let slots: Vec<String> = vars
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{v:?}: {i}"))
            .collect();
        let _ = writeln!(
            g,
            "  {{ name: {name:?}, slots: Object.assign(Object.create(null), {{ {} }}) }},",
            slots.join(", ")
        );
    }
    g.push_str("];\n");
    g.push_str(
        r#"const getvar = globalThis.__onrush_getvar, setvar = globalThis.__onrush_setvar;
const Fail = globalThis.__onrush_fail_class;
const ctxs = new Map();
function handler(slots) {
  return {
    get(t, k) { const s = typeof k === 'string' ? slots[k] : undefined; return s === undefined ? t[k] : getvar(s); },
    set(t, k, v) {
      const s = typeof k === 'string' ? slots[k] : undefined;
      if (s === undefined) { t[k] = v; return true; }
      setvar(s, v === undefined || v === null ? undefined : Array.isArray(v) ? v.map(String) : String(v));
      return true;
    },
    has(t, k) { const s = typeof k === 'string' ? slots[k] : undefined; return s === undefined ? k in t : getvar(s) !== undefined; },
    deleteProperty(t, k) { const s = typeof k === 'string' ? slots[k] : undefined; if (s === undefined) delete t[k]; else setvar(s, undefined); return true; },
  };
}
const handlers = scenarios.map((s) => handler(s.slots));
function fail(message) { throw new Fail(String(message)); }
function ctxOf(key, sc, vu, it) {
  let c = ctxs.get(key);
  if (c === undefined) {
    const s = scenarios[sc];
    c = { vu, iteration: it, scenario: s ? s.name : '', vars: new Proxy({}, handlers[sc] || handler(Object.create(null))), fail };
    ctxs.set(key, c);
  }
  c.iteration = it;
  return c;
}
globalThis.__onrush_reply = function (status, headers, body, url, raw) {
  let parsed;
  return { status, headers, body, url, json() { if (parsed === undefined) parsed = JSON.parse(body); return parsed; },
           bytes() { return raw; } };
};
export function dispatch(i, key, sc, vu, it, arg) {
  const c = ctxOf(key, sc, vu, it);
  const f = fns[i];
  if (inline[i]) return f(c, c.vars, arg, arg);
  return arg === undefined ? f(c) : f(arg, c);
}
export function templateCall(i, args) { return fns[i](...args); }
"#,
    );
    g
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !matches!(
            s,
            "fns"
                | "inline"
                | "scenarios"
                | "getvar"
                | "setvar"
                | "Fail"
                | "ctxs"
                | "handler"
                | "handlers"
                | "fail"
                | "ctxOf"
                | "dispatch"
                | "templateCall"
        )
}
