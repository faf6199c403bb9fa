//! What every request step (of any protocol) may have beyond its own keys: `extract`, `check`,
//! `on_failure`; and the plan's files (`plan_file`, a file compiled as a template), and
//! `name: value` mappings of templates, which protocols' grammars read.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::sync::Arc;

use super::steps::Build;
use super::{Ctx, Fields};
use crate::error::PlanError;
use crate::units;
use crate::yaml::{Kind, Node};
use crate::{
    Check, CheckKind, Extract, ExtractSource, HashAlgorithm, Occurrence, OnFailure, Shared,
    Template, ValueExpect,
};

const EXTRACT_KINDS: [&str; 9] = [
    "boundary", "regex", "jsonpath", "css", "xpath", "header", "cookie", "status", "url",
];
const EXTRACT_KEYS: [&str; 13] = [
    "boundary",
    "regex",
    "jsonpath",
    "css",
    "xpath",
    "header",
    "cookie",
    "status",
    "url",
    "group",
    "attribute",
    "occurrence",
    "default",
];
const CHECK_KINDS: [&str; 10] = [
    "js",
    "status",
    "body_contains",
    "body_matches",
    "jsonpath",
    "header",
    "duration_below",
    "body_size",
    "body_sha256",
    "body_md5",
];
const CHECK_KEYS: [&str; 15] = [
    "js",
    "status",
    "body_contains",
    "body_matches",
    "jsonpath",
    "header",
    "duration_below",
    "body_size",
    "body_sha256",
    "body_md5",
    "name",
    "exists",
    "equals",
    "contains",
    "matches",
];

impl Ctx<'_> {
    /// A file path relative to the plan's directory that must exist.
    pub(crate) fn plan_file(
        &self,
        node: &Node,
        field: &str,
        what: &str,
    ) -> Result<PathBuf, PlanError> {
        let rel = self.string(node, field)?;
        let resolved = self.plan_path(rel.trim());
        if !resolved.is_file() {
            let how = if resolved.exists() {
                "is not a file"
            } else {
                "does not exist"
            };
            return Err(self
                .err(
                    node,
                    field,
                    format!(
                        "{} {how}; expected a file to send as {what}",
                        resolved.display()
                    ),
                )
                .with_hint(format!(
                    "paths are relative to the plan file's directory ({})",
                    self.base_dir().display()
                )));
        }
        Ok(resolved)
    }

    /// `body_template: FILE`: the file's text compiled as a template; errors in it name the
    /// file and its line.
    pub(crate) fn template_file(&self, node: &Node, field: &str) -> Result<Template, PlanError> {
        let path = self.plan_file(node, field, "a body template")?;
        let bytes = std::fs::read(&path)
            .map_err(|e| self.err(node, field, format!("cannot read {}: {e}", path.display())))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            self.err(
                node,
                field,
                format!(
                    "{} is not UTF-8 text (invalid byte at offset {}); expected a text template",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ),
            )
            .with_hint("send binary files with `body_file:`")
        })?;
        let name = path.display().to_string();
        let sub = Ctx {
            grammars: self.grammars,
            no_target: self.no_target,
            source: &name,
            text: &text,
            base_dir: self.base_dir,
            env: self.env,
            vars: self.vars.clone(),
            unset: self.unset.clone(),
            runtime: self.runtime.clone(),
            counters: RefCell::new(self.counters.borrow().clone()),
            globals: RefCell::new(self.globals.borrow().clone()),
            on_failure_default: Cell::new(self.on_failure_default.get()),
            files: RefCell::new(std::collections::BTreeSet::new()),
            sections: Vec::new(),
            scenario_memory: RefCell::default(),
            step_base: RefCell::default(),
            // A template file calls no script function (its text has no plan position).
            scripts: RefCell::new(None),
            script_vars: RefCell::new(Vec::new()),
            script_timeout: self.script_timeout,
        };
        let file_node = Node::text_node(text.clone(), 0..text.len());
        let t = sub.template(&file_node, field)?;
        *self.counters.borrow_mut() = sub.counters.into_inner();
        *self.globals.borrow_mut() = sub.globals.into_inner();
        self.files.borrow_mut().extend(sub.files.into_inner());
        Ok(t)
    }

    /// A mapping of names to template values (`form:`, `query:`), in file order.
    pub(crate) fn pairs(
        &self,
        node: &Node,
        path: &str,
        what: &str,
    ) -> Result<Vec<(String, Template)>, PlanError> {
        let Kind::Map(entries) = &node.kind else {
            return Err(self
                .err(
                    node,
                    path,
                    format!(
                        "expected a mapping of {what} names to values, found {}",
                        node.describe()
                    ),
                )
                .with_hint("e.g. `{ q: \"${term}\", page: 2 }`"));
        };
        let mut out = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let key = &k.as_scalar().expect("keys are scalars").text;
            let field = format!("{path}.{key}");
            let name = self.string(k, &field)?;
            let value = if v.is_null() {
                Template::constant("")
            } else {
                self.template(v, &field)?
            };
            out.push((name, value));
        }
        Ok(out)
    }

    pub(super) fn on_failure(&self, node: &Node, path: &str) -> Result<OnFailure, PlanError> {
        self.choice(
            node,
            path,
            "failure action",
            &[
                OnFailure::Continue,
                OnFailure::NextIteration,
                OnFailure::StopVu,
                OnFailure::StopTest,
            ],
            OnFailure::as_str,
            "continue goes on; next_iteration ends the iteration; stop_vu stops this VU; stop_test stops the test",
        )
    }

    /// `extract: { NAME: { KIND: EXPR, ... } }`.
    pub(super) fn extract(
        &self,
        node: &Node,
        path: &str,
        metric: usize,
        m: &mut Build,
    ) -> Result<Vec<Extract>, PlanError> {
        let example = "e.g. `extract: { token: { jsonpath: \"$.token\" }, csrf: { css: \"input[name=csrf]\", attribute: value } }`";
        let Kind::Map(entries) = &node.kind else {
            return Err(self
                .err(
                    node,
                    path,
                    format!(
                        "expected a mapping of variable names to extractors, found {}",
                        node.describe()
                    ),
                )
                .with_hint(example));
        };
        let mut out = Vec::new();
        for (k, v) in entries {
            let name = k.as_scalar().expect("keys are scalars").text.clone();
            let field = format!("{path}.{name}");
            let var = self
                .runtime
                .iter()
                .position(|r| *r == name)
                .expect("runtime variables were collected from the same tree");
            let f = self
                .map(v, &field, &EXTRACT_KEYS)
                .map_err(|e| e.with_hint(example))?;
            let kind = self.exactly_one(
                &f,
                v,
                &EXTRACT_KINDS,
                "extractor",
                "extractor per variable (extract into two variables instead)",
                example,
            )?;
            let knode = f.get(kind).expect("present");
            let kfield = f.child(kind);
            for extra in ["group", "attribute"] {
                let allowed = (extra == "group" && kind == "regex")
                    || (extra == "attribute" && kind == "css");
                if let (Some(key), false) = (f.key(extra), allowed) {
                    return Err(self
                        .err(
                            key,
                            &f.child(extra),
                            format!("`{extra}` does not apply to a {kind} extractor"),
                        )
                        .with_hint(if extra == "group" {
                            "`group` is for `regex`"
                        } else {
                            "`attribute` is for `css`"
                        }));
                }
            }
            let body = |k: onrush_extract::Kind| -> Result<ExtractSource, PlanError> {
                onrush_extract::Extractor::new(k)
                    .map(|e| ExtractSource::Body(Shared(Arc::new(e))))
                    .map_err(|e| {
                        self.err(
                            knode,
                            &kfield,
                            format!("{}: {}", e.kind, e.message.trim_end()),
                        )
                        .with_hint(e.hint)
                    })
            };
            let source = match kind {
                "boundary" => {
                    let (left, right) = self.boundary(knode, &kfield)?;
                    body(onrush_extract::Kind::Boundary { left, right })?
                }
                "regex" => {
                    let group = match f.get("group") {
                        Some(g) => self.uint(
                            g,
                            &f.child("group"),
                            0,
                            99,
                            "the capture group number; 0 is the whole match",
                        )? as usize,
                        None => 1,
                    };
                    let pattern = self.string(knode, &kfield)?;
                    let group = if group == 1 && !pattern.contains('(') {
                        0
                    } else {
                        group
                    };
                    body(onrush_extract::Kind::Regex { pattern, group })?
                }
                "jsonpath" => body(onrush_extract::Kind::JsonPath(self.string(knode, &kfield)?))?,
                "css" => {
                    let attribute = match f.get("attribute") {
                        Some(a) => Some(self.string(a, &f.child("attribute"))?),
                        None => None,
                    };
                    body(onrush_extract::Kind::Css {
                        selector: self.string(knode, &kfield)?,
                        attribute,
                    })?
                }
                "xpath" => body(onrush_extract::Kind::XPath(self.string(knode, &kfield)?))?,
                "header" => {
                    ExtractSource::Header(self.string(knode, &kfield)?.trim().to_ascii_lowercase())
                }
                "cookie" => ExtractSource::Cookie(self.string(knode, &kfield)?.trim().to_string()),
                "status" => {
                    self.flag(knode, &kfield, "status")?;
                    ExtractSource::Status
                }
                _ => {
                    self.flag(knode, &kfield, "url")?;
                    ExtractSource::Url
                }
            };
            let occurrence = match f.get("occurrence") {
                Some(o) => self.occurrence(o, &f.child("occurrence"))?,
                None => Occurrence::Nth(1),
            };
            let default = match f.get("default") {
                Some(d) => Some(self.string(d, &f.child("default"))?),
                None => None,
            };
            let check = default
                .is_none()
                .then(|| m.check(format!("extract {name}"), metric));
            out.push(Extract {
                var,
                name,
                source,
                occurrence,
                default,
                check,
            });
        }
        Ok(out)
    }

    /// `status: true` / `url: true` (the value must be true).
    fn flag(&self, node: &Node, path: &str, key: &str) -> Result<(), PlanError> {
        if !self.boolean(node, path, key)? {
            return Err(self
                .err(
                    node,
                    path,
                    format!("`{key}: false` extracts nothing; expected `{key}: true`"),
                )
                .with_hint("remove the variable, or write `true`"));
        }
        Ok(())
    }

    /// `boundary: [LEFT, RIGHT]` or `boundary: { left, right }`.
    fn boundary(&self, node: &Node, path: &str) -> Result<(String, String), PlanError> {
        let hint =
            "write `boundary: { left: 'value=\"', right: '\"' }` or `boundary: ['value=\"', '\"']`";
        match &node.kind {
            Kind::Seq(items) if items.len() == 2 => Ok((
                self.string(&items[0], &format!("{path}[0]"))?,
                self.string(&items[1], &format!("{path}[1]"))?,
            )),
            Kind::Map(_) => {
                let f = self.map(node, path, &["left", "right"])?;
                let left = match f.get("left") {
                    Some(l) if !l.is_null() => self.string(l, &f.child("left"))?,
                    _ => String::new(),
                };
                let right = match f.get("right") {
                    Some(r) if !r.is_null() => self.string(r, &f.child("right"))?,
                    _ => String::new(),
                };
                if left.is_empty() && right.is_empty() {
                    return Err(self
                        .err(
                            node,
                            path,
                            "both boundaries are empty; expected at least one",
                        )
                        .with_hint(hint));
                }
                Ok((left, right))
            }
            _ => Err(self
                .err(
                    node,
                    path,
                    format!("expected two boundaries, found {}", node.describe()),
                )
                .with_hint(hint)),
        }
    }

    fn occurrence(&self, node: &Node, path: &str) -> Result<Occurrence, PlanError> {
        let text = self.string(node, path)?;
        Ok(match text.trim() {
            "last" => Occurrence::Last,
            "random" => Occurrence::Random,
            "all" => Occurrence::All,
            _ => Occurrence::Nth(self.uint(
                node,
                path,
                1,
                u32::MAX as u64,
                "`occurrence` is 1, 2, ... (1-based), `last`, `random` or `all`",
            )? as usize),
        })
    }

    /// `check:` a list of checks (or one).
    pub(super) fn checks(
        &self,
        node: &Node,
        path: &str,
        metric: usize,
        m: &mut Build,
    ) -> Result<Vec<Check>, PlanError> {
        let example = "e.g. `check: [{ status: 200 }, { body_contains: \"Welcome\" }, { jsonpath: \"$.ok\", equals: \"true\" }]`";
        let items = self.maps_or_one(node, path, "checks", example)?;
        let mut out = Vec::new();
        for (item, field) in items {
            let f = self
                .map(item, &field, &CHECK_KEYS)
                .map_err(|e| e.with_hint(example))?;
            let kind = self.exactly_one(
                &f,
                item,
                &CHECK_KINDS,
                "check",
                "check per list item (write each check as its own item)",
                example,
            )?;
            let knode = f.get(kind).expect("present");
            let kfield = f.child(kind);
            let takes_expect = matches!(kind, "jsonpath" | "header");
            if !takes_expect {
                for k in ["exists", "equals", "contains", "matches"] {
                    if let Some(key) = f.key(k) {
                        return Err(self.err(key, &f.child(k), format!("`{k}` does not apply to a `{kind}` check")).with_hint("`exists`, `equals`, `contains` and `matches` go with `jsonpath:` and `header:` checks"));
                    }
                }
            }
            let raw = knode.as_scalar().map_or(String::new(), |s| s.text.clone());
            let (kind_value, default_name) = match kind {
                "status" => {
                    let list = self.status_list(knode, &kfield)?;
                    let shown: Vec<String> = list.iter().map(u16::to_string).collect();
                    (
                        CheckKind::Status(list),
                        format!("status in [{}]", shown.join(", ")),
                    )
                }
                "js" => (
                    CheckKind::Script(self.js_expression(knode, &kfield)?),
                    format!("js {}", crate::yaml::truncate(raw.trim(), 60)),
                ),
                "body_contains" => (
                    CheckKind::BodyContains(self.template(knode, &kfield)?),
                    format!("body contains {raw:?}"),
                ),
                "body_matches" => (
                    CheckKind::BodyMatches(self.regex(knode, &kfield)?),
                    format!("body matches {raw:?}"),
                ),
                "jsonpath" => {
                    let expr = self.string(knode, &kfield)?;
                    let path_ex = onrush_extract::Extractor::new(onrush_extract::Kind::JsonPath(
                        expr.clone(),
                    ))
                    .map_err(|e| {
                        self.err(
                            knode,
                            &kfield,
                            format!("{}: {}", e.kind, e.message.trim_end()),
                        )
                        .with_hint(e.hint)
                    })?;
                    let (expect, shown) = self.value_expect(&f, false)?;
                    (
                        CheckKind::JsonPath {
                            path: Shared(Arc::new(path_ex)),
                            expect,
                        },
                        format!("{expr} {shown}"),
                    )
                }
                "header" => {
                    let name = self.string(knode, &kfield)?.trim().to_ascii_lowercase();
                    let (expect, shown) = self.value_expect(&f, true)?;
                    (
                        CheckKind::Header {
                            name: name.clone(),
                            expect,
                        },
                        format!("header {name} {shown}"),
                    )
                }
                "duration_below" => {
                    let d = self.duration(knode, &kfield)?;
                    (
                        CheckKind::DurationBelow(d),
                        format!("duration < {}", units::show_duration(d)),
                    )
                }
                "body_size" => {
                    let (min, max) = self.size_range(knode, &kfield)?;
                    (
                        CheckKind::BodySize { min, max },
                        size_range_name(knode, &raw),
                    )
                }
                _ => {
                    let algorithm = if kind == "body_sha256" {
                        HashAlgorithm::Sha256
                    } else {
                        HashAlgorithm::Md5
                    };
                    let want = if algorithm == HashAlgorithm::Sha256 {
                        64
                    } else {
                        32
                    };
                    let hex = self.string(knode, &kfield)?.trim().to_ascii_lowercase();
                    if hex.len() != want || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(self
                            .err(
                                knode,
                                &kfield,
                                format!(
                                    "expected {want} hexadecimal digits, found {:?}",
                                    crate::yaml::truncate(&hex, 80)
                                ),
                            )
                            .with_hint(if want == 64 {
                                "compute it with `sha256sum FILE`"
                            } else {
                                "compute it with `md5sum FILE`"
                            }));
                    }
                    (
                        CheckKind::BodyHash {
                            algorithm,
                            hex: hex.clone(),
                        },
                        format!("{kind} {}", &hex[..12]),
                    )
                }
            };
            let name = match f.get("name") {
                Some(n) => self.string(n, &f.child("name"))?,
                None => default_name,
            };
            out.push(Check {
                id: m.check(name, metric),
                kind: kind_value,
            });
        }
        Ok(out)
    }

    fn status_list(&self, node: &Node, path: &str) -> Result<Vec<u16>, PlanError> {
        let hint = "HTTP status codes are 100..599, e.g. `status: [200, 201]`";
        let items = self.one_or_many(node, path, "status codes", hint)?;
        items
            .into_iter()
            .map(|(n, p)| Ok(self.uint(n, &p, 100, 599, hint)? as u16))
            .collect()
    }

    pub(crate) fn regex(
        &self,
        node: &Node,
        path: &str,
    ) -> Result<Shared<regex::bytes::Regex>, PlanError> {
        let text = self.string(node, path)?;
        regex::bytes::Regex::new(&text)
            .map(|r| Shared(Arc::new(r)))
            .map_err(|e| {
                self.err(node, path, format!("invalid regular expression: {e}"))
                    .with_hint("regex syntax: https://docs.rs/regex/#syntax")
            })
    }

    /// `exists`, `equals`, `contains` (headers) or `matches` next to a jsonpath/header check.
    fn value_expect(
        &self,
        f: &Fields,
        contains_ok: bool,
    ) -> Result<(ValueExpect, String), PlanError> {
        let hint = "e.g. `{ jsonpath: \"$.user.id\", equals: \"42\" }` or `{ header: Content-Type, contains: json }` or `exists: true`";
        let expectation = self.at_most_one(
            f,
            &["exists", "equals", "contains", "matches"],
            "expectation per check",
            hint,
        )?;
        let Some(k) = expectation else {
            return Ok((ValueExpect::Exists(true), "exists".into()));
        };
        let node = f.get(k).expect("present");
        let field = f.child(k);
        let raw = node.as_scalar().map_or(String::new(), |s| s.text.clone());
        Ok(match k {
            "exists" => {
                let b = self.boolean(node, &field, "exists")?;
                let shown = if b { "exists" } else { "does not exist" };
                (ValueExpect::Exists(b), shown.into())
            }
            "equals" => (
                ValueExpect::Equals(self.template(node, &field)?),
                format!("== {raw:?}"),
            ),
            "contains" if contains_ok => (
                ValueExpect::Contains(self.template(node, &field)?),
                format!("contains {raw:?}"),
            ),
            "contains" => return Err(self
                .err(
                    node,
                    &field,
                    "`contains` applies to header checks; expected `equals`, `exists` or `matches`",
                )
                .with_hint(hint)),
            _ => (
                ValueExpect::Matches(self.regex(node, &field)?),
                format!("matches {raw:?}"),
            ),
        })
    }

    /// `body_size: { min, max }` or `body_size: N` (exactly N).
    fn size_range(&self, node: &Node, path: &str) -> Result<(u64, u64), PlanError> {
        let size = |n: &Node, p: &str| -> Result<u64, PlanError> {
            let t = self.string(n, p)?;
            units::parse_bytes(&t).map_err(|e| self.err(n, p, e.message).with_hint(e.hint))
        };
        match &node.kind {
            Kind::Map(_) => {
                let f = self.map(node, path, &["min", "max"])?;
                let min = f
                    .get("min")
                    .map(|n| size(n, &f.child("min")))
                    .transpose()?
                    .unwrap_or(0);
                let max = f
                    .get("max")
                    .map(|n| size(n, &f.child("max")))
                    .transpose()?
                    .unwrap_or(u64::MAX);
                if min > max {
                    return Err(self.err(
                        node,
                        path,
                        format!("min {min} is above max {max}; expected min <= max"),
                    ));
                }
                Ok((min, max))
            }
            _ => {
                let n = size(node, path)?;
                Ok((n, n))
            }
        }
    }
}

/// The default name of a `body_size` check, with its bounds as the plan wrote them (its
/// units kept): `body size = 512`, `body size >= 100`, `body size <= 1KiB`,
/// `body size in [100, 2MB]`. A mapping used to be named plain "body size", which said
/// nothing of what was checked.
fn size_range_name(node: &Node, raw: &str) -> String {
    let Kind::Map(entries) = &node.kind else {
        return format!("body size = {raw}");
    };
    let bound = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| k.as_scalar().is_some_and(|s| s.text == key))
            .and_then(|(_, v)| v.as_scalar())
            .map(|s| s.text.clone())
    };
    match (bound("min"), bound("max")) {
        (Some(min), Some(max)) => format!("body size in [{min}, {max}]"),
        (Some(min), None) => format!("body size >= {min}"),
        (None, Some(max)) => format!("body size <= {max}"),
        (None, None) => "body size (any)".to_string(),
    }
}
