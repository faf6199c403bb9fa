//! `scripts:` (the plan's JavaScript modules) and every place a plan calls into them: a
//! `script:` step, `before:`/`after:` hooks, `js:` checks and conditions, and `${fn(...)}`
//! in templates. The modules are read and checked here, when the plan loads (onrush-script),
//! so that a syntax error is a plan error at its file:line:col, and `validate` finds it.

use onrush_script::{FunctionId, ScriptsBuilder};

use super::Ctx;
use crate::error::PlanError;
use crate::yaml::{Kind, Node};

impl Ctx<'_> {
    /// `scripts: [lib/sign.js, ...]` and `script_timeout:`, before any step is compiled.
    pub(super) fn load_scripts(
        &mut self,
        node: Option<&Node>,
        timeout: Option<&Node>,
    ) -> Result<(), PlanError> {
        let timeout = match timeout {
            Some(t) => {
                let d = self.duration(t, "script_timeout")?;
                if d.is_zero() {
                    return Err(self
                        .err(t, "script_timeout", "script_timeout is 0; expected a positive duration")
                        .with_hint("e.g. `script_timeout: 1s` (the default): a call that runs longer is interrupted and counted as `script_timeout`"));
                }
                d
            }
            None => onrush_script::DEFAULT_TIMEOUT,
        };
        self.script_timeout = timeout;
        let Some(node) = node else {
            return Ok(());
        };
        let items: Vec<&Node> =
            match &node.kind {
                Kind::Seq(items) => items.iter().collect(),
                Kind::Scalar(_) => vec![node],
                _ => return Err(self
                    .err(
                        node,
                        "scripts",
                        format!(
                            "expected a list of JavaScript files, found {}",
                            node.describe()
                        ),
                    )
                    .with_hint(
                        "e.g. `scripts: [lib/sign.js]` (ES modules, paths relative to the plan)",
                    )),
            };
        let mut entries = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let field = format!("scripts[{i}]");
            let name = self.string(item, &field)?;
            let name = name.trim().trim_start_matches("./").to_string();
            if !(name.ends_with(".js") || name.ends_with(".mjs")) {
                return Err(self
                    .err(
                        item,
                        &field,
                        format!(
                            "{name:?} is not a JavaScript module; expected a `.js` or `.mjs` file"
                        ),
                    )
                    .with_hint("e.g. `scripts: [lib/sign.js]`"));
            }
            self.plan_file(item, &field, "script")?;
            entries.push(name);
        }
        let builder = onrush_script::load(self.base_dir, &entries, timeout).map_err(|e| {
            // Point at the `scripts:` entry the broken module came from (or the first).
            let at = e
                .place
                .as_deref()
                .and_then(|p| entries.iter().position(|n| p.starts_with(n.as_str())))
                .unwrap_or(0);
            let hint = if e.message.starts_with("SyntaxError") {
                "fix the script at that line and column (`onrush validate PLAN` checks it again)"
            } else {
                "scripts run their top-level code once when the plan loads: it must not throw"
            };
            self.err(items[at], &format!("scripts[{at}]"), e.to_string())
                .with_hint(hint)
        })?;
        self.adopt_scripts(builder);
        Ok(())
    }

    fn adopt_scripts(&self, builder: ScriptsBuilder) {
        let scripts = builder.snapshot();
        let mut names = self.script_vars.borrow_mut();
        for (_, source) in &scripts.modules {
            onrush_script::scan_var_names(source, &mut names);
        }
        let mut files = self.files.borrow_mut();
        for f in scripts.files() {
            files.insert(self.base_dir.join(f));
        }
        drop(files);
        *self.scripts.borrow_mut() = Some(builder);
    }

    /// The builder, made without modules for a plan whose JavaScript is all inline.
    fn scripts_mut(&self) -> std::cell::RefMut<'_, ScriptsBuilder> {
        let mut s = self.scripts.borrow_mut();
        if s.is_none() {
            *s = Some(
                onrush_script::load(self.base_dir, &[], self.script_timeout)
                    .expect("an engine without modules starts"),
            );
        }
        std::cell::RefMut::map(s, |s| s.as_mut().expect("made above"))
    }

    /// An exported function named by `node` (`before: sign`, `after: checkout.parse`).
    pub(super) fn script_export(&self, node: &Node, path: &str) -> Result<FunctionId, PlanError> {
        let name = self.string(node, path)?;
        let name = name.trim();
        if self.scripts.borrow().is_none() {
            return Err(self
                .err(node, path, format!("`{name}` names a script function, but the plan has no `scripts:`"))
                .with_hint("list the module that exports it at the plan's top level: `scripts: [lib/sign.js]`"));
        }
        let names = self.scripts_mut().export_names();
        self.scripts_mut().export(name).map_err(|m| {
            let near = crate::error::did_you_mean(name, names.iter().map(String::as_str))
                .map(|s| format!("did you mean `{s}`?"));
            self.err(node, path, m).with_opt_hint(near.or_else(|| {
                Some("export it from one of the plan's scripts: `export function NAME(req, ctx) { ... }`".into())
            }))
        })
    }

    /// `script:` a function's name (an export), or code run as statements.
    pub(super) fn script_step(
        &self,
        node: &Node,
        path: &str,
    ) -> Result<(FunctionId, String), PlanError> {
        let text = self.string(node, path)?;
        let trimmed = text.trim();
        let is_name =
            !trimmed.is_empty() && trimmed.split('.').all(|p| onrush_template::is_name(p));
        let exported = is_name
            && self.scripts.borrow().is_some()
            && self.scripts_mut().export(trimmed).is_ok();
        if exported {
            return Ok((self.script_export(node, path)?, trimmed.to_string()));
        }
        let id = self.inline_js(node, path, &text, false)?;
        let short: String = trimmed.chars().take(40).collect();
        Ok((id, short))
    }

    /// `js:` an expression (a check, a condition).
    pub(super) fn js_expression(&self, node: &Node, path: &str) -> Result<FunctionId, PlanError> {
        let text = self.string(node, path)?;
        self.inline_js(node, path, &text, true)
    }

    fn inline_js(
        &self,
        node: &Node,
        path: &str,
        code: &str,
        expression: bool,
    ) -> Result<FunctionId, PlanError> {
        let origin = self.place_of(node);
        self.scripts_mut()
            .inline(code, expression, &origin)
            .map_err(|m| {
                self.err(node, path, m).with_hint(if expression {
                    "a JavaScript expression, e.g. `res.status === 200 && res.json().ok === true` (res, vars and ctx are in scope)"
                } else {
                    "JavaScript statements, e.g. `vars.total = Number(vars.a) * 2` (ctx, vars and the plan's exported functions are in scope)"
                })
            })
    }

    /// `${name(args)}` in a template where `name` is a function the plan's scripts export.
    pub(super) fn script_call_id(&self, name: &str) -> Option<FunctionId> {
        if self.scripts.borrow().is_none() {
            return None;
        }
        self.scripts_mut().export(name).ok()
    }

    /// The plan file's `file:line:col` of a node.
    fn place_of(&self, node: &Node) -> String {
        let before = &self.text[..node.span.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        format!("{}:{line}:{col}", self.source)
    }

    /// The names scripts assign through `vars` (runtime variables of every scenario).
    pub(super) fn script_var_names(&self) -> Vec<String> {
        self.script_vars.borrow().clone()
    }

    /// The plan's scripts, when it has any JavaScript.
    pub(super) fn take_scripts(&self) -> Option<std::sync::Arc<onrush_script::Scripts>> {
        self.scripts
            .borrow_mut()
            .take()
            .map(|b| std::sync::Arc::new(b.finish()))
    }
}
