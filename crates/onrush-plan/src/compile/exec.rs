//! `- { exec: [PROGRAM, ARG...] }` / `- { shell: "COMMAND" }` → [`ExecStep`]: a local command
//! run as a step (onrush-proto-exec runs it).

use super::steps::Build;
use super::Ctx;
use crate::error::PlanError;
use crate::units;
use crate::yaml::{Kind, Node};
use crate::{ExecCommand, ExecStep, Step};

pub(super) const EXEC_KEYS: [&str; 12] = [
    "exec",
    "shell",
    "name",
    "env",
    "cwd",
    "stdin",
    "timeout",
    "expect_exit",
    "max_output",
    "extract",
    "check",
    "on_failure",
];

const EXAMPLE: &str =
    "e.g. `- { exec: [wget, -q, -O, out.html, \"http://127.0.0.1:8080/\"] }` or `- { shell: \"ls | wc -l\" }`";

/// The default of `max_output`: what is kept of stdout, and of stderr.
const DEFAULT_MAX_OUTPUT: u64 = 1 << 20;
/// The largest `max_output`: a VU keeps up to twice this (stdout and stderr).
const MAX_MAX_OUTPUT: u64 = 64 << 20;

impl Ctx<'_> {
    pub(super) fn exec(&self, node: &Node, path: &str, m: &mut Build) -> Result<Step, PlanError> {
        let f = self.map(node, path, &EXEC_KEYS)?;
        let key = self.exactly_one(
            &f,
            node,
            &["exec", "shell"],
            "command",
            "command per step",
            EXAMPLE,
        )?;
        let command_node = f.get(key).expect("present");
        let field = f.child(key);
        let (command, default_name) = if key == "shell" {
            let text = command_node.as_scalar().map_or("", |s| s.text.as_str());
            if text.trim().is_empty() {
                return Err(self
                    .err(
                        command_node,
                        &field,
                        "empty command; expected a shell command line",
                    )
                    .with_hint(EXAMPLE));
            }
            (
                ExecCommand::Shell(self.template(command_node, &field)?),
                format!("shell {}", first_word(text)),
            )
        } else {
            let items = match &command_node.kind {
                Kind::Seq(items) if !items.is_empty() => items,
                Kind::Scalar(_) if !command_node.is_null() => {
                    let text = &command_node.as_scalar().expect("scalar").text;
                    return Err(self
                        .err(
                            command_node,
                            &field,
                            "expected a list: the program, then each argument",
                        )
                        .with_hint(format!(
                            "write `exec: [{}]`, or `shell: {text:?}` to have `sh -c` split it",
                            text.split_whitespace().collect::<Vec<_>>().join(", ")
                        )));
                }
                _ => {
                    return Err(self
                        .err(
                            command_node,
                            &field,
                            format!(
                                "expected a list (the program, then its arguments), found {}",
                                command_node.describe()
                            ),
                        )
                        .with_hint(EXAMPLE))
                }
            };
            let mut argv = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let at = format!("{field}[{i}]");
                if item.as_scalar().is_none() || item.is_null() {
                    return Err(self
                        .err(
                            item,
                            &at,
                            format!("expected a text argument, found {}", item.describe()),
                        )
                        .with_hint("quote an argument that YAML would read otherwise"));
                }
                argv.push(self.template(item, &at)?);
            }
            let program = items[0].as_scalar().map_or("", |s| s.text.as_str());
            if program.trim().is_empty() {
                return Err(self
                    .err(
                        &items[0],
                        &format!("{field}[0]"),
                        "empty program; expected a program name or path",
                    )
                    .with_hint(EXAMPLE));
            }
            (
                ExecCommand::Argv(argv),
                format!("exec {}", first_word(program)),
            )
        };
        let env = match f.get("env") {
            Some(e) => self.env_map(e, &f.child("env"))?,
            None => Vec::new(),
        };
        let cwd = match f.get("cwd") {
            Some(c) => {
                let rel = self.string(c, &f.child("cwd"))?;
                let dir = self.base_dir().join(rel.trim());
                if !dir.is_dir() {
                    return Err(self
                        .err(
                            c,
                            &f.child("cwd"),
                            format!("{} is not a directory; expected the directory to run the command in", dir.display()),
                        )
                        .with_hint(format!(
                            "paths are relative to the plan file's directory ({})",
                            self.base_dir().display()
                        )));
                }
                Some(dir)
            }
            None => None,
        };
        let stdin = match f.get("stdin") {
            Some(s) => Some(self.template(s, &f.child("stdin"))?),
            None => None,
        };
        let expect_exit = match f.get("expect_exit") {
            Some(e) => self.exit_codes(e, &f.child("expect_exit"))?,
            None => vec![0],
        };
        let max_output = match f.get("max_output") {
            Some(n) => {
                let field = f.child("max_output");
                let text = self.string(n, &field)?;
                let v = units::parse_bytes(&text)
                    .map_err(|e| self.err(n, &field, e.message).with_hint(e.hint))?;
                if v > MAX_MAX_OUTPUT {
                    return Err(self
                        .err(
                            n,
                            &field,
                            format!("{text} is too large; expected at most 64MiB"),
                        )
                        .with_hint("output past `max_output` is counted and dropped, not kept; keep only what extractors need"));
                }
                v
            }
            None => DEFAULT_MAX_OUTPUT,
        } as usize;
        let timeout = self.step_timeout(&f)?;
        let name = match f.get("name") {
            Some(n) => self.string(n, &f.child("name"))?,
            None => default_name,
        };
        let metric = m.id(name);
        let (extract, checks, on_failure) = self.step_outcome(&f, metric, m)?;
        Ok(Step::Exec(ExecStep {
            metric,
            command,
            env,
            cwd,
            stdin,
            timeout,
            expect_exit,
            max_output,
            extract,
            checks,
            on_failure,
        }))
    }

    /// `env: { NAME: value }`: names as the environment knows them, values templates.
    fn env_map(
        &self,
        node: &Node,
        path: &str,
    ) -> Result<Vec<(String, crate::Template)>, PlanError> {
        let Kind::Map(entries) = &node.kind else {
            return Err(self
                .err(
                    node,
                    path,
                    format!(
                        "expected a mapping of variable names to values, found {}",
                        node.describe()
                    ),
                )
                .with_hint("e.g. `env: { LANG: C, TOKEN: \"${token}\" }`"));
        };
        let mut out = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let name = k.as_scalar().map_or("", |s| s.text.as_str()).to_string();
            let field = format!("{path}.{name}");
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(self
                    .err(
                        k,
                        &field,
                        format!("{name:?} is not an environment variable name; expected a name without `=`"),
                    )
                    .with_hint("e.g. `env: { LANG: C }`"));
            }
            out.push((name, self.template(v, &field)?));
        }
        Ok(out)
    }

    /// `expect_exit: 0` or `[0, 1]`: exit codes 0..=255.
    fn exit_codes(&self, node: &Node, path: &str) -> Result<Vec<i32>, PlanError> {
        let items = self.one_or_many(
            node,
            path,
            "exit codes",
            "e.g. `expect_exit: 0` or `expect_exit: [0, 1]`",
        )?;
        items
            .iter()
            .map(|(n, p)| {
                self.uint(
                    n,
                    p,
                    0,
                    255,
                    "an exit code is 0 to 255, e.g. `expect_exit: [0, 1]`",
                )
                .map(|v| v as i32)
            })
            .collect()
    }
}

/// The first word of a command line, for a default metric name (`exec wget`).
fn first_word(text: &str) -> &str {
    text.split_whitespace().next().unwrap_or("")
}
