//! `${function(args)}` calls → [`Func`]s (or literals, when they can be computed at load).

use super::{to_template, Ctx, Part};
use crate::error::{did_you_mean, PlanError};
use crate::template::{Arg, Func, Piece, Template, Transform};
use crate::yaml::Node;

/// Every function, with its signature, for messages and docs.
pub(crate) const FUNCTIONS: [(&str, &str); 17] = [
    ("random_int", "random_int(min, max)"),
    ("random_string", "random_string(length[, \"charset\"])"),
    ("uuid", "uuid()"),
    ("counter", "counter([name])"),
    ("global_counter", "global_counter([name])"),
    ("now_ms", "now_ms()"),
    ("now_s", "now_s()"),
    ("now", "now(\"%Y-%m-%dT%H:%M:%SZ\")"),
    ("choice", "choice(a, b, ...)"),
    ("base64", "base64(value)"),
    ("base64url", "base64url(value)"),
    ("urlencode", "urlencode(value)"),
    ("md5", "md5(value)"),
    ("sha1", "sha1(value)"),
    ("sha256", "sha256(value)"),
    ("lower", "lower(value)"),
    ("upper", "upper(value)"),
];
const ENV: (&str, &str) = ("env", "env(NAME[, default])");
const FILE: (&str, &str) = ("file", "file(\"path\")");

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

impl Ctx<'_> {
    /// Compiles one call. `reference` is the call's text, for messages.
    pub(super) fn call(
        &self,
        node: &Node,
        path: &str,
        text: &str,
        name: &str,
        args: &[Arg],
        reference: &str,
    ) -> Result<Part, PlanError> {
        let span = self.inner_span(node, reference);
        let signature = FUNCTIONS
            .iter()
            .chain([&ENV, &FILE])
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s);
        if signature.is_none() {
            if let Some(func) = self.script_call_id(name) {
                let args = args
                    .iter()
                    .map(|a| self.arg_template(node, path, text, a))
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(Part::Func(Func::Script {
                    func,
                    name: name.into(),
                    args: args.into_boxed_slice(),
                }));
            }
        }
        let Some(signature) = signature else {
            let names = FUNCTIONS.iter().chain([&ENV, &FILE]).map(|(n, _)| *n);
            let hint = match did_you_mean(name, names) {
                Some(s) => format!("did you mean `{s}(...)`?"),
                None => format!(
                    "the functions are: {}",
                    FUNCTIONS
                        .iter()
                        .chain([&ENV, &FILE])
                        .map(|(_, s)| *s)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return Err(self
                .err_at(
                    span,
                    path,
                    format!(
                        "unknown function `{name}` in `{reference}`; expected a built-in function"
                    ),
                )
                .with_hint(hint));
        };
        let fail = |msg: String| {
            self.err_at(span.clone(), path, format!("`{reference}`: {msg}"))
                .with_hint(format!("write `${{{signature}}}`"))
        };
        let arity = |min: usize, max: usize| {
            if args.len() < min || args.len() > max {
                let want = if min == max {
                    format!("{min}")
                } else {
                    format!("{min} to {max}")
                };
                Err(fail(format!(
                    "{} argument(s) given; expected {want}",
                    args.len()
                )))
            } else {
                Ok(())
            }
        };
        let int = |arg: &Arg, what: &str| -> Result<i64, PlanError> {
            let text = match arg {
                Arg::Num(n) => n.clone(),
                _ => self.constant_arg(node, path, text, arg).map_err(|_| {
                    fail(format!(
                        "the {what} must be a number known when the plan loads"
                    ))
                })?,
            };
            text.trim()
                .parse::<i64>()
                .map_err(|_| fail(format!("the {what} {text:?} is not a whole number")))
        };
        let func = match name {
            "random_int" => {
                arity(2, 2)?;
                let (min, max) = (int(&args[0], "minimum")?, int(&args[1], "maximum")?);
                if min > max {
                    return Err(fail(format!(
                        "the minimum {min} is above the maximum {max}"
                    )));
                }
                Func::RandomInt { min, max }
            }
            "random_string" => {
                arity(1, 2)?;
                let len = int(&args[0], "length")?;
                if !(1..=1_000_000).contains(&len) {
                    return Err(fail(format!(
                        "the length {len} is out of range; expected 1 to 1000000"
                    )));
                }
                let charset = match args.get(1) {
                    Some(a) => self.constant_arg(node, path, text, a).map_err(|_| {
                        fail("the charset must be a quoted string known when the plan loads".into())
                    })?,
                    None => String::from_utf8(ALNUM.to_vec()).expect("ASCII"),
                };
                if charset.is_empty() || !charset.is_ascii() {
                    return Err(fail(
                        "the charset must be non-empty ASCII, e.g. \"abcdef0123456789\"".into(),
                    ));
                }
                Func::RandomString {
                    len: len as u32,
                    charset: charset.into_bytes().into_boxed_slice(),
                }
            }
            "uuid" => {
                arity(0, 0)?;
                Func::Uuid
            }
            "now_ms" => {
                arity(0, 0)?;
                Func::NowMs
            }
            "now_s" => {
                arity(0, 0)?;
                Func::NowS
            }
            "now" => {
                arity(1, 1)?;
                let format = self.constant_arg(node, path, text, &args[0]).map_err(|_| {
                    fail("the format must be a quoted string, e.g. \"%Y-%m-%d\"".into())
                })?;
                let bad = chrono::format::StrftimeItems::new(&format)
                    .any(|i| matches!(i, chrono::format::Item::Error));
                if bad {
                    return Err(fail(format!("{format:?} is not a valid strftime format (e.g. \"%Y-%m-%dT%H:%M:%S%.3fZ\")")));
                }
                Func::NowFormat(format.into())
            }
            "counter" | "global_counter" => {
                arity(0, 1)?;
                let counter = match args.first() {
                    None => String::new(),
                    Some(Arg::Name { name, .. }) => name.clone(),
                    Some(a) => self.constant_arg(node, path, text, a).map_err(|_| {
                        fail("the counter's name must be known when the plan loads".into())
                    })?,
                };
                if name == "counter" {
                    let mut counters = self.counters.borrow_mut();
                    let index = match counters.iter().position(|c| *c == counter) {
                        Some(i) => i,
                        None => {
                            counters.push(counter);
                            counters.len() - 1
                        }
                    };
                    Func::Counter { index }
                } else {
                    let shared = self
                        .globals
                        .borrow_mut()
                        .entry(counter)
                        .or_default()
                        .clone();
                    Func::GlobalCounter(shared)
                }
            }
            "choice" => {
                if args.is_empty() {
                    return Err(fail("no options given; expected at least one".into()));
                }
                let options = args
                    .iter()
                    .map(|a| self.arg_template(node, path, text, a))
                    .collect::<Result<Vec<_>, _>>()?;
                Func::Choice(options.into_boxed_slice())
            }
            "env" => {
                arity(1, 2)?;
                let var = match &args[0] {
                    Arg::Name { name, .. } => name.clone(),
                    a => self
                        .constant_arg(node, path, text, a)
                        .map_err(|_| fail("the name must be known when the plan loads".into()))?,
                };
                let default = match args.get(1) {
                    Some(a) => Some(self.constant_arg(node, path, text, a).map_err(|_| {
                        fail("the default must be known when the plan loads".into())
                    })?),
                    None => None,
                };
                return match ((self.env)(&var), default) {
                    (Some(v), _) => Ok(Part::Lit(v)),
                    (None, Some(d)) => Ok(Part::Lit(d)),
                    (None, None) => Err(self
                        .err_at(span.clone(), path, format!("`{reference}`: the environment variable {var} is not set; expected it set, or a default"))
                        .with_hint(format!("export {var}=..., or write `${{env({var}, \"default\")}}`"))),
                };
            }
            "file" => {
                arity(1, 1)?;
                return self.file_contents(node, path, text, &args[0], reference);
            }
            other => {
                let transform = Transform::by_name(other).expect("listed in FUNCTIONS");
                arity(1, 1)?;
                let arg = self.arg_template(node, path, text, &args[0])?;
                if let Some(bytes) = arg.constant_bytes() {
                    let mut out = Vec::new();
                    transform.apply(bytes, &mut out);
                    if let Ok(s) = String::from_utf8(out) {
                        return Ok(Part::Lit(s));
                    }
                }
                Func::Apply { transform, arg }
            }
        };
        debug_assert!(!func.is_pure() || matches!(func, Func::Apply { .. }));
        Ok(Part::Func(func))
    }

    /// `file("path")`: the text of a file beside the plan, read once at load (a distributed
    /// run sends the file to its agents with the plan's other files).
    fn file_contents(
        &self,
        node: &Node,
        path: &str,
        text: &str,
        arg: &Arg,
        reference: &str,
    ) -> Result<Part, PlanError> {
        let span = self.inner_span(node, reference);
        let mut used = Vec::new();
        if let Arg::Str(pieces) = arg {
            super::unset::referenced(pieces, &mut used);
        }
        if let Some(root) = used.iter().find_map(|n| self.unset.get(n)) {
            return Err(self
                .err_at(span, path, format!("`{reference}`: its path uses `${{{}}}`, which has no value; expected a path known when the plan loads", root.name))
                .with_hint(format!("pass -D {}=VALUE", root.name)));
        }
        let rel = self.constant_arg(node, path, text, arg).map_err(|_| {
            self.err_at(
                span.clone(),
                path,
                format!("`{reference}`: the path must be known when the plan loads"),
            )
            .with_hint("write `${file(\"data/body.json\")}`; plan variables may be used in it")
        })?;
        let file = self.plan_path(rel.trim());
        let contents = std::fs::read_to_string(&file).map_err(|e| {
            self.err_at(span.clone(), path, format!("`{reference}`: cannot read {}: {e}; expected a text file", file.display()))
                .with_hint(format!("paths are relative to the plan file's directory ({}); send binary files with `body_file:`", self.base_dir().display()))
        })?;
        if contents.len() > super::MAX_EXPANDED {
            return Err(self
                .err_at(
                    span,
                    path,
                    format!(
                        "`{reference}`: {} is larger than {} bytes; expected a smaller file",
                        file.display(),
                        super::MAX_EXPANDED
                    ),
                )
                .with_hint("send large files with `body_file:`"));
        }
        Ok(Part::Lit(contents))
    }

    /// An argument as a template: a quoted string's pieces, a variable, or a number.
    fn arg_template(
        &self,
        node: &Node,
        path: &str,
        text: &str,
        arg: &Arg,
    ) -> Result<Template, PlanError> {
        let pieces = match arg {
            Arg::Num(n) => return Ok(Template::constant(n)),
            Arg::Str(pieces) => pieces.clone(),
            Arg::Name { name, offset } => vec![Piece::Ref {
                name: name.clone(),
                default: None,
                offset: *offset,
                len: name.len(),
            }],
        };
        let parts = self.expand_pieces(node, path, text, &pieces)?;
        Ok(to_template(parts, text))
    }

    /// An argument whose value is known at load (numbers, strings of literals and plan
    /// variables); `Err(())` when it depends on a per-request value.
    fn constant_arg(&self, node: &Node, path: &str, text: &str, arg: &Arg) -> Result<String, ()> {
        let t = self.arg_template(node, path, text, arg).map_err(|_| ())?;
        t.constant_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .ok_or(())
    }
}
