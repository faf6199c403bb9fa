//! `http.tls:` → [`TlsSettings`]: session reuse, certificate checks, client certificates,
//! versions, server name.

use std::path::PathBuf;

use super::Ctx;
use crate::error::{did_you_mean, one_of, PlanError};
use crate::yaml::Node;
use crate::{TlsSessionMode, TlsSettings, TlsVersionSetting};

pub(crate) const TLS_KEYS: [&str; 7] = [
    "session",
    "insecure",
    "ca_file",
    "client_cert",
    "client_key",
    "versions",
    "server_name",
];

const VERSIONS: [TlsVersionSetting; 2] = [TlsVersionSetting::V1_2, TlsVersionSetting::V1_3];

impl Ctx<'_> {
    /// `tls:` settings merged key by key over `base`.
    pub fn tls(
        &self,
        node: &Node,
        path: &str,
        base: &TlsSettings,
    ) -> Result<TlsSettings, PlanError> {
        let f = self.map(node, path, &TLS_KEYS)?;
        let mut out = base.clone();
        if let Some(s) = f.get("session") {
            out.session = self.choice(
                s,
                &f.child("session"),
                "TLS session mode",
                &[TlsSessionMode::Resume, TlsSessionMode::Shared, TlsSessionMode::Full],
                TlsSessionMode::as_str,
                "resume: each VU resumes its own sessions (a returning user); shared: one session cache for all VUs; full: a full handshake for every new connection (a brand-new user)",
            )?;
        }
        if let Some(i) = f.get("insecure") {
            out.insecure = self.boolean(i, &f.child("insecure"), "insecure")?;
        }
        if let Some(c) = f.get("ca_file") {
            out.ca_file = Some(self.pem_file(
                c,
                &f.child("ca_file"),
                "a PEM file of CA certificates to trust",
            )?);
        }
        match (f.get("client_cert"), f.get("client_key")) {
            (Some(c), Some(k)) => {
                let cert = self.pem_file(c, &f.child("client_cert"), "a PEM certificate chain")?;
                let key = self.pem_file(k, &f.child("client_key"), "a PEM private key")?;
                out.client_cert = Some((cert, key));
            }
            (Some(_), None) => {
                return Err(self
                    .err(
                        f.key("client_cert").expect("present"),
                        &f.child("client_cert"),
                        "`client_cert` without `client_key`; expected both or neither",
                    )
                    .with_hint("mutual TLS needs the certificate chain and its private key: add `client_key: client.key`"))
            }
            (None, Some(_)) => {
                return Err(self
                    .err(
                        f.key("client_key").expect("present"),
                        &f.child("client_key"),
                        "`client_key` without `client_cert`; expected both or neither",
                    )
                    .with_hint("mutual TLS needs the certificate chain and its private key: add `client_cert: client.pem`"))
            }
            (None, None) => {}
        }
        if let Some(v) = f.get("versions") {
            out.versions = self.tls_versions(v, &f.child("versions"))?;
        }
        if let Some(n) = f.get("server_name") {
            out.server_name = Some(self.server_name(n, &f.child("server_name"))?);
        }
        Ok(out)
    }

    /// A file relative to the plan's directory that must exist.
    fn pem_file(&self, node: &Node, path: &str, what: &str) -> Result<PathBuf, PlanError> {
        let rel = self.string(node, path)?;
        if rel.trim().is_empty() {
            return Err(self
                .err(node, path, format!("empty file name; expected {what}"))
                .with_hint("e.g. `ca_file: ca.pem`"));
        }
        let resolved = self.base_dir().join(rel.trim());
        if !resolved.is_file() {
            let state = if resolved.exists() {
                "is not a file"
            } else {
                "does not exist"
            };
            return Err(self
                .err(
                    node,
                    path,
                    format!("{} {state}; expected {what}", resolved.display()),
                )
                .with_hint(format!(
                    "TLS file paths are relative to the plan file's directory ({})",
                    self.base_dir().display()
                )));
        }
        Ok(resolved)
    }

    /// `versions`: a list of `"1.2"` / `"1.3"` (or one of them).
    fn tls_versions(&self, node: &Node, path: &str) -> Result<Vec<TlsVersionSetting>, PlanError> {
        let items = self.one_or_many(
            node,
            path,
            "TLS versions",
            "e.g. `versions: [\"1.2\", \"1.3\"]` or `versions: \"1.3\"`",
        )?;
        let names: Vec<&str> = VERSIONS.iter().map(TlsVersionSetting::as_str).collect();
        let mut out: Vec<TlsVersionSetting> = Vec::new();
        for (item, field) in items {
            let text = self.string(item, &field)?;
            let t = text.trim();
            let t = t
                .strip_prefix("TLS")
                .or_else(|| t.strip_prefix("tls"))
                .map_or(t, |s| s.trim_start_matches(['v', 'V', ' ']));
            let Some(v) = VERSIONS.iter().find(|v| v.as_str() == t) else {
                let old =
                    matches!(t, "1.0" | "1" | "1.1") || t.to_ascii_lowercase().starts_with("ssl");
                let hint = if old {
                    format!(
                        "onrush speaks TLS 1.2 and 1.3 only; {text:?} is obsolete and not offered"
                    )
                } else {
                    did_you_mean(t, names.iter().copied()).map_or_else(
                        || {
                            "onrush speaks TLS 1.2 and 1.3: write `\"1.2\"` or `\"1.3\"`"
                                .to_string()
                        },
                        |s| format!("did you mean `\"{s}\"`?"),
                    )
                };
                return Err(self
                    .err(
                        item,
                        &field,
                        format!(
                            "unsupported TLS version {text:?}; expected {}",
                            one_of(&names)
                        ),
                    )
                    .with_hint(hint));
            };
            if !out.contains(v) {
                out.push(*v);
            }
        }
        out.sort();
        Ok(out)
    }

    /// `server_name`: a host name or IP address without scheme, port or path.
    fn server_name(&self, node: &Node, path: &str) -> Result<String, PlanError> {
        let text = self.string(node, path)?;
        let t = text.trim();
        if t.is_empty() {
            return Err(self
                .err(node, path, "empty server name; expected a host name")
                .with_hint("leave `server_name` out to use the target's host"));
        }
        let bracketed = t.starts_with('[') && t.ends_with(']');
        let bad_colon = t.contains(':') && !bracketed && t.parse::<std::net::IpAddr>().is_err();
        if t.contains("://") || t.contains('/') || t.chars().any(char::is_whitespace) || bad_colon {
            return Err(self
                .err(
                    node,
                    path,
                    format!("{t:?} is not a host name; expected a name such as `api.example.com`"),
                )
                .with_hint("write the name alone, without scheme, port or path"));
        }
        Ok(t.to_string())
    }
}
