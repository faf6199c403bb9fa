//! How an exec step is written in a plan: `- { exec: [PROGRAM, ARG...] }` or
//! `- { shell: "COMMAND" }`, with `env`, `cwd`, `stdin`, `expect_exit`, `max_output`; read
//! into an [`ExecSpec`] when the plan loads.

use std::path::PathBuf;

use onrush_plan::grammar::{CompiledStep, Mapping, StepGrammar, Value};
use onrush_plan::{ExecCommand, PlanError, Template};
use serde_json::json;

/// An exec step as the plan wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecSpec {
    pub command: ExecCommand,
    /// `env:`: variables added to the environment onrush was started with.
    pub env: Vec<(String, Template)>,
    /// `cwd:`, resolved against the plan's directory; None: onrush's working directory.
    pub cwd: Option<PathBuf>,
    /// `stdin:`: written to the command's standard input (then closed); None: no input.
    pub stdin: Option<Template>,
    /// Exit codes that count as success (`expect_exit`, default `[0]`); any other is
    /// `unexpected_status`.
    pub expect_exit: Vec<i32>,
    /// The most bytes of stdout, and of stderr, kept (`max_output`, default 1 MiB); the rest
    /// is read, counted and dropped.
    pub max_output: usize,
}

const KEYS: &[&str] = &["env", "cwd", "stdin", "expect_exit", "max_output"];

const EXAMPLE: &str =
    "e.g. `- { exec: [wget, -q, -O, out.html, \"http://127.0.0.1:8080/\"] }` or `- { shell: \"ls | wc -l\" }`";

/// The default of `max_output`: what is kept of stdout, and of stderr.
const DEFAULT_MAX_OUTPUT: u64 = 1 << 20;
/// The largest `max_output`: a VU keeps up to twice this (stdout and stderr).
const MAX_MAX_OUTPUT: u64 = 64 << 20;

/// The `exec:` / `shell:` step grammar.
pub struct ExecGrammar;

impl StepGrammar for ExecGrammar {
    fn key(&self) -> &'static str {
        "exec"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["shell"]
    }

    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }

    fn example(&self) -> &'static str {
        "{ exec: [program, arg...] }"
    }

    fn schema(&self) -> serde_json::Value {
        json!({
            "exec": { "type": "array", "minItems": 1, "items": { "type": "string" }, "description": "The program and its arguments, each a template, never split by a shell", "examples": [["wget", "-q", "-O", "page-${vu}.html", "http://127.0.0.1:8080/"]] },
            "shell": { "type": "string", "description": "A command line run as `sh -c LINE` (prefer `exec:` for values that come from variables: the shell would interpret them)" },
            "name": { "type": "string", "description": "Metric name. Default: `exec PROGRAM` or `shell WORD`" },
            "env": { "type": "object", "additionalProperties": { "type": ["string", "number", "boolean"] }, "description": "Environment variables added to onrush's (values are templates)" },
            "cwd": { "type": "string", "description": "Working directory, relative to the plan file (default: onrush's)" },
            "stdin": { "type": "string", "description": "Written to the command's standard input, then closed (a template); without it stdin is empty" },
            "timeout": { "$ref": "#/definitions/duration", "description": "After this the command's process group is killed and the step is a `timeout` (default: http.timeout)" },
            "expect_exit": { "type": ["integer", "array"], "items": { "type": "integer" }, "description": "Exit codes that are success (default 0); any other is `unexpected_status`. The exit code is the step's status (128+N when killed by signal N)" },
            "max_output": { "type": ["integer", "string"], "description": "The most bytes of stdout (the body) and of stderr (the `stderr` header) kept, each (default 1MiB, at most 64MiB); the rest is read, counted and dropped" },
        })
    }

    fn schema_rules(&self) -> serde_json::Value {
        json!({
            "description": "A local command run as a step: `exec: [PROGRAM, ARGS...]` or `shell: LINE`; stdout is the body, stderr the `stderr` header, the exit code the status",
            "required": null,
            "oneOf": [{ "required": ["exec"] }, { "required": ["shell"] }]
        })
    }

    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let key = step
            .at_most_one(&["exec", "shell"], "command per step", EXAMPLE)?
            .expect("the step has its key or its alias");
        let command_value = step.get(key).expect("present");
        let (command, name) = if key == "shell" {
            shell(&command_value)?
        } else {
            argv(&command_value)?
        };
        let env = match step.get("env") {
            Some(e) => env_map(&e)?,
            None => Vec::new(),
        };
        let cwd = match step.get("cwd") {
            Some(c) => Some(c.directory("the directory to run the command in")?),
            None => None,
        };
        let stdin = step.get("stdin").map(|s| s.template()).transpose()?;
        let expect_exit = match step.get("expect_exit") {
            Some(e) => e
                .one_or_many(
                    "exit codes",
                    "e.g. `expect_exit: 0` or `expect_exit: [0, 1]`",
                )?
                .iter()
                .map(|code| {
                    code.uint(
                        0,
                        255,
                        "an exit code is 0 to 255, e.g. `expect_exit: [0, 1]`",
                    )
                    .map(|v| v as i32)
                })
                .collect::<Result<_, _>>()?,
            None => vec![0],
        };
        let max_output = match step.get("max_output") {
            Some(n) => {
                let v = n.bytes()?;
                if v > MAX_MAX_OUTPUT {
                    return Err(n
                        .error(format!(
                            "{} is too large; expected at most 64MiB",
                            n.string()?
                        ))
                        .with_hint("output past `max_output` is counted and dropped, not kept; keep only what extractors need"));
                }
                v
            }
            None => DEFAULT_MAX_OUTPUT,
        } as usize;
        Ok(CompiledStep {
            name,
            spec: Box::new(ExecSpec {
                command,
                env,
                cwd,
                stdin,
                expect_exit,
                max_output,
            }),
        })
    }
}

/// `shell: LINE`, and the default name `shell WORD`.
fn shell(value: &Value<'_>) -> Result<(ExecCommand, String), PlanError> {
    let text = value.written().unwrap_or("");
    if text.trim().is_empty() {
        return Err(value
            .error("empty command; expected a shell command line")
            .with_hint(EXAMPLE));
    }
    Ok((
        ExecCommand::Shell(value.template()?),
        format!("shell {}", first_word(text)),
    ))
}

/// `exec: [PROGRAM, ARG...]`, and the default name `exec PROGRAM`.
fn argv(value: &Value<'_>) -> Result<(ExecCommand, String), PlanError> {
    if let Some(text) = value.written() {
        return Err(value
            .error("expected a list: the program, then each argument")
            .with_hint(format!(
                "write `exec: [{}]`, or `shell: {text:?}` to have `sh -c` split it",
                text.split_whitespace().collect::<Vec<_>>().join(", ")
            )));
    }
    let items = match value.is_list() {
        true => value.list()?,
        false => Vec::new(),
    };
    if items.is_empty() {
        return Err(value
            .error(format!(
                "expected a list (the program, then its arguments), found {}",
                value.describe()
            ))
            .with_hint(EXAMPLE));
    }
    let mut args = Vec::with_capacity(items.len());
    for item in &items {
        if item.written().is_none() {
            return Err(item
                .error(format!(
                    "expected a text argument, found {}",
                    item.describe()
                ))
                .with_hint("quote an argument that YAML would read otherwise"));
        }
        args.push(item.template()?);
    }
    let program = items[0].written().unwrap_or("");
    if program.trim().is_empty() {
        return Err(items[0]
            .error("empty program; expected a program name or path")
            .with_hint(EXAMPLE));
    }
    Ok((
        ExecCommand::Argv(args),
        format!("exec {}", first_word(program)),
    ))
}

/// `env: { NAME: value }`: names as the environment knows them, values templates.
fn env_map(value: &Value<'_>) -> Result<Vec<(String, Template)>, PlanError> {
    if !value.is_mapping() {
        return Err(value
            .error(format!(
                "expected a mapping of variable names to values, found {}",
                value.describe()
            ))
            .with_hint("e.g. `env: { LANG: C, TOKEN: \"${token}\" }`"));
    }
    let mut out = Vec::new();
    for (key, v) in value.entries()? {
        let name = key.written().unwrap_or("").to_string();
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(key
                .error(format!(
                    "{name:?} is not an environment variable name; expected a name without `=`"
                ))
                .with_hint("e.g. `env: { LANG: C }`"));
        }
        out.push((name, v.template()?));
    }
    Ok(out)
}

/// The first word of a command line, for a default metric name (`exec wget`).
fn first_word(text: &str) -> &str {
    text.split_whitespace().next().unwrap_or("")
}
