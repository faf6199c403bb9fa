//! HTTPS: TLS (rustls 0.23 with the `ring` provider) as a transport beneath HTTP/1.1's
//! `Connection` (onrush-http1) and HTTP/2 (onrush-http2).
//!
//! Build one [`TlsClient`] per plan from [`TlsOptions`] (it reads the CA and client certificate
//! files once), give every VU a [`TlsSession`] of the [`SessionMode`] the plan asks for, and open
//! connections with [`connect_tls_stream`] (or onrush-http1's `connect_tls`), which drives the
//! handshake to its end before returning so that its duration and [`HandshakeKind`] are known
//! before the first request.
//!
//! Session modes decide how often a full handshake happens, which is most of the CPU cost of
//! TLS on both sides (measured: a resumed handshake is ~2.5x cheaper than a full one):
//! - [`SessionMode::Resume`]: each VU has its own small session cache, like a returning user's
//!   browser: its first connection is a full handshake, the following ones resume.
//! - [`SessionMode::Shared`]: one cache for all VUs (as one client process would have).
//! - [`SessionMode::Full`]: no resumption: every connection is a brand-new user.
//!
//! With TLS 1.3 the server sends its resumption tickets *after* the handshake, so a connection
//! must read at least one response for the next connection to be able to resume.

mod connect;
mod failure;
mod identity;
mod verify;

pub use connect::{connect_tls_stream, connect_tls_throttled_stream, TlsTcpStream};
pub use failure::TlsFailure;
pub use identity::{read_pkcs12, ClientIdentity};

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::{ClientSessionMemoryCache, Resumption};
use rustls::pki_types::ServerName;
use rustls::sign::SingleCertAndKey;
use rustls::ClientConfig;
use tokio_rustls::TlsConnector;

use crate::session_store::SharedSessionStore;
use identity::{load_identities, read_certs};
pub use verify::AcceptAnyCert;

/// A TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

/// How a VU's connections reuse TLS sessions (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SessionMode {
    /// A per-VU session cache: a returning user. The VU's first connection is a full
    /// handshake, the next ones resume.
    #[default]
    Resume,
    /// One session cache for all VUs.
    Shared,
    /// No resumption: every connection is a full handshake, as for a brand-new user.
    Full,
}

/// Where Linux distributions keep the CA bundle (Debian and Ubuntu, Fedora and RHEL, openSUSE,
/// Alpine), in the order they are tried.
pub const SYSTEM_CA_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The host's CA bundle: `SSL_CERT_FILE` when set (OpenSSL's variable), else the first of
/// [`SYSTEM_CA_BUNDLES`] that exists.
fn system_ca_bundle() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
        return Some(PathBuf::from(file));
    }
    SYSTEM_CA_BUNDLES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// What a [`TlsClient`] is built from. onrush ships no root store of its own: the CAs of
/// `ca_file` are trusted, or without it the host's CA bundle (`SSL_CERT_FILE`, else the first
/// of [`SYSTEM_CA_BUNDLES`] that exists), as curl does; a test system gives `ca_file` or
/// `insecure`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM file of the CA certificate(s) to trust.
    pub ca_file: Option<PathBuf>,
    /// Accept any server certificate (a test system with a self-signed certificate). The
    /// handshake signatures are still checked.
    pub insecure: bool,
    /// The versions offered; empty means TLS 1.2 and 1.3.
    pub versions: Vec<TlsVersion>,
    /// Client certificate for mTLS: a PEM certificate chain and a PEM private key. When set it
    /// is the first identity, before those of `identities`.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Client identities for mTLS, spread over VUs: the session of VU `k` (from 1) presents
    /// identity `(k - 1) mod n` (see [`TlsClient::session`]), so a test can log in as many
    /// users, as JMeter's keystore index range does. A PKCS#12 file counts as one identity per
    /// private key it holds.
    pub identities: Vec<ClientIdentity>,
    /// The cipher suites offered, by rustls name (`TLS13_AES_128_GCM_SHA256`,
    /// `TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384`, ...; see [`cipher_suite_names`]; case does not
    /// matter), in order of preference; empty: all of them. A TLS version none of them belongs
    /// to is not offered.
    pub cipher_suites: Vec<String>,
    /// The key-exchange groups offered, by rustls name (`X25519`, `secp256r1`, `secp384r1`;
    /// see [`kx_group_names`]; case does not matter), in order of preference: the first one's
    /// key share is sent with the ClientHello. Empty: rustls' default, X25519 first.
    pub kx_groups: Vec<String>,
    /// The server name to send (SNI) and verify the certificate against, instead of the one
    /// passed to [`connect_tls_stream`] (the target's host).
    pub server_name: Option<String>,
    /// The ALPN protocols offered, in order of preference (e.g. `h2`, `http/1.1`); empty means
    /// `http/1.1` only (unless `no_alpn`). [`connect_tls_stream`] reports which one the server chose.
    pub alpn: Vec<Vec<u8>>,
    /// Offer no ALPN at all (the ClientHello has no ALPN extension): for protocols that are
    /// not HTTP, such as raw TCP and Thrift over TLS. `alpn` is then ignored.
    pub no_alpn: bool,
}

/// The rustls names of the cipher suites onrush can offer (those of the *ring* provider), TLS
/// 1.3 ones first: what [`TlsOptions::cipher_suites`] accepts.
pub fn cipher_suite_names() -> Vec<&'static str> {
    rustls::crypto::ring::ALL_CIPHER_SUITES
        .iter()
        .filter_map(|s| s.suite().as_str())
        .collect()
}

/// The rustls names of the key-exchange groups onrush can offer (those of the *ring*
/// provider): what [`TlsOptions::kx_groups`] accepts.
pub fn kx_group_names() -> Vec<&'static str> {
    rustls::crypto::ring::ALL_KX_GROUPS
        .iter()
        .filter_map(|g| g.name().as_str())
        .collect()
}

/// A TLS configuration problem, found while building a [`TlsClient`]: the message names the
/// file at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfigError {
    msg: String,
}

impl TlsConfigError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        TlsConfigError { msg: msg.into() }
    }
}

impl fmt::Display for TlsConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for TlsConfigError {}

/// The TLS side of a plan: certificates loaded once, shared by every VU's [`TlsSession`].
#[derive(Debug, Clone)]
pub struct TlsClient {
    /// One set of configurations per client identity (one without client certificate when
    /// there is none). Each identity has its own `Shared` cache: a session is never resumed
    /// under another identity (the server would see the first identity's user, as resumption
    /// skips the client certificate).
    identities: Vec<IdentityConfigs>,
    server_name: Option<ServerName<'static>>,
}

/// The configurations of one client identity.
#[derive(Debug, Clone)]
struct IdentityConfigs {
    /// The configuration without its resumption setting; cloned per VU for `Resume`.
    base: ClientConfig,
    shared: Arc<ClientConfig>,
    full: Arc<ClientConfig>,
}

/// Session entries kept per VU in [`SessionMode::Resume`]: one per server name (a VU talks to
/// one or a few hosts); rustls keeps up to 8 TLS 1.3 tickets per entry.
const PER_VU_SERVERS: usize = 4;

impl TlsClient {
    /// Reads the files named in `opts` and builds the configuration.
    pub fn new(opts: &TlsOptions) -> Result<TlsClient, TlsConfigError> {
        let mut provider = rustls::crypto::ring::default_provider();
        if opts.cipher_suites.is_empty() {
            prefer_sha256_suites(&mut provider.cipher_suites);
        } else {
            provider.cipher_suites = select_cipher_suites(&opts.cipher_suites)?;
        }
        if !opts.kx_groups.is_empty() {
            provider.kx_groups = select_kx_groups(&opts.kx_groups)?;
        }
        let provider = Arc::new(provider);
        let versions: Vec<&'static rustls::SupportedProtocolVersion> = if opts.versions.is_empty() {
            vec![&rustls::version::TLS13, &rustls::version::TLS12]
        } else {
            opts.versions
                .iter()
                .map(|v| match v {
                    TlsVersion::Tls12 => &rustls::version::TLS12,
                    TlsVersion::Tls13 => &rustls::version::TLS13,
                })
                .collect()
        };
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| {
                if opts.cipher_suites.is_empty() {
                    TlsConfigError::new(format!("TLS versions {:?}: {e}", opts.versions))
                } else {
                    TlsConfigError::new(format!(
                        "none of the cipher suites {:?} belongs to the TLS versions offered \
                         ({:?}): add a suite of those versions, or offer the suites' version",
                        opts.cipher_suites, opts.versions
                    ))
                }
            })?;
        let builder = if opts.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
        } else {
            let mut roots = rustls::RootCertStore::empty();
            let system = match &opts.ca_file {
                Some(_) => None,
                None => Some(system_ca_bundle().ok_or_else(|| {
                    TlsConfigError::new(format!(
                        "no CA to verify HTTPS servers with: no http.tls.ca_file, and this host \
                         has no CA bundle (SSL_CERT_FILE is unset and none of {} exists); set \
                         http.tls.ca_file to your CA's PEM (or install the ca-certificates \
                         package), or http.tls.insecure: true for a test system",
                        SYSTEM_CA_BUNDLES.join(", ")
                    ))
                })?),
            };
            if let Some(path) = &opts.ca_file {
                let certs = read_certs(path, "CA file")?;
                for cert in certs {
                    roots.add(cert).map_err(|e| {
                        TlsConfigError::new(format!(
                            "CA file {}: not a usable CA certificate: {e}",
                            path.display()
                        ))
                    })?;
                }
            }
            if let Some(path) = &system {
                // A distribution's bundle may hold a certificate rustls cannot use (an old
                // encoding): skipped, as every TLS library does with its system store.
                roots.add_parsable_certificates(read_certs(path, "system CA bundle")?);
            }
            builder.with_root_certificates(roots)
        };
        let mut base = builder.with_no_client_auth();
        let certified = load_identities(opts, base.crypto_provider())?;
        base.alpn_protocols = if opts.no_alpn {
            Vec::new()
        } else if opts.alpn.is_empty() {
            vec![b"http/1.1".to_vec()]
        } else {
            opts.alpn.clone()
        };
        let server_name =
            match &opts.server_name {
                Some(name) => Some(ServerName::try_from(name.clone()).map_err(|_| {
                    TlsConfigError::new(format!("invalid TLS server name {name:?}"))
                })?),
                None => None,
            };
        let configs = |base: ClientConfig| {
            let mut shared = base.clone();
            // One store per identity: a session is never resumed under another identity.
            shared.resumption = Resumption::store(Arc::new(SharedSessionStore::default()));
            let mut full = base.clone();
            full.resumption = Resumption::disabled();
            IdentityConfigs {
                base,
                shared: Arc::new(shared),
                full: Arc::new(full),
            }
        };
        let identities = if certified.is_empty() {
            vec![configs(base)]
        } else {
            certified
                .into_iter()
                .map(|key| {
                    let mut config = base.clone();
                    config.client_auth_cert_resolver = Arc::new(SingleCertAndKey::from(key));
                    configs(config)
                })
                .collect()
        };
        Ok(TlsClient {
            identities,
            server_name,
        })
    }

    /// How many client identities the sessions are spread over (1 without mTLS).
    pub fn identities(&self) -> usize {
        self.identities.len()
    }

    /// A session for VU number `vu` (counted from 1; 0 is taken as 1), presenting client
    /// identity `(vu - 1) mod n` of the `n` configured: VU 1 the first, VU n + 1 the first
    /// again, so each identity serves the same number of VUs (give or take one).
    ///
    /// `Resume` builds a configuration with its own small session cache (one allocation per
    /// VU, a few hundred bytes, plus the tickets it keeps); `Shared` and `Full` share the
    /// configurations of the VU's identity (`Shared`: one session cache per identity).
    pub fn session(&self, mode: SessionMode, vu: u64) -> TlsSession {
        let identity = (vu.saturating_sub(1) % self.identities.len() as u64) as usize;
        let configs = &self.identities[identity];
        let config = match mode {
            SessionMode::Resume => {
                let mut config = configs.base.clone();
                config.resumption =
                    Resumption::store(Arc::new(ClientSessionMemoryCache::new(PER_VU_SERVERS)));
                Arc::new(config)
            }
            SessionMode::Shared => configs.shared.clone(),
            SessionMode::Full => configs.full.clone(),
        };
        TlsSession {
            connector: TlsConnector::from(config.clone()),
            config,
            server_name: self.server_name.clone(),
            mode,
            identity,
        }
    }
}

/// One VU's TLS state (its session cache, in [`SessionMode::Resume`]); cheap to clone.
#[derive(Clone)]
pub struct TlsSession {
    connector: TlsConnector,
    /// The connector's configuration, for a transport that runs TLS itself (QUIC, in
    /// onrush-http3): the same verifier, identity and session cache.
    config: Arc<ClientConfig>,
    server_name: Option<ServerName<'static>>,
    mode: SessionMode,
    identity: usize,
}

impl TlsSession {
    /// The mode this session was made with.
    pub fn mode(&self) -> SessionMode {
        self.mode
    }

    /// Which client identity (index from 0, in [`TlsClient`] order) this session presents.
    pub fn identity(&self) -> usize {
        self.identity
    }

    /// The rustls configuration of this session (CA or `insecure` verifier, client identity,
    /// session cache, ALPN), for a transport that runs the TLS handshake itself: QUIC
    /// (onrush-http3) builds its crypto configuration from it, so HTTP/3 verifies, presents
    /// and resumes as HTTP/1.1 and HTTP/2 do.
    pub fn client_config(&self) -> &Arc<ClientConfig> {
        &self.config
    }

    /// The name to send (SNI) and verify the certificate against: the
    /// `TlsOptions::server_name` override when set, else `server_name` (the target's host).
    pub fn server_name_for(&self, server_name: &str) -> String {
        match &self.server_name {
            Some(name) => name.to_str().into_owned(),
            None => server_name.to_owned(),
        }
    }
}

impl fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSession")
            .field("mode", &self.mode)
            .field("server_name", &self.server_name)
            .field("identity", &self.identity)
            .finish()
    }
}

/// Whether a handshake was a full one or resumed a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandshakeKind {
    /// A full handshake (certificate sent and verified, key exchange).
    Full,
    /// A resumed session (ticket or session ID): no certificate, cheaper on both sides.
    Resumed,
}

/// The default offer, reordered: AES-128-GCM with SHA-256 first (as browsers offer), then the
/// rest in rustls's order. rustls lists AES-256-GCM-SHA384 first, and servers that follow the
/// client's order (rustls, nginx by default) then run the whole key schedule and transcript
/// hash on SHA-384: measured with callgrind, SHA-512 blocks were 26% of a resumed handshake's
/// client instructions, where SHA-256 runs on the CPU's SHA extensions.
fn prefer_sha256_suites(suites: &mut [rustls::SupportedCipherSuite]) {
    use rustls::CipherSuite as C;
    let rank = |s: &rustls::SupportedCipherSuite| match s.suite() {
        C::TLS13_AES_128_GCM_SHA256 => 0,
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 | C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 1,
        _ => 2,
    };
    // Stable: within a rank rustls's order (TLS 1.3 before TLS 1.2) stays.
    suites.sort_by_key(rank);
}

/// The suites of the *ring* provider named in `names` (rustls names, any case), in that order.
/// The groups named, in order, without duplicates.
fn select_kx_groups(
    names: &[String],
) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, TlsConfigError> {
    let mut out: Vec<&'static dyn rustls::crypto::SupportedKxGroup> = Vec::new();
    for name in names {
        let found = rustls::crypto::ring::ALL_KX_GROUPS.iter().find(|g| {
            g.name()
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(name.trim()))
        });
        match found {
            Some(g) if !out.iter().any(|o| o.name() == g.name()) => out.push(*g),
            Some(_) => {}
            None => {
                return Err(TlsConfigError::new(format!(
                    "unknown key-exchange group {name:?}; onrush offers {}",
                    kx_group_names().join(", ")
                )))
            }
        }
    }
    Ok(out)
}

fn select_cipher_suites(
    names: &[String],
) -> Result<Vec<rustls::SupportedCipherSuite>, TlsConfigError> {
    let all = rustls::crypto::ring::ALL_CIPHER_SUITES;
    let mut out: Vec<rustls::SupportedCipherSuite> = Vec::new();
    for name in names {
        let found = all.iter().find(|s| {
            s.suite()
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(name.trim()))
        });
        match found {
            Some(suite) if !out.iter().any(|s| s.suite() == suite.suite()) => out.push(*suite),
            Some(_) => {}
            None => {
                return Err(TlsConfigError::new(format!(
                    "unknown cipher suite {name:?}; onrush offers {}",
                    cipher_suite_names().join(", ")
                )))
            }
        }
    }
    Ok(out)
}
