//! A plan's scripts read and checked at load: [`load`] gives a [`ScriptsBuilder`] (the modules,
//! their exports, a checking engine), the plan compiler numbers the functions it uses, and
//! [`ScriptsBuilder::finish`] gives [`Scripts`], what every worker's engine is made from.

use std::path::Path;
use std::time::Duration;

use crate::engine::Engine;
use crate::FunctionId;

/// What the workers need of a plan's scripts: sources in memory (no file is read after load,
/// so agents of a distributed run need only the plan's bundle), and the functions the plan uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scripts {
    /// Every module, the plan's and those they import: (name relative to the plan's folder,
    /// source), in load order.
    pub modules: Vec<(String, String)>,
    /// The modules the plan lists under `scripts:`.
    pub entries: Vec<String>,
    /// Files read with `open(path)` when the modules loaded: (name, contents).
    pub opened: Vec<(String, String)>,
    /// The functions the plan calls, by [`FunctionId`].
    pub functions: Vec<Function>,
    /// How long one call may run before it is interrupted (`script_timeout`).
    pub timeout: Duration,
}

/// A function the plan calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Function {
    /// An export of one of the plan's modules.
    Export { module: String, name: String },
    /// Code written in the plan: `expression` for checks and conditions (its value is the
    /// result), statements for `script:` steps. `origin`: the plan's file:line:col.
    Inline {
        code: String,
        expression: bool,
        origin: String,
    },
}

impl Scripts {
    /// Every file the scripts read at load (modules and `open`ed files), relative to the plan's
    /// folder: they travel with the plan to the agents of a distributed run.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.modules
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !n.starts_with("onrush/"))
            .chain(self.opened.iter().map(|(n, _)| n.as_str()))
    }
}

/// A script that could not be loaded: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// `file:line:col` in the script, when the engine said where.
    pub place: Option<String>,
    pub message: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.place {
            Some(p) => write!(f, "{p}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Reads `entries` (paths relative to `dir`, the plan's folder) and what they import, runs
/// their top-level code once in a checking engine, and lists their exports.
pub fn load(
    dir: &Path,
    entries: &[String],
    timeout: Duration,
) -> Result<ScriptsBuilder, LoadError> {
    let engine = Engine::checking(dir.to_path_buf(), entries, timeout)?;
    Ok(ScriptsBuilder {
        engine,
        functions: Vec::new(),
        timeout,
    })
}

/// The plan compiler's view of the scripts while it compiles: function numbers handed out,
/// inline code checked as it is met.
pub struct ScriptsBuilder {
    engine: Engine,
    functions: Vec<Function>,
    timeout: Duration,
}

impl ScriptsBuilder {
    /// The number of exported function `name` (`sign`, or `module.sign` to say which module's,
    /// `module` being its file name without `.js`). The error says what exists.
    pub fn export(&mut self, name: &str) -> Result<FunctionId, String> {
        let exports = self.engine.exports();
        let found: Vec<&(String, String)> = match name.rsplit_once('.') {
            Some((module, func)) => exports
                .iter()
                .filter(|(m, f)| f == func && module_stem(m) == module)
                .collect(),
            None => exports.iter().filter(|(_, f)| f == name).collect(),
        };
        match found.as_slice() {
            [(module, func)] => {
                let f = Function::Export {
                    module: module.clone(),
                    name: func.clone(),
                };
                Ok(self.number(f))
            }
            [] => {
                let known: Vec<String> = exports.iter().map(|(_, f)| f.clone()).collect();
                let list = if known.is_empty() {
                    "the plan's scripts export no function".to_string()
                } else {
                    format!("exported functions: {}", known.join(", "))
                };
                Err(format!("no script exports a function `{name}`; {list}"))
            }
            several => Err(format!(
                "`{name}` is exported by several scripts ({}): write `module.{name}` to say which",
                several
                    .iter()
                    .map(|(m, _)| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The number of inline code, checked now: a syntax error is placed at `origin` (the plan's
    /// file:line:col of the code) with the line and column inside the code.
    pub fn inline(
        &mut self,
        code: &str,
        expression: bool,
        origin: &str,
    ) -> Result<FunctionId, String> {
        self.engine.check_inline(code, expression)?;
        Ok(self.number(Function::Inline {
            code: code.to_string(),
            expression,
            origin: origin.to_string(),
        }))
    }

    /// The names of the exported functions, for did-you-mean hints.
    pub fn export_names(&self) -> Vec<String> {
        self.engine
            .exports()
            .iter()
            .map(|(_, f)| f.clone())
            .collect()
    }

    fn number(&mut self, f: Function) -> FunctionId {
        if let Some(i) = self.functions.iter().position(|g| *g == f) {
            return i as FunctionId;
        }
        self.functions.push(f);
        (self.functions.len() - 1) as FunctionId
    }

    /// What [`finish`](Self::finish) would give now (the modules and opened files so far).
    pub fn snapshot(&self) -> Scripts {
        let (modules, entries, opened) = self.engine.sources();
        Scripts {
            modules,
            entries,
            opened,
            functions: self.functions.clone(),
            timeout: self.timeout,
        }
    }

    pub fn finish(self) -> Scripts {
        let (modules, entries, opened) = self.engine.sources();
        Scripts {
            modules,
            entries,
            opened,
            functions: self.functions,
            timeout: self.timeout,
        }
    }
}

/// A module's name without its folders and `.js`/`.mjs`.
pub(crate) fn module_stem(module: &str) -> &str {
    let file = module.rsplit('/').next().unwrap_or(module);
    file.strip_suffix(".js")
        .or_else(|| file.strip_suffix(".mjs"))
        .unwrap_or(file)
}

/// The variable names a script assigns through `vars` (`vars.total = ...`,
/// `ctx.vars['total'] = ...`): the plan gives them slots, so that templates can read them.
/// A script may keep other values in `vars` under names computed at run time: those stay in
/// the VU's script state, invisible to templates.
pub fn scan_var_names(source: &str, out: &mut Vec<String>) {
    use std::sync::OnceLock;
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#"\bvars\s*(?:\.\s*([A-Za-z_$][A-Za-z0-9_$]*)|\[\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\])\s*(?:=[^=]|\+=|-=|\*=|/=|\|\|=|\?\?=|\+\+|--)"#,
        )
        .expect("a valid expression")
    });
    for c in re.captures_iter(source) {
        let name = c.get(1).or(c.get(2)).map_or("", |m| m.as_str());
        if !name.contains('$') && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn var_names_assigned() {
        let mut names = Vec::new();
        scan_var_names(
            "ctx.vars.total = 1; vars['nonce'] = x; if (vars.a == 2) {} vars.b += 1; vars.c++; vars.d === 3",
            &mut names,
        );
        assert_eq!(names, ["total", "nonce", "b", "c"]);
        assert_eq!(module_stem("lib/checkout.js"), "checkout");
    }
}
