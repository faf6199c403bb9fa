//! `http.tls:` → [`TlsSettings`]: session reuse, certificate checks, client identities (PEM,
//! PKCS#12, a list or a folder of them), versions, cipher suites, server name.

use std::path::{Path, PathBuf};

use super::Ctx;
use crate::error::{did_you_mean, one_of, PlanError};
use crate::yaml::Node;
use crate::{
    ClientIdentity, TlsSessionMode, TlsSettings, TlsVersionSetting, TLS_CIPHER_SUITES,
    TLS_KX_GROUPS,
};

pub(crate) const TLS_KEYS: [&str; 14] = [
    "session",
    "insecure",
    "ca_file",
    "client_cert",
    "client_key",
    "client_p12",
    "client_p12_password",
    "identities",
    "identities_dir",
    "identities_password",
    "versions",
    "ciphers",
    "kx_groups",
    "server_name",
];

/// The keys that each give the whole set of client identities: one of them at most.
const IDENTITY_SOURCES: [&str; 4] = ["client_cert", "client_p12", "identities", "identities_dir"];

const IDENTITY_KEYS: [&str; 4] = ["cert", "key", "p12", "password"];

const IDENTITY_HINT: &str = "give the client identities one way: `client_cert` + `client_key` \
     (PEM), `client_p12` (PKCS#12), `identities` (a list of them) or `identities_dir` (a folder)";

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
        for (extra, needs, hint) in [
            (
                "client_p12_password",
                "client_p12",
                "it is the password of the `client_p12` file; an `identities` entry takes its own `password:`",
            ),
            (
                "identities_password",
                "identities_dir",
                "it is the password of the .p12/.pfx files of `identities_dir`; an `identities` entry takes its own `password:`",
            ),
        ] {
            if f.get(extra).is_some() && f.get(needs).is_none() {
                return Err(self
                    .err(
                        f.key(extra).expect("present"),
                        &f.child(extra),
                        format!("`{extra}` without `{needs}`"),
                    )
                    .with_hint(hint));
            }
        }
        match (f.get("client_cert"), f.get("client_key")) {
            (Some(_), Some(_)) => {}
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
        if let Some(source) = self.at_most_one(
            &f,
            &IDENTITY_SOURCES,
            "way of giving client identities",
            IDENTITY_HINT,
        )? {
            out.identities = self.identities(&f, source)?;
        }
        if let Some(v) = f.get("versions") {
            out.versions = self.tls_versions(v, &f.child("versions"))?;
        }
        if let Some(n) = f.get("server_name") {
            out.server_name = Some(self.server_name(n, &f.child("server_name"))?);
        }
        if let Some(c) = f.get("ciphers") {
            out.ciphers = self.ciphers(c, &f.child("ciphers"))?;
        }
        if let Some(g) = f.get("kx_groups") {
            out.kx_groups = self.kx_groups(g, &f.child("kx_groups"))?;
        }
        self.ciphers_fit_versions(&f, &out)?;
        Ok(out)
    }

    /// `kx_groups`: group names (rustls or common ones, any case) → rustls names, in order,
    /// without duplicates.
    fn kx_groups(&self, node: &Node, path: &str) -> Result<Vec<String>, PlanError> {
        let aliases = TLS_KX_GROUPS
            .iter()
            .flat_map(|(rustls, others)| {
                std::iter::once(rustls)
                    .chain(others.iter())
                    .map(|n| (n.to_ascii_lowercase(), *rustls))
            })
            .collect();
        self.rustls_names(
            node,
            path,
            &NameTable {
                key: "kx_groups",
                what: "key-exchange group",
                example:
                    "e.g. `kx_groups: [secp256r1]` (P-256) or `kx_groups: [X25519, secp256r1]`",
                supported: TLS_KX_GROUPS.iter().map(|g| g.0).collect(),
                aliases,
                also: "P-256 and P-384 work too",
            },
        )
    }

    /// A list of names looked up in `table` (any alias, any case) → rustls names, in order,
    /// without duplicates; an unknown one is an error with the closest name and the list.
    fn rustls_names(
        &self,
        node: &Node,
        path: &str,
        table: &NameTable<'_>,
    ) -> Result<Vec<String>, PlanError> {
        let items = self.one_or_many(node, path, &format!("{}s", table.what), table.example)?;
        let supported = table.supported.join(", ");
        let mut out: Vec<String> = Vec::new();
        for (item, field) in items {
            let text = self.string(item, &field)?;
            let t = text.trim().to_ascii_lowercase();
            let Some((_, name)) = table.aliases.iter().find(|(n, _)| *n == t) else {
                let close = did_you_mean(&t, table.aliases.iter().map(|(n, _)| n.as_str()))
                    .and_then(|c| table.aliases.iter().find(|(n, _)| n == c))
                    .map(|(_, rustls)| *rustls);
                let offers = format!("onrush offers {supported} ({})", table.also);
                let hint = match close {
                    Some(close) => format!("did you mean `{close}`? {offers}"),
                    None => offers,
                };
                return Err(self
                    .err(item, &field, format!("unknown {} {text:?}", table.what))
                    .with_hint(hint));
            };
            if !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
        }
        if out.is_empty() {
            return Err(self
                .err(
                    node,
                    path,
                    format!("empty list; expected at least one {}", table.what),
                )
                .with_hint(format!("leave `{}` out to offer all of them", table.key)));
        }
        Ok(out)
    }

    /// The identities given by `source` (one of [`IDENTITY_SOURCES`], present in `f`).
    fn identities(
        &self,
        f: &super::Fields,
        source: &str,
    ) -> Result<Vec<ClientIdentity>, PlanError> {
        let node = f.get(source).expect("present");
        let path = f.child(source);
        match source {
            "client_cert" => {
                // Without `client_key` the caller reports it, with its hint.
                let Some(k) = f.get("client_key") else {
                    return Ok(Vec::new());
                };
                let cert = self.pem_file(node, &path, "a PEM certificate chain")?;
                let key = self.pem_file(k, &f.child("client_key"), "a PEM private key")?;
                Ok(vec![ClientIdentity::Pem { cert, key }])
            }
            "client_p12" => {
                let password = f
                    .get("client_p12_password")
                    .map(|p| (p, f.child("client_p12_password")));
                Ok(vec![self.p12_identity(
                    node,
                    &path,
                    password.as_ref().map(|(n, p)| (*n, p.as_str())),
                )?])
            }
            "identities" => {
                let example = "e.g. `identities: [{ cert: alice.pem, key: alice.key }, { p12: bob.p12, password: \"${BOB_P12_PASSWORD}\" }]`";
                let items = self.maps_or_one(node, &path, "client identities", example)?;
                if items.is_empty() {
                    return Err(self
                        .err(
                            node,
                            &path,
                            "empty list; expected at least one client identity",
                        )
                        .with_hint("leave `identities` out for no client certificate"));
                }
                let mut out = Vec::with_capacity(items.len());
                for (item, field) in items {
                    out.push(self.identity_entry(item, &field, example)?);
                }
                Ok(out)
            }
            _ => {
                let password = f
                    .get("identities_password")
                    .map(|p| (p, f.child("identities_password")));
                self.identities_dir(
                    node,
                    &path,
                    password.as_ref().map(|(n, p)| (*n, p.as_str())),
                )
            }
        }
    }

    /// One entry of `identities`: `{ cert, key }` or `{ p12, password }`.
    fn identity_entry(
        &self,
        node: &Node,
        path: &str,
        example: &str,
    ) -> Result<ClientIdentity, PlanError> {
        let f = self.map(node, path, &IDENTITY_KEYS)?;
        match self.exactly_one(
            &f,
            node,
            &["cert", "p12"],
            "certificate",
            "per identity",
            example,
        )? {
            "cert" => {
                if let Some(p) = f.key("password") {
                    return Err(self
                        .err(p, &f.child("password"), "`password` with `cert`; a password goes with `p12`")
                        .with_hint("PEM keys are read unencrypted: decrypt the key (`openssl pkey -in enc.key -out client.key`) or use a PKCS#12 file"));
                }
                let Some(k) = f.get("key") else {
                    return Err(self
                        .err(f.key("cert").expect("present"), &f.child("cert"), "`cert` without `key`; expected both")
                        .with_hint("an identity is the certificate chain and its private key: add `key: client.key`"));
                };
                let cert = self.pem_file(
                    f.get("cert").expect("present"),
                    &f.child("cert"),
                    "a PEM certificate chain",
                )?;
                let key = self.pem_file(k, &f.child("key"), "a PEM private key")?;
                Ok(ClientIdentity::Pem { cert, key })
            }
            _ => {
                if let Some(k) = f.key("key") {
                    return Err(self
                        .err(
                            k,
                            &f.child("key"),
                            "`key` with `p12`; the PKCS#12 file holds the key",
                        )
                        .with_hint("remove `key:`, or write `cert:` + `key:` for PEM files"));
                }
                let password = f.get("password").map(|p| (p, f.child("password")));
                self.p12_identity(
                    f.get("p12").expect("present"),
                    &f.child("p12"),
                    password.as_ref().map(|(n, p)| (*n, p.as_str())),
                )
            }
        }
    }

    /// A PKCS#12 file, opened with its password (from `password`, a node and its field, or
    /// empty) to count its keys: a wrong password or a file without a key is an error here,
    /// at the password (when given) or the file.
    fn p12_identity(
        &self,
        file_node: &Node,
        file_path: &str,
        password: Option<(&Node, &str)>,
    ) -> Result<ClientIdentity, PlanError> {
        let file = self.pem_file(file_node, file_path, "a PKCS#12 (.p12/.pfx) file")?;
        let pass = match password {
            Some((node, path)) => self.string(node, path)?,
            None => String::new(),
        };
        match p12_keys(&file, &pass) {
            Ok(keys) => Ok(ClientIdentity::Pkcs12 {
                file,
                password: pass,
                keys,
            }),
            Err(problem) => {
                let (node, path) = match (problem.about_password, password) {
                    (true, Some((node, path))) => (node, path),
                    _ => (file_node, file_path),
                };
                Err(self
                    .err(
                        node,
                        path,
                        format!("{}: {}", file.display(), problem.message),
                    )
                    .with_hint(problem.hint))
            }
        }
    }

    /// `identities_dir`: every `NAME.pem`/`NAME.crt` with its `NAME.key`, and every
    /// `*.p12`/`*.pfx` (opened with `password`), sorted by file name.
    fn identities_dir(
        &self,
        node: &Node,
        path: &str,
        password_field: Option<(&Node, &str)>,
    ) -> Result<Vec<ClientIdentity>, PlanError> {
        let rel = self.string(node, path)?;
        let dir = self.base_dir().join(rel.trim());
        let relative = format!(
            "the folder is relative to the plan file's directory ({})",
            self.base_dir().display()
        );
        if rel.trim().is_empty() || !dir.is_dir() {
            let state = if rel.trim().is_empty() {
                "empty folder name".to_string()
            } else if dir.exists() {
                format!("{} is not a folder", dir.display())
            } else {
                format!("{} does not exist", dir.display())
            };
            return Err(self
                .err(
                    node,
                    path,
                    format!("{state}; expected a folder of client identities"),
                )
                .with_hint(relative));
        }
        let listing = std::fs::read_dir(&dir).and_then(|entries| {
            entries
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<Vec<_>, _>>()
        });
        let mut files = match listing {
            Ok(files) => files,
            Err(e) => {
                return Err(self
                    .err(node, path, format!("cannot list {}: {e}", dir.display()))
                    .with_hint("onrush needs to read the folder's file names"))
            }
        };
        files.sort();
        self.files.borrow_mut().extend(files.iter().cloned());
        let ext = |p: &Path| {
            p.extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase)
                .unwrap_or_default()
        };
        let pass = match password_field {
            Some((n, p)) => Some(self.string(n, p)?),
            None => None,
        };
        let pair_hint = "each NAME.pem or NAME.crt needs its private key NAME.key beside it (and each NAME.key its certificate); move other files (a CA certificate, say) out of the folder";
        let mut out = Vec::new();
        for file in &files {
            if !file.is_file()
                || file
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            match ext(file).as_str() {
                "pem" | "crt" => {
                    let key = file.with_extension("key");
                    let twin = file.with_extension(if ext(file) == "pem" { "crt" } else { "pem" });
                    if twin.is_file() && ext(file) == "crt" {
                        return Err(self
                            .err(
                                node,
                                path,
                                format!(
                                    "{} and {} are both there; expected one certificate per name",
                                    twin.display(),
                                    file.display()
                                ),
                            )
                            .with_hint("keep one of them: both would pair with the same key"));
                    }
                    if !key.is_file() {
                        return Err(self
                            .err(
                                node,
                                path,
                                format!(
                                    "{} has no private key {} beside it",
                                    file.display(),
                                    key.display()
                                ),
                            )
                            .with_hint(pair_hint));
                    }
                    out.push(ClientIdentity::Pem {
                        cert: file.clone(),
                        key,
                    });
                }
                "key"
                    if !file.with_extension("pem").is_file()
                        && !file.with_extension("crt").is_file() =>
                {
                    return Err(self
                        .err(
                            node,
                            path,
                            format!(
                                "{} has no certificate (.pem or .crt of the same name) beside it",
                                file.display()
                            ),
                        )
                        .with_hint(pair_hint));
                }
                "p12" | "pfx" => {
                    let password = pass.clone().unwrap_or_default();
                    match p12_keys(file, &password) {
                        Ok(keys) => out.push(ClientIdentity::Pkcs12 {
                            file: file.clone(),
                            password,
                            keys,
                        }),
                        Err(problem) => {
                            let (at, at_path) = match (problem.about_password, password_field) {
                                (true, Some((n, p))) => (n, p),
                                _ => (node, path),
                            };
                            return Err(self
                                .err(
                                    at,
                                    at_path,
                                    format!("{}: {}", file.display(), problem.message),
                                )
                                .with_hint(problem.hint));
                        }
                    }
                }
                _ => {}
            }
        }
        if out.is_empty() {
            return Err(self
                .err(node, path, format!("no client identity in {}; expected NAME.pem or NAME.crt files with their NAME.key, or .p12/.pfx files", dir.display()))
                .with_hint(relative));
        }
        Ok(out)
    }

    /// `ciphers`: suite names (rustls, IANA or OpenSSL, any case) → rustls names, in order,
    /// without duplicates.
    fn ciphers(&self, node: &Node, path: &str) -> Result<Vec<String>, PlanError> {
        let aliases = TLS_CIPHER_SUITES
            .iter()
            .flat_map(|(rustls, iana, openssl, _)| {
                [rustls, iana, openssl].map(|n| (n.to_ascii_lowercase(), *rustls))
            })
            .collect();
        self.rustls_names(
            node,
            path,
            &NameTable {
                key: "ciphers",
                what: "cipher suite",
                example: "e.g. `ciphers: [TLS13_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]`",
                supported: TLS_CIPHER_SUITES.iter().map(|s| s.0).collect(),
                aliases,
                also: "IANA and OpenSSL names work too",
            },
        )
    }

    /// At least one of the cipher suites must belong to a TLS version offered (after merging
    /// over the plan level), or no handshake could ever succeed.
    fn ciphers_fit_versions(&self, f: &super::Fields, out: &TlsSettings) -> Result<(), PlanError> {
        if out.ciphers.is_empty() || out.versions.is_empty() {
            return Ok(());
        }
        let fits = out.ciphers.iter().any(|c| {
            TLS_CIPHER_SUITES
                .iter()
                .any(|s| s.0 == c && out.versions.contains(&s.3))
        });
        if fits {
            return Ok(());
        }
        let key = if f.get("ciphers").is_some() {
            "ciphers"
        } else {
            "versions"
        };
        let Some(node) = f.get(key) else {
            return Ok(());
        };
        let versions: Vec<&str> = out.versions.iter().map(TlsVersionSetting::as_str).collect();
        Err(self
            .err(
                node,
                &f.child(key),
                format!(
                    "none of the cipher suites belongs to TLS {}; no handshake could succeed",
                    versions.join(" or ")
                ),
            )
            .with_hint("TLS 1.3 suites are named TLS13_... (TLS_AES_..., TLS_CHACHA20_...), TLS 1.2 ones TLS_ECDHE_...: add a suite of an offered version, or offer the suites' version"))
    }

    /// A file relative to the plan's directory that must exist.
    fn pem_file(&self, node: &Node, path: &str, what: &str) -> Result<PathBuf, PlanError> {
        let rel = self.string(node, path)?;
        if rel.trim().is_empty() {
            return Err(self
                .err(node, path, format!("empty file name; expected {what}"))
                .with_hint("e.g. `ca_file: ca.pem`"));
        }
        let resolved = self.plan_path(rel.trim());
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

/// Why a PKCS#12 file can't serve as a client identity.
struct P12Problem {
    message: String,
    hint: String,
    /// The password is at fault (point the error at it when it was given).
    about_password: bool,
}

/// Opens the PKCS#12 file with `password` (through onrush-pki, the reader onrush-http uses
/// when the run starts; a few milliseconds per file) and counts its private keys that come
/// with their certificate: the identities it holds. The messages and hints are the plan's own
/// wording of onrush-pki's classification.
fn p12_keys(file: &Path, password: &str) -> Result<usize, P12Problem> {
    use onrush_pki::Pkcs12Error as E;
    let problem = |message: String, hint: &str, about_password: bool| P12Problem {
        message,
        hint: hint.to_string(),
        about_password,
    };
    onrush_pki::read_pkcs12(file, password)
        .map(|identities| identities.len())
        .map_err(|e| match e {
            E::Io(e) => problem(
                format!("cannot be read: {e}"),
                "check the file's permissions",
                false,
            ),
            E::Pem => problem(
                "is a PEM file, not PKCS#12 (.p12/.pfx)".into(),
                "give a PEM certificate and key as `client_cert` + `client_key` (or an identity's `cert` + `key`)",
                false,
            ),
            E::PasswordMissing => problem(
                "is password-protected and no password is given".into(),
                "add its password (`client_p12_password`, an identity's `password:`, or `identities_password`); from the environment: `\"${P12_PASSWORD}\"`",
                true,
            ),
            E::WrongPassword => problem(
                "wrong password (the file's integrity check fails with it)".into(),
                "give the password the file was exported with; check it with `openssl pkcs12 -info -noout -in FILE`",
                true,
            ),
            E::UnsupportedAlgorithm(e) => problem(
                format!("uses an algorithm onrush cannot read ({e})"),
                "onrush reads PBES2 (PBKDF2 + AES, the default of `openssl pkcs12 -export`) and the legacy SHA-1 schemes (RC2, 3DES); re-export the file with `openssl pkcs12 -export`",
                false,
            ),
            E::Unreadable(e) => problem(
                format!("is not a readable PKCS#12 file ({e})"),
                "check the file with `openssl pkcs12 -info -noout -in FILE`, and its password",
                false,
            ),
            E::NoKey => problem(
                "holds no private key with its certificate (only certificates?)".into(),
                "a client identity needs both: export them together, e.g. `openssl pkcs12 -export -in client.pem -inkey client.key -out client.p12`",
                false,
            ),
        })
}

/// What [`Ctx::rustls_names`] looks names up in: the plan key, what one name is, and every alias
/// (lowercased) with the rustls name it stands for.
struct NameTable<'a> {
    key: &'a str,
    what: &'a str,
    example: &'a str,
    supported: Vec<&'static str>,
    aliases: Vec<(String, &'static str)>,
    /// Said after the list of names: which other spellings are understood.
    also: &'a str,
}
