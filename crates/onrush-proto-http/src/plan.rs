//! What HTTP resolves once per run: the targets, and each scenario's settings and TLS client.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;

use crate::request::RequestStep;
use onrush_http1::{ClientIdentity, SessionMode, TlsClient, TlsOptions, TlsVersion};
use onrush_plan::{
    CloseMode, ConnectionScope, CookieMode, HttpVersion, Plan, Target, TlsSessionMode, TlsSettings,
    TlsVersionSetting,
};

use crate::step::HttpStep;
use crate::target::Targets;

/// The HTTP part of a prepared plan, shared read-only by all workers.
pub struct HttpPlan {
    pub targets: Targets,
    /// The plan's `target:` slot, for steps with a path only.
    default_target: usize,
    pub scenarios: Vec<ScenarioHttp>,
}

/// A scenario's `http:` settings as sessions use them.
pub struct ScenarioHttp {
    pub scope: ConnectionScope,
    /// `http.version`: HTTP/1.1, HTTP/2 or what ALPN chooses.
    pub version: HttpVersion,
    /// `http.max_streams`: requests at once on one HTTP/2 connection of the shared pool.
    pub max_streams: u32,
    /// Source addresses new connections are spread over (empty: the kernel chooses).
    pub source_addresses: Arc<[IpAddr]>,
    /// How connections are closed (`http.close`, `auto` resolved by the scope): `server` asks
    /// the server to close after each response (`Connection: close`), `reset` closes with RST.
    pub close: CloseMode,
    /// For https targets: the scenario's TLS configuration and how VUs reuse sessions (built
    /// when the scenario's first https step is compiled).
    pub tls: Option<(Arc<TlsClient>, SessionMode)>,
    /// `http.throttle`: a bandwidth cap per connection, bytes/s.
    pub throttle: Option<u64>,
    pub cookies: CookieMode,
}

impl HttpPlan {
    /// Resolves the plan's default target (`builtin` → `builtin_addr`) and reads every
    /// scenario's `http:` settings.
    pub fn new(plan: &Plan, builtin_addr: Option<SocketAddr>) -> anyhow::Result<Self> {
        let mut targets = Targets::default();
        let default_target = match &plan.target {
            Target::Builtin => {
                let addr = builtin_addr
                    .context("the plan's target is builtin but no built-in server runs")?;
                let slot = targets.slot_for_addr("builtin".to_string(), addr, addr.to_string());
                if builtin_speaks_h3(plan) {
                    let target = Arc::get_mut(&mut targets.list[slot].1).expect("just created");
                    target.tls = true;
                }
                slot
            }
            Target::Url(url) => targets.slot_for_url(url)?,
            // Every HTTP step has a full URL (onrush-plan refuses a bare path): no default.
            Target::None => usize::MAX,
        };
        let scenarios = plan
            .scenarios
            .iter()
            .map(|s| ScenarioHttp {
                scope: s.http.connections,
                version: s.http.version,
                max_streams: s.http.max_streams,
                source_addresses: s.http.source_addresses.clone().into(),
                close: s.http.close_mode(),
                tls: None,
                throttle: s.http.throttle,
                cookies: s.http.cookies,
            })
            .collect();
        Ok(HttpPlan {
            targets,
            default_target,
            scenarios,
        })
    }

    /// Compiles a request step of scenario `index` of `plan`.
    pub fn compile(
        &mut self,
        plan: &Plan,
        index: usize,
        request: &RequestStep,
    ) -> anyhow::Result<HttpStep> {
        let scenario = &plan.scenarios[index];
        let slot = match &request.target {
            Some(url) => self.targets.slot_for_url(url)?,
            None => self.default_target,
        };
        if self.targets.any_tls() && self.scenarios[index].tls.is_none() {
            let mut options = tls_options(&scenario.http.tls);
            // The built-in server of this run (in-process, on loopback) made its certificate
            // at start, after the plan was written: nothing to trust it by but this.
            if builtin_speaks_h3(plan) && options.ca_file.is_none() {
                options.insecure = true;
            }
            options.alpn = crate::connect::alpn_for(scenario.http.version);
            let client = TlsClient::new(&options)
                .map_err(|e| anyhow::anyhow!("scenario {}: http.tls: {e}", scenario.name))?;
            self.scenarios[index].tls =
                Some((Arc::new(client), session_mode(scenario.http.tls.session)));
        }
        if scenario.http.version == HttpVersion::H3 && !self.targets.list[slot].1.tls {
            anyhow::bail!(
                "scenario {}: a step's URL is plain http:// ({}), but the scenario has `http: \
                 {{ version: h3 }}`: HTTP/3 runs over QUIC, which always carries TLS. Write the \
                 step's URL as https://, or use version h1, h2 or auto for this scenario",
                scenario.name,
                self.targets.list[slot].0
            );
        }
        HttpStep::new(
            request.clone(),
            slot,
            self.targets.list[slot].1.clone(),
            &scenario.http,
        )
        .map_err(anyhow::Error::msg)
    }
}

/// Whether a run of `plan` starts its built-in server (`target: builtin`) over TLS with HTTP/3
/// on: when a scenario asks for `version: h3`. The builtin target is then `https://`, for every
/// scenario, and its generated certificate is not verified unless `http.tls.ca_file` is set
/// (the server runs in the same process, on loopback).
pub fn builtin_speaks_h3(plan: &Plan) -> bool {
    matches!(plan.target, Target::Builtin)
        && plan
            .scenarios
            .iter()
            .any(|s| s.http.version == HttpVersion::H3)
}

/// The TLS options of `http.tls` (shared with the protocols that speak TLS the same way: WebSocket).
pub fn tls_options(tls: &TlsSettings) -> TlsOptions {
    TlsOptions {
        ca_file: tls.ca_file.clone(),
        insecure: tls.insecure,
        versions: tls
            .versions
            .iter()
            .map(|v| match v {
                TlsVersionSetting::V1_2 => TlsVersion::Tls12,
                TlsVersionSetting::V1_3 => TlsVersion::Tls13,
            })
            .collect(),
        identities: tls
            .identities
            .iter()
            .map(|identity| match identity {
                onrush_plan::ClientIdentity::Pem { cert, key } => ClientIdentity::Pem {
                    cert: cert.clone(),
                    key: key.clone(),
                },
                onrush_plan::ClientIdentity::Pkcs12 { file, password, .. } => {
                    ClientIdentity::Pkcs12 {
                        file: file.clone(),
                        password: password.clone(),
                    }
                }
            })
            .collect(),
        cipher_suites: tls.ciphers.clone(),
        kx_groups: tls.kx_groups.clone(),
        server_name: tls.server_name.clone(),
        ..Default::default()
    }
}

/// `http.tls.session` as the TLS client's session mode.
pub fn session_mode(mode: TlsSessionMode) -> SessionMode {
    match mode {
        TlsSessionMode::Resume => SessionMode::Resume,
        TlsSessionMode::Shared => SessionMode::Shared,
        TlsSessionMode::Full => SessionMode::Full,
    }
}
