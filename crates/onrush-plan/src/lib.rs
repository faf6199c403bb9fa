//! onrush-plan: the plan file format.
//!
//! Reads a YAML plan into a compiled [`Plan`]: variables and environment substituted, `${...}`
//! templates compiled (only `${vu}` and `${iteration}` stay as per-request slots), load models
//! normalised, steps given metric ids. Every problem is a [`PlanError`] that names the file,
//! line, column and field, says what was expected and, where possible, how to fix it.
//!
//! ```
//! let plan = onrush_plan::load_str(
//!     "plan.yaml",
//!     "target: builtin\nscenarios:\n  - name: s\n    load: { vus: 2, iterations: 3 }\n    steps: [{ get: / }]\n",
//!     std::path::Path::new("."),
//!     &[],
//! )
//! .unwrap();
//! assert_eq!(plan.scenarios[0].metrics[0].name, "GET /");
//! ```
// The plan schema is one large `json!` literal (schema.rs).
#![recursion_limit = "256"]

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod compile;
mod error;
pub mod grammar;
mod profiles;
mod schema;
pub mod testing;
// The `${...}` language, a crate of its own (onrush-template); `crate::template` keeps its paths.
use onrush_template as template;
// Durations, rates and sizes as a plan writes them (onrush-units); `crate::units` keeps its paths.
use onrush_units as units;
mod yaml;

/// The host that names the built-in target server in a `tcp:`, `thrift:`, `grpc:` or `ws:`
/// step (`tcp: builtin`, `url: ws://builtin/ws/echo`): its one port serves every protocol it
/// speaks and is known only when it runs, so such a step's port is 0 in the plan.
pub const BUILTIN_HOST: &str = "builtin";

pub use compile::UnsetVar;
pub use error::PlanError;
pub use grammar::{Grammars, StepGrammar};
pub use onrush_threshold::{
    CompareOp, LatencyFamily, LatencyStat, Threshold, ThresholdMetric, ThresholdScope, ValueKind,
};
pub use schema::{json_schema, json_schema_with};
pub use template::{RenderContext, Template, Unset, VarValue, Vars};

/// Reads and compiles the plan file at `path`. `overrides` are `-D name=value` pairs.
pub fn load(path: &Path, overrides: &[(String, String)]) -> Result<Plan, PlanError> {
    load_with_profiles(path, &[], overrides)
}

/// Like [`load`], with the plan's `profiles:` named in `profiles` applied in order first
/// (`onrush run -P smoke,tls`); `overrides` apply after them.
pub fn load_with_profiles(
    path: &Path,
    profiles: &[String],
    overrides: &[(String, String)],
) -> Result<Plan, PlanError> {
    load_with_grammars(path, profiles, overrides, Grammars::none())
}

/// Like [`load_with_profiles`], with the step grammars of protocols onrush-plan does not hold
/// (a binary that adds its own protocol passes them).
pub fn load_with_grammars(
    path: &Path,
    profiles: &[String],
    overrides: &[(String, String)],
    grammars: &Grammars,
) -> Result<Plan, PlanError> {
    let (name, text, base_dir) = read_plan(path)?;
    let env = |name: &str| std::env::var(name).ok();
    compile::compile(&name, &text, &base_dir, profiles, overrides, &env, grammars)
}

/// Like [`load_str`], with `profiles` applied first (see [`load_with_profiles`]).
pub fn load_str_with_profiles(
    source_name: &str,
    text: &str,
    base_dir: &Path,
    profiles: &[String],
    overrides: &[(String, String)],
) -> Result<Plan, PlanError> {
    load_str_with_grammars(
        source_name,
        text,
        base_dir,
        profiles,
        overrides,
        Grammars::none(),
    )
}

/// Like [`load_str_with_profiles`], with the step grammars of protocols onrush-plan does not
/// hold.
pub fn load_str_with_grammars(
    source_name: &str,
    text: &str,
    base_dir: &Path,
    profiles: &[String],
    overrides: &[(String, String)],
    grammars: &Grammars,
) -> Result<Plan, PlanError> {
    let env = |name: &str| std::env::var(name).ok();
    compile::compile(
        source_name,
        text,
        base_dir,
        profiles,
        overrides,
        &env,
        grammars,
    )
}

/// Everything a plan text is compiled with beside itself (see [`load_str_with_options`]).
pub struct LoadOptions<'a> {
    /// The plan's `profiles:` applied in order first (`-P smoke,tls`).
    pub profiles: &'a [String],
    /// `-D name=value` pairs, applied after the profiles.
    pub overrides: &'a [(String, String)],
    /// Where `${env:NAME}` and `${NAME}` of the environment are read.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The step grammars of the protocols the plan may use.
    pub grammars: &'a Grammars,
}

/// Compiles plan `text` (named `source_name` in messages, its files relative to `base_dir`)
/// with every option spelled out: the form the other `load_*` functions are shorthands of.
pub fn load_str_with_options(
    source_name: &str,
    text: &str,
    base_dir: &Path,
    options: &LoadOptions<'_>,
) -> Result<Plan, PlanError> {
    compile::compile(
        source_name,
        text,
        base_dir,
        options.profiles,
        options.overrides,
        options.env,
        options.grammars,
    )
}

/// The plan at `path` with `profiles` applied, as YAML (`onrush validate -P … --print`).
pub fn effective_yaml(path: &Path, profiles: &[String]) -> Result<String, PlanError> {
    let (name, text, _) = read_plan(path)?;
    let root = match yaml::parse(&text) {
        Ok(Some(root)) => root,
        Ok(None) => return Ok(String::new()),
        Err(e) => {
            return Err(
                PlanError::at(&name, &text, e.offset..e.offset + 1, "", e.message)
                    .with_opt_hint(e.hint),
            )
        }
    };
    Ok(profiles::emit(&profiles::apply(
        &name, &text, root, profiles,
    )?))
}

/// The plan file's name (for messages), text and folder.
fn read_plan(path: &Path) -> Result<(String, String, PathBuf), PlanError> {
    let name = path.display().to_string();
    let text = std::fs::read(path).map_err(|e| {
        let msg = match e.kind() {
            std::io::ErrorKind::NotFound => {
                "the plan file does not exist; expected a path to a YAML plan".to_string()
            }
            _ => format!("cannot read the plan file: {e}"),
        };
        PlanError::plain(&name, "", msg)
    })?;
    let text = String::from_utf8(text).map_err(|e| {
        PlanError::plain(
            &name,
            "",
            format!(
                "the plan file is not UTF-8 text (invalid byte at offset {}); expected UTF-8 YAML",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    let base_dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((name, text, base_dir))
}

/// Compiles plan `text`. `source_name` is used in messages and as [`Plan::source`]; `base_dir`
/// is where `body_file:` paths are resolved. Environment variables come from the process.
pub fn load_str(
    source_name: &str,
    text: &str,
    base_dir: &Path,
    overrides: &[(String, String)],
) -> Result<Plan, PlanError> {
    load_str_with_env(source_name, text, base_dir, overrides, &|name| {
        std::env::var(name).ok()
    })
}

/// Like [`load_str`], with environment variables read through `env` instead of the process
/// environment (for tests and embedding).
pub fn load_str_with_env(
    source_name: &str,
    text: &str,
    base_dir: &Path,
    overrides: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, PlanError> {
    compile::compile(
        source_name,
        text,
        base_dir,
        &[],
        overrides,
        env,
        Grammars::none(),
    )
}

/// A compiled plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Path as given.
    pub source: PathBuf,
    /// File stem, used for the default results dir.
    pub name: String,
    pub target: Target,
    /// Plan-level defaults.
    pub http: HttpSettings,
    pub scenarios: Vec<Scenario>,
    /// Final values after `-D` overrides and `secrets:` (record them with
    /// [`Plan::recorded_vars`], which masks the secret ones).
    pub vars: BTreeMap<String, String>,
    /// The variables marked `${unset("why")}` in `vars:` that were given no value (neither
    /// `-D` nor the environment): empty in [`Plan::vars`]; `onrush run` warns about them
    /// before it starts, and `run --strict` refuses to start.
    pub unset_vars: Vec<UnsetVar>,
    /// The names of the variables whose values must never be written: those of `secrets:`,
    /// and those whose names say password, token, secret, key, credential or auth.
    pub secrets: BTreeSet<String>,
    /// Plan-level `thresholds:`, in file order (scopes resolved against the scenarios and steps).
    /// Scenario-level ones are in [`Scenario::thresholds`]; [`Plan::all_thresholds`] lists both.
    pub thresholds: Vec<Threshold>,
    /// `setup: { steps }`: run once, by one VU, before any scenario starts; the variables it
    /// extracts are given to every VU of every scenario (and to teardown) as they start.
    /// Compiled as a scenario named `setup` of one VU and one iteration.
    pub setup: Option<Scenario>,
    /// `teardown: { steps }`: run once after every scenario ended, also when the run was
    /// stopped early (a threshold, Ctrl-C, SIGTERM). A scenario named `teardown`.
    pub teardown: Option<Scenario>,
    /// Every file the plan refers to (feeders, bodies, templates, certificates, secret files),
    /// resolved against the plan's directory, without the plan itself: what a distributed run
    /// sends to its agents.
    pub files: Vec<PathBuf>,
    /// `distributed:`: what a run across agents does when one is lost.
    pub distributed: DistributedSettings,
}

/// `distributed:` settings (used by `onrush run --agents`; a single-machine run ignores them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DistributedSettings {
    pub on_agent_loss: OnAgentLoss,
}

/// `on_agent_loss`: what the controller does when an agent goes silent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnAgentLoss {
    /// The run goes on with the others and is marked partial.
    #[default]
    Continue,
    /// Every agent is stopped; their results so far are merged; the run exits with 3.
    Abort,
    /// A spare agent (one that joined beyond the `--agents` needed) takes over the lost
    /// agent's segment from where the run is; without a spare, as `Continue`.
    Replace,
}

impl OnAgentLoss {
    pub fn as_str(&self) -> &'static str {
        match self {
            OnAgentLoss::Continue => "continue",
            OnAgentLoss::Abort => "abort",
            OnAgentLoss::Replace => "replace",
        }
    }
}

/// What a secret's value is shown as.
pub const MASK: &str = "***";

/// Secret values shorter than this are not searched for in text (a secret of "1" would mask
/// every digit); they are still masked where the variable itself is shown.
pub const MASK_MIN_LEN: usize = 4;

impl Plan {
    /// The plan variables as results record them: secret ones as `***`.
    pub fn recorded_vars(&self) -> BTreeMap<String, String> {
        self.vars
            .iter()
            .map(|(k, v)| {
                let shown = if self.secrets.contains(k) { MASK } else { v };
                (k.clone(), shown.to_string())
            })
            .collect()
    }

    /// `text` with every secret value in it replaced by `***` (values shorter than
    /// [`MASK_MIN_LEN`] bytes are left: they would mask
    /// unrelated text).
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for name in &self.secrets {
            let Some(value) = self.vars.get(name) else {
                continue;
            };
            if value.len() >= MASK_MIN_LEN && out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), MASK));
            }
        }
        out
    }

    /// Masks secret values in the names results show (scenarios, steps, checks): a name is
    /// written from the plan's text after `${...}` was expanded, so a check such as
    /// `body_contains: ${api_token}` would carry the value.
    fn mask_names(&mut self) {
        if self.secrets.is_empty() {
            return;
        }
        let mut scenarios = std::mem::take(&mut self.scenarios);
        for s in &mut scenarios {
            s.name = self.mask(&s.name).into_owned();
            for m in &mut s.metrics {
                m.name = self.mask(&m.name).into_owned();
            }
            for c in &mut s.checks {
                c.name = self.mask(&c.name).into_owned();
            }
        }
        self.scenarios = scenarios;
    }

    /// Every threshold of the plan: the plan-level ones, then each scenario's, in file order.
    pub fn all_thresholds(&self) -> Vec<Threshold> {
        let mut all = self.thresholds.clone();
        for s in &self.scenarios {
            all.extend(s.thresholds.iter().cloned());
        }
        all
    }
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `target: builtin`: the engine starts its built-in server on 127.0.0.1 with a free port.
    Builtin,
    Url(TargetUrl),
    /// No `target:`: every step names its own server (`tcp:`, `grpc:`, a full URL, a
    /// protocol's own key such as `redis:`); an HTTP step with a bare path is a plan error.
    None,
}

/// `http://host:port[/base]`
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetUrl {
    pub scheme: Scheme,
    /// Host name or IP address; IPv6 without brackets.
    pub host: String,
    pub port: u16,
    /// `""` or e.g. `"/api"` (no trailing slash).
    pub base_path: String,
}

impl TargetUrl {
    /// `host:port` as written in a `Host:` header (IPv6 in brackets; port omitted when default).
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.scheme.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

impl std::fmt::Display for TargetUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(
            f,
            "{}://{host}:{}{}",
            self.scheme.as_str(),
            self.port,
            self.base_path
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    Http,
    /// TLS, set up as `http.tls` says ([`TlsSettings`]).
    Https,
}

impl Scheme {
    pub fn as_str(&self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
    pub fn default_port(&self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// `http:` settings (plan level, merged per scenario).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// Per-request timeout; default 30s.
    pub timeout: Duration,
    pub connections: ConnectionScope,
    /// `version`: the HTTP version spoken (default `h1`).
    pub version: HttpVersion,
    /// `max_streams`: with HTTP/2 and `connections: shared`, how many requests (streams) may be
    /// in flight at once on one connection before the pool opens another (default 100; the
    /// server's own limit applies too).
    pub max_streams: u32,
    /// `source_addresses`: local addresses that new connections bind to, ranges and CIDR blocks
    /// expanded, in the order written (at most 65,536; all of one family). Empty (default): the
    /// operating system picks the source address. Several addresses multiply the ephemeral ports
    /// available towards one target (each source address has its own port range).
    pub source_addresses: Vec<IpAddr>,
    /// `close`: how onrush closes connections it is done with, as written (`auto` when not);
    /// [`HttpSettings::close_mode`] says what it means for this scope.
    pub close: CloseMode,
    /// `tls`: how `https://` connections are set up (ignored for `http://`).
    pub tls: TlsSettings,
    /// `cookies`: the per-VU cookie jar (RFC 6265).
    pub cookies: CookieMode,
    /// `decompress: true`: send `Accept-Encoding: gzip, deflate, br` and decode responses as
    /// they stream (act like a browser). Default false: bodies are counted as sent.
    pub decompress: bool,
    /// `redirects`: how many redirects to follow per request; 0 (default): none, a 3xx is the
    /// response.
    pub redirects: u32,
    /// `throttle`: a bandwidth cap per connection in bytes/s, both directions (slow clients).
    pub throttle: Option<u64>,
    /// `body_limit`: how much of a response body is kept for extractors and body checks
    /// (default 1 MiB); bodies of steps without them are streamed and discarded.
    pub body_limit: u64,
}

impl HttpSettings {
    /// The close mode in effect: `auto` resolved by the connection scope (`server` for
    /// `per_request`, where a client that will not reuse the connection says so, as Go's and
    /// JMeter's HTTP clients do; `normal` for the scopes that reuse connections).
    pub fn close_mode(&self) -> CloseMode {
        match (self.close, self.connections) {
            (CloseMode::Auto, ConnectionScope::PerRequest) => CloseMode::Server,
            (CloseMode::Auto, _) => CloseMode::Normal,
            (mode, _) => mode,
        }
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            timeout: Duration::from_secs(30),
            connections: ConnectionScope::PerVu,
            version: HttpVersion::H1,
            max_streams: 100,
            source_addresses: Vec::new(),
            close: CloseMode::Auto,
            tls: TlsSettings::default(),
            cookies: CookieMode::On,
            decompress: false,
            redirects: 0,
            throttle: None,
            body_limit: 1 << 20,
        }
    }
}

/// `http.version`: which HTTP version requests use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpVersion {
    /// `h1` (default): HTTP/1.1.
    #[default]
    H1,
    /// `h2`: HTTP/2 — over TLS the server must choose `h2` by ALPN; for `http://` targets h2c
    /// with prior knowledge.
    H2,
    /// `auto`: over TLS, offer `h2` and `http/1.1` by ALPN and speak what the server chooses
    /// (as browsers do); `http://` targets use HTTP/1.1.
    Auto,
}

impl HttpVersion {
    pub fn as_str(&self) -> &'static str {
        match self {
            HttpVersion::H1 => "h1",
            HttpVersion::H2 => "h2",
            HttpVersion::Auto => "auto",
        }
    }
}

/// `http.cookies`: the per-VU cookie jar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CookieMode {
    /// `on` (default): each VU keeps its cookies across iterations, like one browser.
    #[default]
    On,
    /// `per_iteration`: the jar is emptied when an iteration starts (a new browser each time).
    PerIteration,
    /// `off`: no cookie handling; `Cookie` headers only as written in the plan.
    Off,
}

impl CookieMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            CookieMode::On => "on",
            CookieMode::PerIteration => "per_iteration",
            CookieMode::Off => "off",
        }
    }
}

/// `http.tls`: TLS settings for `https://` targets. A scenario's `tls:` keys override the
/// plan-level ones key by key. Default: `session: resume`, certificates verified against the
/// system roots, TLS 1.2 and 1.3, the target's host as server name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsSettings {
    /// `session`: how TLS sessions are reused across new connections.
    pub session: TlsSessionMode,
    /// `insecure: true`: accept any server certificate (test systems only).
    pub insecure: bool,
    /// `ca_file`: a PEM file of CAs to trust, resolved against the plan's directory (checked to
    /// exist when the plan loads).
    pub ca_file: Option<PathBuf>,
    /// The client identities for mutual TLS, from one of `client_cert` + `client_key`,
    /// `client_p12` (+ `client_p12_password`), `identities` or `identities_dir` (+
    /// `identities_password`); files resolved against the plan's directory and checked to
    /// exist, PKCS#12 files opened with their password. VU k (from 1) presents identity
    /// (k - 1) mod n, where a PKCS#12 file holding several keys counts as that many identities.
    /// Empty (default): no client certificate. A scenario that gives any of these keys
    /// replaces the plan-level identities as a whole.
    pub identities: Vec<ClientIdentity>,
    /// `ciphers`: the cipher suites offered, by rustls name ([`TLS_CIPHER_SUITES`]), in the
    /// order written, without duplicates; empty (default): all of them.
    pub ciphers: Vec<String>,
    /// `kx_groups`: the key-exchange groups offered, by rustls name ([`TLS_KX_GROUPS`]), in
    /// the order written (the first one's key share goes in the ClientHello), without
    /// duplicates; empty (default): all of them, X25519 first.
    pub kx_groups: Vec<String>,
    /// `versions`: the TLS versions offered, in ascending order without duplicates; empty
    /// (default): both 1.2 and 1.3.
    pub versions: Vec<TlsVersionSetting>,
    /// `server_name`: the SNI name and the name the certificate is checked against; `None`
    /// (default): the target's host.
    pub server_name: Option<String>,
}

/// One client identity of `http.tls` (mutual TLS): where its certificate chain and key are.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientIdentity {
    /// A PEM certificate chain and its PEM private key (`client_cert` + `client_key`, an
    /// `identities` entry `{ cert, key }`, or a `NAME.pem`/`NAME.crt` + `NAME.key` pair of
    /// `identities_dir`).
    Pem { cert: PathBuf, key: PathBuf },
    /// A PKCS#12 file and its password (`client_p12`, an entry `{ p12, password }`, or a
    /// `*.p12`/`*.pfx` of `identities_dir`); `keys` is how many private keys (identities) it
    /// holds, as found when the plan loaded.
    Pkcs12 {
        file: PathBuf,
        password: String,
        keys: usize,
    },
}

impl ClientIdentity {
    /// The certificate (PEM) or PKCS#12 file.
    pub fn file(&self) -> &Path {
        match self {
            ClientIdentity::Pem { cert, .. } => cert,
            ClientIdentity::Pkcs12 { file, .. } => file,
        }
    }
}

/// Never prints the password.
impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientIdentity::Pem { cert, key } => f
                .debug_struct("Pem")
                .field("cert", cert)
                .field("key", key)
                .finish(),
            ClientIdentity::Pkcs12 {
                file,
                password,
                keys,
            } => f
                .debug_struct("Pkcs12")
                .field("file", file)
                .field("password", &if password.is_empty() { "" } else { "***" })
                .field("keys", keys)
                .finish(),
        }
    }
}

/// The key-exchange groups `http.tls.kx_groups` accepts: (rustls name, other names). The
/// rustls names are those of rustls' *ring* provider, which onrush offers (a test of the
/// `onrush` crate checks the two lists agree); a plan may write any name, in any case.
pub const TLS_KX_GROUPS: [(&str, &[&str]); 3] = [
    ("X25519", &["x25519"]),
    ("secp256r1", &["P-256", "P256", "prime256v1"]),
    ("secp384r1", &["P-384", "P384"]),
];

/// The cipher suites `http.tls.ciphers` accepts: (rustls name, IANA name, OpenSSL name, TLS
/// version). The rustls names are those of rustls' *ring* provider, which onrush offers (a
/// test of the `onrush` crate checks the two lists agree); a plan may write any of the three
/// names, in any case.
pub const TLS_CIPHER_SUITES: [(&str, &str, &str, TlsVersionSetting); 9] = [
    (
        "TLS13_AES_256_GCM_SHA384",
        "TLS_AES_256_GCM_SHA384",
        "TLS_AES_256_GCM_SHA384",
        TlsVersionSetting::V1_3,
    ),
    (
        "TLS13_AES_128_GCM_SHA256",
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_128_GCM_SHA256",
        TlsVersionSetting::V1_3,
    ),
    (
        "TLS13_CHACHA20_POLY1305_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
        TlsVersionSetting::V1_3,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305",
        TlsVersionSetting::V1_2,
    ),
];

/// `http.tls.session`: what a new TLS connection reuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsSessionMode {
    /// `resume` (default): each VU keeps its own session cache, so a VU's first connection is a
    /// full handshake and its later ones resume (a returning user).
    #[default]
    Resume,
    /// `shared`: one session cache for all VUs: almost every connection resumes (cheapest for the
    /// load machine).
    Shared,
    /// `full`: no session reuse: every new connection is a full handshake (a brand-new user).
    Full,
}

impl TlsSessionMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            TlsSessionMode::Resume => "resume",
            TlsSessionMode::Shared => "shared",
            TlsSessionMode::Full => "full",
        }
    }
}

/// `http.tls.versions`: one TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TlsVersionSetting {
    /// `"1.2"`
    V1_2,
    /// `"1.3"`
    V1_3,
}

impl TlsVersionSetting {
    pub fn as_str(&self) -> &'static str {
        match self {
            TlsVersionSetting::V1_2 => "1.2",
            TlsVersionSetting::V1_3 => "1.3",
        }
    }
}

/// `http.close`: how a connection onrush is done with is closed, and so which side keeps its
/// TIME_WAIT (the side that closes first keeps the connection's tuple for 60 s on Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CloseMode {
    /// `auto` (default): `server` for `connections: per_request`, `normal` for every other
    /// scope (see [`HttpSettings::close_mode`]).
    #[default]
    Auto,
    /// `normal`: onrush closes with FIN when it is done with the connection, and so keeps the
    /// TIME_WAIT on its own ephemeral ports (a browser tab closing, a pool evicting).
    Normal,
    /// `server`: each request says `Connection: close`, so the server closes after its
    /// response and keeps the TIME_WAIT, as k6's `noConnectionReuse` (Go), JMeter without
    /// keep-alive and `wrk -H 'Connection: close'` do. Only with `connections: per_request`.
    Server,
    /// `reset`: close with `SO_LINGER` 0, which sends a reset (RST) and skips TIME_WAIT on the
    /// client, so ports are free again at once. The server sees resets, and data still in
    /// flight can be lost: only for connection-churn tests.
    Reset,
}

impl CloseMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            CloseMode::Auto => "auto",
            CloseMode::Normal => "normal",
            CloseMode::Server => "server",
            CloseMode::Reset => "reset",
        }
    }
}

/// How long a connection lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnectionScope {
    /// `shared`: one pool of connections per worker thread (per target) that every VU of the
    /// scenario draws from: an HTTP/1.1 connection serves one request at a time and goes back
    /// to the pool; an HTTP/2 connection carries up to `max_streams` requests at once.
    Shared,
    /// `per_vu` (default): each VU keeps its connection alive across iterations.
    #[default]
    PerVu,
    /// `per_iteration`: a new connection for each iteration.
    PerIteration,
    /// `per_request`: a new connection for each request.
    PerRequest,
}

impl ConnectionScope {
    pub fn as_str(&self) -> &'static str {
        match self {
            ConnectionScope::Shared => "shared",
            ConnectionScope::PerVu => "per_vu",
            ConnectionScope::PerIteration => "per_iteration",
            ConnectionScope::PerRequest => "per_request",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub load: LoadModel,
    /// `load.graceful_stop` (default 30s): when a load with a duration ends, VUs start no new
    /// request, and the requests in flight may finish for this long before they are cut
    /// (counted as `interrupted`). Meaningless without a duration (the loader refuses it).
    pub graceful_stop: Duration,
    /// Plan-level merged with scenario-level `http:`.
    pub http: HttpSettings,
    pub steps: Vec<Step>,
    /// One per distinct metric name in this scenario, in first-appearance order;
    /// [`RequestStep::metric`] indexes this.
    pub metrics: Vec<StepInfo>,
    /// The scenario's own `thresholds:`; without a scope prefix their scope is this scenario.
    pub thresholds: Vec<Threshold>,
    /// Every named check of the scenario (response checks, and extractions without a default),
    /// in first-appearance order; a check's id indexes this.
    pub checks: Vec<CheckInfo>,
    /// Runtime variables (feeder columns, extractor results, loop items): slot i is named
    /// `vars[i]`; templates refer to slots.
    pub vars: Vec<String>,
    /// How many per-VU counters (`${counter(name)}`) templates use.
    pub counters: usize,
    /// How many `once:` blocks the steps have.
    pub onces: usize,
    /// `feeders:`: test data picked at the start of every iteration.
    pub feeders: Vec<FeederUse>,
    /// `pacing`: the target duration of one iteration; a VU that finishes early waits.
    pub pacing: Option<Duration>,
}

/// A feeder of a scenario: which slots its columns fill.
#[derive(Debug, Clone, PartialEq)]
pub struct FeederUse {
    /// The file as written in the plan.
    pub file: String,
    pub feeder: Shared<onrush_data::Feeder>,
    /// Slot of each column, in column order.
    pub slots: Vec<usize>,
}

/// A value loaded once and shared by all threads; equal when it is the same value.
pub struct Shared<T>(pub std::sync::Arc<T>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shared<{}>", std::any::type_name::<T>())
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// One metric of a scenario: a request step or a group (transaction) of steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepInfo {
    pub name: String,
    pub kind: MetricKind,
}

/// What a metric measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricKind {
    /// One request per sample (counted in the request totals).
    #[default]
    Request,
    /// A `group:` of steps, one sample per run of the group: its whole duration (JMeter's
    /// Transaction Controller). Not counted as requests.
    Group,
}

/// A check as counted in results: its name and the metric (step) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckInfo {
    pub name: String,
    /// Index into [`Scenario::metrics`].
    pub metric: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LoadModel {
    /// `vus` + `iterations` (per VU), optional `ramp_up`: VU k (0-based) starts at k*ramp_up/vus.
    ClosedIterations {
        vus: u32,
        iterations: u64,
        ramp_up: Duration,
    },
    /// `vus` + `shared_iterations` (+ `ramp_up`): `iterations` in total, each taken by whichever
    /// VU is free next (k6's shared-iterations executor; what `onrush quick -n` uses).
    SharedIterations {
        vus: u32,
        iterations: u64,
        ramp_up: Duration,
    },
    /// `vus` + `duration` (+ `ramp_up`), or `stages: [{vus, over}]`: the VU count follows linear ramps
    /// starting from `start_vus`. vus+duration+ramp_up normalises to start_vus 0,
    /// stages [{vus, ramp_up}, {vus, duration - ramp_up}]; without ramp_up: start_vus = vus, [{vus, duration}].
    ClosedStages {
        start_vus: u32,
        stages: Vec<VuStage>,
    },
    /// `rate` + `duration`, or `stages: [{rate, over}]` (optional `start_rate`, default 0; with `rate`
    /// and no stages, start_rate = rate and stages = [{rate, duration}]). Always `max_vus`.
    Open {
        start_rate: f64,
        stages: Vec<RateStage>,
        max_vus: u32,
        /// `arrival_slack` (default [`DEFAULT_ARRIVAL_SLACK`]): an arrival may start up to this
        /// long before its scheduled time, so that one wake-up of the worker starts every
        /// arrival due within it. Latency is then timed from the actual start; a late arrival
        /// is timed from its scheduled start, as always.
        slack: Duration,
        /// `warm_up` (default [`WarmUp::Auto`]): how many VUs are created, and their
        /// connections opened, before the schedule starts.
        warm_up: WarmUp,
    },
}

/// The open model's default `arrival_slack`.
pub const DEFAULT_ARRIVAL_SLACK: Duration = Duration::from_millis(1);

/// The open model's `warm_up`: VUs created before the schedule's origin, each having opened
/// what its first request step would (an HTTP keep-alive connection), so that the first
/// arrivals do not pay for thousands of connects (like wrk, which connects before it
/// measures, or k6's `preAllocatedVUs`). The time it takes is not part of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WarmUp {
    /// `warm_up: true` (the default): enough VUs for the first second's arrivals if each
    /// took 50 ms ([`WarmUp::vus`]), at most `max_vus`.
    #[default]
    Auto,
    /// `warm_up: false`: every VU is created (and connects) when an arrival first needs it.
    Off,
    /// `warm_up: N`: N VUs (at most `max_vus`; 0 is `false`).
    Vus(u32),
}

impl WarmUp {
    /// How long [`WarmUp::Auto`] assumes an iteration takes: it warms up as many VUs as the
    /// first second's arrivals keep busy at that latency.
    pub const AUTO_LATENCY: Duration = Duration::from_millis(50);

    /// How many VUs to warm up for a load whose first second has `first_second` arrivals.
    pub fn vus(self, first_second: u64, max_vus: u32) -> u32 {
        let n = match self {
            WarmUp::Off => 0,
            WarmUp::Vus(n) => n as u64,
            WarmUp::Auto => {
                let per_ms = Self::AUTO_LATENCY.as_millis() as u64;
                (first_second * per_ms).div_ceil(1000)
            }
        };
        n.min(max_vus as u64) as u32
    }
}

impl LoadModel {
    /// The most VUs this model can use at once.
    pub fn max_vus(&self) -> u32 {
        match self {
            LoadModel::ClosedIterations { vus, .. } | LoadModel::SharedIterations { vus, .. } => {
                *vus
            }
            LoadModel::ClosedStages { start_vus, stages } => {
                stages.iter().map(|s| s.vus).fold(*start_vus, u32::max)
            }
            LoadModel::Open { max_vus, .. } => *max_vus,
        }
    }

    /// Planned duration, when the model has one (`ClosedIterations` runs until the iterations are done).
    pub fn duration(&self) -> Option<Duration> {
        match self {
            LoadModel::ClosedIterations { .. } | LoadModel::SharedIterations { .. } => None,
            LoadModel::ClosedStages { stages, .. } => Some(stages.iter().map(|s| s.over).sum()),
            LoadModel::Open { stages, .. } => Some(stages.iter().map(|s| s.over).sum()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VuStage {
    pub vus: u32,
    pub over: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStage {
    pub per_second: f64,
    pub over: Duration,
}

// Steps are built once at load and only read on the hot path; the size difference between
// variants does not matter, and `Request(RequestStep)` is the documented shape.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Request(RequestStep),
    /// A step of a protocol onrush-plan does not hold, compiled by its [`StepGrammar`].
    Custom(CustomStep),
    /// Fixed: `min == max`; `1s..3s`: uniform in `[min, max]`.
    Think {
        min: Duration,
        max: Duration,
    },
    Loop {
        count: u64,
        steps: Vec<Step>,
    },
    /// `loop: { while: CONDITION, max: N, steps }`: runs while the condition holds, at most
    /// `max` times.
    While {
        condition: Condition,
        max: u64,
        steps: Vec<Step>,
    },
    /// `loop: { foreach: LIST, as: ITEM, steps }`: once per value of the list variable.
    ForEach {
        list: usize,
        item: usize,
        steps: Vec<Step>,
    },
    /// `group: { name, steps }`: measured as a whole under metric `metric`.
    Group {
        metric: usize,
        steps: Vec<Step>,
    },
    /// `if: CONDITION, then: [...], else: [...]`.
    If {
        condition: Condition,
        then: Vec<Step>,
        otherwise: Vec<Step>,
    },
    /// `once: [...]`: runs in a VU's first iteration only (`id` indexes the VU's flags).
    Once {
        id: usize,
        steps: Vec<Step>,
    },
    /// `random: [{ weight, steps }, ...]`: one branch per run, chosen by weight.
    Random {
        branches: Vec<(u32, Vec<Step>)>,
    },
}

/// A step of a protocol whose grammar was passed in [`Grammars`]: what every request step has,
/// compiled here, and the protocol's own part, compiled by its grammar.
#[derive(Clone)]
pub struct CustomStep {
    /// The grammar's key (`redis`): which protocol compiles the step for the run.
    pub protocol: &'static str,
    /// Index into [`Scenario::metrics`].
    pub metric: usize,
    /// `timeout:`, when the step has one.
    pub timeout: Option<Duration>,
    pub extract: Vec<Extract>,
    pub checks: Vec<Check>,
    pub on_failure: OnFailure,
    spec: std::sync::Arc<dyn std::any::Any + Send + Sync>,
}

impl CustomStep {
    pub(crate) fn new(
        protocol: &'static str,
        metric: usize,
        timeout: Option<Duration>,
        outcome: (Vec<Extract>, Vec<Check>, OnFailure),
        spec: Box<dyn std::any::Any + Send + Sync>,
    ) -> Self {
        let (extract, checks, on_failure) = outcome;
        CustomStep {
            protocol,
            metric,
            timeout,
            extract,
            checks,
            on_failure,
            spec: spec.into(),
        }
    }

    /// The protocol's own compiled step, as its grammar made it (`None` for another type).
    pub fn spec<T: 'static>(&self) -> Option<&T> {
        self.spec.downcast_ref()
    }
}

impl std::fmt::Debug for CustomStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomStep")
            .field("protocol", &self.protocol)
            .field("metric", &self.metric)
            .field("timeout", &self.timeout)
            .field("extract", &self.extract)
            .field("checks", &self.checks)
            .field("on_failure", &self.on_failure)
            .finish_non_exhaustive()
    }
}

/// Two custom steps are equal when they are the same compiled step of the same plan (the
/// protocol's part has no equality of its own).
impl PartialEq for CustomStep {
    fn eq(&self, other: &Self) -> bool {
        self.protocol == other.protocol
            && self.metric == other.metric
            && self.timeout == other.timeout
            && self.extract == other.extract
            && self.checks == other.checks
            && self.on_failure == other.on_failure
            && std::sync::Arc::ptr_eq(&self.spec, &other.spec)
    }
}

/// A test on a runtime variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub var: usize,
    pub test: ConditionTest,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConditionTest {
    /// `exists: true`: the variable has a value (`exists: false`: it has none).
    Exists(bool),
    /// `equals: VALUE`
    Equals(Template),
    /// `not_equals: VALUE`
    NotEquals(Template),
    /// `matches: REGEX`
    Matches(Shared<regex::bytes::Regex>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RequestStep {
    /// Index into [`Scenario::metrics`].
    pub metric: usize,
    /// Upper case: GET POST PUT PATCH DELETE HEAD OPTIONS.
    pub method: String,
    /// Some when the step gives an absolute URL (host not templated).
    pub target: Option<TargetUrl>,
    /// Origin-form path + query, always starts with '/', base_path already prefixed.
    pub path: Template,
    pub headers: Vec<(String, Template)>,
    pub body: Body,
    /// Overrides `http.timeout`.
    pub timeout: Option<Duration>,
    /// None: status >= 400 is a failure.
    pub expect_status: Option<Vec<u16>>,
    /// `query: { name: value }`: appended to the path, URL-encoded.
    pub query: Vec<(String, Template)>,
    /// `extract:`: variables set from the response, in plan order.
    pub extract: Vec<Extract>,
    /// `check:`: response checks, in plan order.
    pub checks: Vec<Check>,
    /// `on_failure`: what the VU does when this request fails (a check failed included).
    pub on_failure: OnFailure,
}

impl RequestStep {
    /// True when extractors or checks need the response body.
    pub fn needs_body(&self) -> bool {
        self.extract
            .iter()
            .any(|e| matches!(e.source, ExtractSource::Body(_)))
            || self.checks.iter().any(|c| c.kind.needs_body())
    }
}

/// What an exec step runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecCommand {
    /// `exec: [program, args...]`: run directly (each item a template, never split).
    Argv(Vec<Template>),
    /// `shell: TEXT`: run as `sh -c TEXT`.
    Shell(Template),
}

/// The bytes a TCP step sends (and a UDP step's datagram, never from a file).
#[derive(Debug, Clone, PartialEq)]
pub enum TcpPayload {
    /// `send: TEXT` (templates allowed).
    Text(Template),
    /// `send_hex: "DE AD BE EF"`.
    Bytes(Vec<u8>),
    /// `send_file: PATH` (relative to the plan, checked when it loads): the file's bytes,
    /// streamed from disk in chunks at each request, never held whole in memory.
    File(PathBuf),
}

/// `on_failure`: what a VU does after a failed request or check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// `continue` (default): go on with the next step.
    #[default]
    Continue,
    /// `next_iteration`: end this iteration, start the next.
    NextIteration,
    /// `stop_vu`: this VU runs no more iterations.
    StopVu,
    /// `stop_test`: the whole test stops (results are written as after Ctrl-C).
    StopTest,
}

impl OnFailure {
    pub fn as_str(&self) -> &'static str {
        match self {
            OnFailure::Continue => "continue",
            OnFailure::NextIteration => "next_iteration",
            OnFailure::StopVu => "stop_vu",
            OnFailure::StopTest => "stop_test",
        }
    }
}

/// One `extract:` entry: where a variable's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Extract {
    /// The variable's slot and name.
    pub var: usize,
    pub name: String,
    pub source: ExtractSource,
    pub occurrence: Occurrence,
    /// Used when nothing is found; without one, nothing found fails the request and check
    /// `check` (named `extract NAME`) counts it.
    pub default: Option<String>,
    pub check: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExtractSource {
    /// boundary, regex, jsonpath, css, xpath over the (decoded) body.
    Body(Shared<onrush_extract::Extractor>),
    /// A response header's value (case-insensitive name); several headers are occurrences.
    Header(String),
    /// The status code.
    Status,
    /// A cookie's value as set by the response (`Set-Cookie`).
    Cookie(String),
    /// The final URL after redirects (path and query).
    Url,
}

/// Which match an extractor keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrence {
    /// 1-based.
    Nth(usize),
    Last,
    Random,
    /// All matches: a list variable (for `foreach`).
    All,
}

/// One `check:` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Index into [`Scenario::checks`].
    pub id: usize,
    pub kind: CheckKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CheckKind {
    /// `status: [200, 201]`
    Status(Vec<u16>),
    /// `body_contains: TEXT`
    BodyContains(Template),
    /// `body_matches: REGEX`
    BodyMatches(Shared<regex::bytes::Regex>),
    /// `jsonpath: PATH` with `exists: true|false` or `equals: VALUE`.
    JsonPath {
        path: Shared<onrush_extract::Extractor>,
        expect: ValueExpect,
    },
    /// `header: NAME` with `exists`, `equals`, `contains` or `matches`.
    Header { name: String, expect: ValueExpect },
    /// `duration_below: 500ms`: the request's latency.
    DurationBelow(Duration),
    /// `body_size: { min, max }` in bytes (decoded body).
    BodySize { min: u64, max: u64 },
    /// `body_sha256: HEX` / `body_md5: HEX`: computed while streaming, whatever the size.
    BodyHash {
        algorithm: HashAlgorithm,
        hex: String,
    },
}

impl CheckKind {
    /// True when the check reads body bytes kept in memory (hashes and sizes stream).
    pub fn needs_body(&self) -> bool {
        matches!(
            self,
            CheckKind::BodyContains(_) | CheckKind::BodyMatches(_) | CheckKind::JsonPath { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValueExpect {
    Exists(bool),
    Equals(Template),
    Contains(Template),
    Matches(Shared<regex::bytes::Regex>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlgorithm {
    Md5,
    Sha256,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    None,
    /// `body:` or `body_template: FILE` (the file's text compiled as a template).
    Inline(Template),
    /// Resolved against the plan's directory, checked to exist at load.
    File(PathBuf),
    /// `form: { name: value }`: `application/x-www-form-urlencoded`.
    Form(Vec<(String, Template)>),
    /// `multipart: { name: value | { file, filename, content_type } }`: `multipart/form-data`,
    /// files streamed from disk.
    Multipart(Vec<MultipartField>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum MultipartField {
    Text {
        name: String,
        value: Template,
    },
    File {
        name: String,
        /// Resolved against the plan's directory, checked to exist at load.
        path: PathBuf,
        filename: String,
        content_type: String,
    },
}
