//! Logic controllers → flow steps: Loop → `loop`, While → `loop: { while }`, If → `if`,
//! ForEach → `loop: { foreach }`, Once Only → `once`, Transaction → `group`, Random and
//! Throughput → `random`, Switch → its chosen child; Simple, Module, Include and Test Fragments
//! are inlined. Flow Control Action (pause) → `think`.

use super::{join, Conv, Item, Scope};
use crate::jmx::{El, Props};
use crate::report::Status;
use crate::resolve::Resolution;
use crate::template::sanitize;
use crate::yaml::Y;

impl Conv<'_> {
    pub fn controller(&mut self, el: &El, parent: &Scope) -> Vec<Item> {
        let path = parent.path.clone();
        let mut inner = parent.clone();
        inner.path = join(&path, &el.name);
        let c = el.class.as_str();
        if let Some(res) = &el.resolution {
            match res {
                Resolution::Resolved(how) => {
                    self.entry(el, &path, Status::Converted, format!("{how}: inlined"))
                }
                Resolution::Approximated(how) => {
                    self.entry(el, &path, Status::Approximated, format!("{how}; inlined"))
                }
                Resolution::Unresolved(why) => {
                    self.entry(el, &path, Status::NotConverted, why.clone());
                    return Vec::new();
                }
            }
            return self.children(&el.children, &inner);
        }
        let steps = |c: &mut Self| c.children(&el.children, &inner);
        // A flow step needs at least one step inside: one whose children converted to nothing
        // is left out (its children's comments stay).
        macro_rules! inner_steps {
            () => {{
                let items = steps(self);
                if !super::has_steps(&items) {
                    return items;
                }
                items
            }};
        }
        let seq = |items: Vec<Item>| Y::Seq(items);
        match c {
            "GenericController" | "TestFragmentController" | "RecordingController" => {
                self.entry(el, &path, Status::Converted, "its children are inlined");
                steps(self)
            }
            "CriticalSectionController" | "RandomOrderController" => {
                let why = if c == "RandomOrderController" {
                    "its children run in order, not shuffled"
                } else {
                    "no lock is taken: its children are inlined"
                };
                self.entry(el, &path, Status::Approximated, why);
                steps(self)
            }
            "LoopController" => {
                let raw = el.s("LoopController.loops").trim().to_string();
                let (count, note) = match raw.parse::<i64>() {
                    Ok(n) if n >= 0 => (Y::Raw(n.to_string()), None),
                    Ok(_) => (
                        Y::Raw("1000".into()),
                        Some("loops forever in JMeter: 1000 times here".to_string()),
                    ),
                    Err(_) => match self.static_text(el, &path, &raw) {
                        Ok(t) if !t.contains("$${") => (Y::s(t), None),
                        _ => (
                            Y::Raw("1".into()),
                            Some(format!(
                                "the count `{raw}` is not known when the plan loads: once"
                            )),
                        ),
                    },
                };
                self.entry_opt(el, &path, "→ `loop: { count }`", note);
                let items = inner_steps!();
                let mut l = Y::map();
                l.set("count", count);
                l.set("steps", seq(items));
                wrap("loop", l)
            }
            "WhileController" => {
                let cond = el.s("WhileController.condition").trim().to_string();
                let parsed = var_only(&cond)
                    .map(|v| (v.to_string(), "not_equals", "false".to_string()))
                    .or_else(|| if_condition(&cond))
                    .filter(|c| self.runtime.contains(&sanitize(&c.0)));
                match parsed {
                    Some((var, op, value)) => {
                        let items = inner_steps!();
                        let var = sanitize(&var);
                        self.entry(el, &path, Status::Approximated, format!("→ `loop: {{ while: {{ var: {var}, {op}: \"{value}\" }}, max: 1000 }}` (JMeter has no limit, and tests the condition with JMeter's rules)"));
                        let mut w = Y::map();
                        w.set("var", Y::s(var));
                        let value = self.text(el, &path, &value).text;
                        w.set(op, Y::s(value));
                        let mut l = Y::map();
                        l.set("while", w);
                        l.set("max", Y::Raw("1000".into()));
                        l.set("steps", seq(items));
                        wrap("loop", l)
                    }
                    None => {
                        self.entry(el, &path, Status::Approximated, format!("the condition `{cond}` has no onrush form: its children run once; write `loop: {{ while: ... }}` by hand"));
                        steps(self)
                    }
                }
            }
            "IfController" => {
                let cond = el.s("IfController.condition").trim().to_string();
                match if_condition(&cond).filter(|c| self.runtime.contains(&sanitize(&c.0))) {
                    Some((var, op, value)) => {
                        let items = inner_steps!();
                        let mut cy = Y::map();
                        cy.set("var", Y::s(sanitize(&var)));
                        let value = self.text(el, &path, &value).text;
                        cy.set(op, Y::s(value));
                        self.entry(el, &path, Status::Converted, "→ `if:`");
                        let mut m = Y::map();
                        m.set("if", cy);
                        m.set("then", seq(items));
                        vec![(
                            m,
                            vec![format!("JMeter If Controller `{}`: {cond}", el.name)],
                        )]
                    }
                    None => {
                        self.entry(el, &path, Status::Approximated, format!("the condition `{cond}` has no onrush form: its children always run; write `if:` by hand"));
                        let mut items = steps(self);
                        if let Some(first) = items.first_mut() {
                            first.1.insert(0, format!("JMeter If Controller `{}` ({cond}) not converted: these steps always run", el.name));
                        }
                        items
                    }
                }
            }
            "ForeachController" => {
                let input = sanitize(el.s("ForeachController.inputVal").trim());
                let output = self.runtime_name(el.s("ForeachController.returnVal").trim());
                let mut note = "→ `loop: { foreach, as }` over the list variable of the same name (an extractor with `occurrence: all`)".to_string();
                if !el.s("ForeachController.startIndex").trim().is_empty()
                    || !el.s("ForeachController.endIndex").trim().is_empty()
                {
                    note.push_str("; start and end indexes are not converted");
                }
                if !self.runtime.contains(&input) {
                    self.entry(el, &path, Status::Approximated, format!("the input `{input}` is not a list set by an extractor here: its children run once; write `loop: {{ foreach }}` by hand"));
                    return steps(self);
                }
                self.entry(el, &path, Status::Approximated, note);
                let items = inner_steps!();
                let mut l = Y::map();
                l.set("foreach", Y::s(input));
                l.set("as", Y::s(output));
                l.set("steps", seq(items));
                wrap("loop", l)
            }
            "OnceOnlyController" => {
                self.entry(
                    el,
                    &path,
                    Status::Converted,
                    "→ `once:` (each VU's first iteration)",
                );
                wrap("once", seq(inner_steps!()))
            }
            "TransactionController" => {
                let mut note = None;
                if el.b("TransactionController.parent", false) {
                    note = Some("JMeter reports only the transaction (its samples as sub-results); onrush reports the group and each request".to_string());
                }
                self.entry_opt(el, &path, "→ `group:` (measured as a whole)", note);
                let mut g = Y::map();
                g.set("name", Y::s(el.name.replace("${", "$${")));
                g.set("steps", seq(inner_steps!()));
                wrap("group", g)
            }
            "RandomController" | "InterleaveControl" => {
                let how = if c == "InterleaveControl" {
                    Status::Approximated
                } else {
                    Status::Converted
                };
                let note = if c == "InterleaveControl" {
                    "one child per run, chosen at random with equal weights (JMeter takes them in turn)"
                } else {
                    "→ `random:` with equal weights"
                };
                self.entry(el, &path, how, note);
                self.branches(el, &inner)
            }
            "ThroughputController" => {
                let percent = el.s("ThroughputController.style") != "0";
                let value = el
                    .prop("ThroughputController.percentThroughput")
                    .or_else(|| el.prop("ThroughputController.maxThroughput"));
                let v = value
                    .map(|p| {
                        if p.value.is_empty() {
                            p.s("value").to_string()
                        } else {
                            p.value.clone()
                        }
                    })
                    .unwrap_or_default();
                let v: f64 = v.trim().parse().unwrap_or(100.0);
                if percent {
                    self.entry(el, &path, Status::Approximated, format!("{v}% of the runs → `random:` with weights {v} / {} (chosen at random, JMeter counts)", 100.0 - v));
                    let w = v.clamp(0.0, 100.0);
                    if w <= 0.0 {
                        return Vec::new();
                    }
                    let mut items = inner_steps!();
                    if w >= 100.0 {
                        return items;
                    }
                    let mut a = Y::map();
                    a.set("weight", Y::Raw(format!("{}", (w * 100.0).round() as u64)));
                    a.set("steps", Y::Seq(std::mem::take(&mut items)));
                    let mut b = Y::map();
                    b.set(
                        "weight",
                        Y::Raw(format!("{}", ((100.0 - w) * 100.0).round() as u64)),
                    );
                    b.set("steps", Y::Seq(vec![(think_0(), vec![])]));
                    wrap("random", Y::Seq(vec![(a, vec![]), (b, vec![])]))
                } else {
                    self.entry(
                        el,
                        &path,
                        Status::Approximated,
                        format!("{v} executions in all → once per VU (`once:`)"),
                    );
                    wrap("once", seq(inner_steps!()))
                }
            }
            "SwitchController" => {
                let value = el.s("SwitchController.value").trim().to_string();
                let enabled: Vec<&El> = el
                    .children
                    .iter()
                    .filter(|e| e.enabled && super::scope::kind(e) != super::scope::Kind::Scoped)
                    .collect();
                let chosen = value
                    .parse::<usize>()
                    .ok()
                    .or_else(|| enabled.iter().position(|e| e.name == value))
                    .or(if value.is_empty() { Some(0) } else { None });
                match chosen {
                    Some(i) if i < enabled.len() => {
                        self.entry(
                            el,
                            &path,
                            Status::Converted,
                            format!("always runs child {i} (`{}`)", enabled[i].name),
                        );
                        let keep = enabled[i].name.clone();
                        let mut clone = el.clone();
                        let mut seen = 0usize;
                        clone.children.retain(|e| {
                            if !e.enabled || super::scope::kind(e) == super::scope::Kind::Scoped {
                                return true;
                            }
                            seen += 1;
                            seen == i + 1 && e.name == keep
                        });
                        self.children(&clone.children, &inner)
                    }
                    _ => {
                        self.entry(el, &path, Status::Approximated, format!("the switch value `{value}` is known only at run time: the first child runs; write `if:` steps by hand"));
                        let first = enabled.first().map(|e| (*e).clone());
                        let mut kept: Vec<El> = el
                            .children
                            .iter()
                            .filter(|e| super::scope::kind(e) == super::scope::Kind::Scoped)
                            .cloned()
                            .collect();
                        kept.extend(first);
                        self.children(&kept, &inner)
                    }
                }
            }
            "RunTime" => {
                let secs = el.s("RunTime.seconds");
                self.entry(el, &path, Status::Approximated, format!("JMeter repeats its children for {secs} s; onrush runs them once (no time-bounded loop)"));
                steps(self)
            }
            _ => {
                self.entry(el, &path, Status::Approximated, "a controller onrush does not know (a plugin?): its children are inlined, run once in order");
                steps(self)
            }
        }
    }

    fn entry_opt(&mut self, el: &El, path: &str, how: &str, note: Option<String>) {
        match note {
            Some(n) => self.entry(el, path, Status::Approximated, format!("{how}; {n}")),
            None => self.entry(el, path, Status::Converted, how),
        }
    }

    /// One `random:` branch per child that converts to steps.
    fn branches(&mut self, el: &El, inner: &Scope) -> Vec<Item> {
        let scope = self.configs(&el.children, inner, &inner.path);
        let mut branches = Vec::new();
        for child in &el.children {
            if !child.enabled {
                self.disabled(child, &inner.path);
                continue;
            }
            let items = match super::scope::kind(child) {
                super::scope::Kind::Scoped => continue,
                super::scope::Kind::Sampler => self.sampler(child, &scope),
                super::scope::Kind::Controller => self.controller(child, &scope),
                _ => self.unknown(child, &scope),
            };
            if items.iter().any(|i| i.0 != Y::Nothing) {
                let mut b = Y::map();
                b.set("weight", Y::Raw("1".into()));
                b.set("steps", Y::Seq(items));
                branches.push((b, vec![]));
            }
        }
        if branches.is_empty() {
            return Vec::new();
        }
        wrap("random", Y::Seq(branches))
    }

    /// Flow Control Action: a pause → `think`; the other actions are reported.
    pub fn flow_action(&mut self, el: &El, scope: &Scope) -> Vec<Item> {
        let path = scope.path.clone();
        let action = el.s("ActionProcessor.action").trim();
        let dur = el
            .prop("ActionProcessor.duration")
            .map(|p| p.value.trim().to_string())
            .unwrap_or_default();
        if action == "1" {
            let ms = dur.parse::<u64>().unwrap_or(0);
            self.entry(
                el,
                &path,
                Status::Converted,
                "a pause → `think:` (with the timers in its scope)",
            );
            let mut out: Vec<Item> = scope.timers.iter().map(|t| (t.clone(), vec![])).collect();
            if ms > 0 || out.is_empty() {
                let mut t = Y::map();
                t.set("think", Y::s(format!("{ms}ms")));
                out.push((t, vec![format!("JMeter Flow Control Action `{}`", el.name)]));
            }
            return out;
        }
        let what = match action {
            "0" | "2" => "stop the thread or the test",
            "3" | "5" => "go to the next iteration",
            "4" => "start the next iteration of the current loop",
            _ => "this action",
        };
        self.entry(el, &path, Status::NotConverted, format!("onrush has no step to {what} unconditionally; use `on_failure:` (next_iteration, stop_vu, stop_test) on the step whose failure should trigger it"));
        vec![super::scope::comment_item(vec![format!(
            "NOT CONVERTED: Flow Control Action `{}` ({what})",
            el.name
        )])]
    }
}

fn wrap(key: &str, value: Y) -> Vec<Item> {
    let mut m = Y::map();
    m.set(key, value);
    vec![(m, vec![])]
}

fn think_0() -> Y {
    let mut t = Y::map();
    t.set("think", Y::s("0ms"));
    t
}

/// `${var}` alone.
fn var_only(cond: &str) -> Option<&str> {
    let inner = cond.strip_prefix("${")?.strip_suffix('}')?;
    (!inner.starts_with("__") && !inner.contains(['{', '}', '(', ' '])).then_some(inner)
}

/// `"${var}" == "value"` / `!=` (JavaScript or `__jexl3`/`__groovy` around it), or `${var}`
/// alone with "interpret as variable expression" → `(var, equals|not_equals, value)`.
fn if_condition(cond: &str) -> Option<(String, &'static str, String)> {
    let mut c = cond.trim();
    for f in ["${__jexl3(", "${__jexl2(", "${__groovy(", "${__javaScript("] {
        if let Some(inner) = c.strip_prefix(f).and_then(|s| s.strip_suffix(")}")) {
            c = inner.trim();
            // A trailing `,variable` argument of the function.
            if let Some((head, tail)) = c.rsplit_once(',') {
                if !tail.contains('"') && !tail.contains('$') {
                    c = head.trim();
                }
            }
        }
    }
    if let Some(v) = var_only(c) {
        return Some((v.to_string(), "equals", "true".into()));
    }
    for (op, key) in [("==", "equals"), ("!=", "not_equals")] {
        if let Some((l, r)) = c.split_once(op) {
            let unq = |s: &str| {
                let s = s.trim();
                s.strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .or_else(|| s.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
                    .map(str::to_string)
            };
            let (l, r) = (unq(l)?, unq(r)?);
            let (var, value) = match (var_only(&l), var_only(&r)) {
                (Some(v), _) if !r.contains("${") => (v.to_string(), r),
                (_, Some(v)) if !l.contains("${") => (v.to_string(), l),
                _ => return None,
            };
            return Some((var, key, value));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_conditions() {
        assert_eq!(
            if_condition("\"${role}\" == \"admin\""),
            Some(("role".into(), "equals", "admin".into()))
        );
        assert_eq!(
            if_condition("${__jexl3(\"${a}\" != \"x\")}"),
            Some(("a".into(), "not_equals", "x".into()))
        );
        assert_eq!(
            if_condition("${__groovy(\"${a}\" == \"x\",)}"),
            Some(("a".into(), "equals", "x".into()))
        );
        assert_eq!(
            if_condition("${ok}"),
            Some(("ok".into(), "equals", "true".into()))
        );
        assert_eq!(if_condition("${x} > 3"), None);
    }
}
