//! `secrets:`: plan variables whose values come from the environment or a file and are never
//! written anywhere onrush writes (summary.json, report.html, intervals, messages): shown as
//! `***`. Variables whose names say what they hold (password, token, secret, key, credential,
//! auth), from `vars:` or `-D`, are masked the same way.
//!
//! ```yaml
//! secrets:
//!   api_token: { env: API_TOKEN }      # from the environment
//!   db_password: { file: db-pass.txt } # from a file beside the plan (a final newline dropped)
//! ```

use std::collections::{BTreeMap, BTreeSet};

use super::Ctx;
use crate::error::PlanError;
use crate::template::{self, BUILTINS};
use crate::yaml::{Kind, Node};

/// Name parts that make a variable secret without being listed (case-insensitive).
pub(crate) const SECRET_WORDS: [&str; 7] = [
    "password",
    "passwd",
    "secret",
    "token",
    "key",
    "credential",
    "auth",
];

/// True when `name` says it holds a secret.
pub(crate) fn looks_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| lower.contains(w))
}

const EXAMPLE: &str =
    "e.g. `secrets: { api_token: { env: API_TOKEN }, db_password: { file: db-pass.txt } }`";

impl Ctx<'_> {
    /// Reads `secrets:`: name → value, except the names `-D` sets (the override wins, and its
    /// source need not exist).
    pub(super) fn secrets(
        &self,
        node: Option<&Node>,
        overrides: &[(String, String)],
    ) -> Result<BTreeMap<String, String>, PlanError> {
        let mut out = BTreeMap::new();
        let Some(node) = node else {
            return Ok(out);
        };
        let entries: &[(Node, Node)] = match &node.kind {
            Kind::Map(e) => e,
            _ if node.is_null() => &[],
            _ => {
                return Err(self
                    .err(
                        node,
                        "secrets",
                        format!(
                            "expected a mapping of names to sources, found {}",
                            node.describe()
                        ),
                    )
                    .with_hint(EXAMPLE))
            }
        };
        for (k, v) in entries {
            let name = &k.as_scalar().expect("keys are scalars").text;
            let field = format!("secrets.{name}");
            if !template::is_name(name) || BUILTINS.contains(&name.as_str()) {
                return Err(self.err(k, &field, format!("`{name}` is not a valid variable name; expected letters, digits and `_`, not starting with a digit, not `vu` or `iteration`")));
            }
            let f = self.map(v, &field, &["env", "file"])?;
            let value = match (f.get("env"), f.get("file")) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(self
                        .err(
                            v,
                            &field,
                            "expected one source: `env: NAME` or `file: PATH`",
                        )
                        .with_hint(EXAMPLE))
                }
                _ if overrides.iter().any(|(n, _)| n == name) => continue,
                (Some(env), None) => {
                    let var = self.string(env, &f.child("env"))?;
                    (self.env)(&var).ok_or_else(|| {
                        self.err(
                            env,
                            &f.child("env"),
                            format!("the environment variable {var} is not set"),
                        )
                        .with_hint(format!(
                            "export {var}=... before running onrush, or give the value with \
                             -D {name}=... (both stay out of the results)"
                        ))
                    })?
                }
                (None, Some(file)) => {
                    let rel = self.string(file, &f.child("file"))?;
                    let path = self.plan_path(&rel);
                    let text = std::fs::read_to_string(&path).map_err(|e| {
                        self.err(
                            file,
                            &f.child("file"),
                            format!("cannot read the secret file {}: {e}", path.display()),
                        )
                        .with_hint("the path is relative to the plan's directory")
                    })?;
                    text.strip_suffix('\n')
                        .map(|t| t.strip_suffix('\r').unwrap_or(t))
                        .unwrap_or(&text)
                        .to_string()
                }
            };
            out.insert(name.clone(), value);
        }
        Ok(out)
    }
}

/// The names of the secret variables: those of `secrets:`, and every variable (of `vars:` or
/// `-D`) whose name says it holds one.
pub(super) fn secret_names(
    declared: &BTreeMap<String, String>,
    vars: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    declared
        .keys()
        .cloned()
        .chain(vars.keys().filter(|n| looks_secret(n)).cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::looks_secret;

    #[test]
    fn names_that_say_secret() {
        for n in [
            "password",
            "DB_PASSWORD",
            "api_token",
            "apiKey",
            "client_secret",
            "auth",
        ] {
            assert!(looks_secret(n), "{n}");
        }
        for n in ["user", "host", "vus", "think"] {
            assert!(!looks_secret(n), "{n}");
        }
    }
}
