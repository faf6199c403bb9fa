//! HTTPS: TLS (rustls 0.23 with the `ring` provider) as a transport beneath [`Connection`].
//!
//! Build one [`TlsClient`] per plan from [`TlsOptions`] (it reads the CA and client certificate
//! files once), give every VU a [`TlsSession`] of the [`SessionMode`] the plan asks for, and open
//! connections with [`connect_tls`], which drives the handshake to its end before returning so
//! that its duration and [`HandshakeKind`] are known before the first request.
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

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, Resumption};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::conn::connect_tcp;
use crate::session_store::SharedSessionStore;
use crate::{ConnectOptions, Connection, Error, Throttled};
use tokio::io::{AsyncRead, AsyncWrite};

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

/// What a [`TlsClient`] is built from. onrush ships no root store: only the CAs of `ca_file`
/// are trusted, so a public site needs `ca_file` pointing at the system bundle (e.g.
/// `/etc/ssl/certs/ca-certificates.crt`), and a test system `ca_file` or `insecure`.
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
    /// The server name to send (SNI) and verify the certificate against, instead of the one
    /// passed to [`connect_tls`] (the target's host).
    pub server_name: Option<String>,
    /// The ALPN protocols offered, in order of preference (e.g. `h2`, `http/1.1`); empty means
    /// `http/1.1` only. [`connect_tls_stream`] reports which one the server chose.
    pub alpn: Vec<Vec<u8>>,
}

/// Where one mTLS client identity (certificate chain + private key) comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientIdentity {
    /// A PEM certificate chain (leaf first) and its PEM private key.
    Pem {
        /// The certificate chain file.
        cert: PathBuf,
        /// The private key file (PKCS#8, PKCS#1 or SEC1).
        key: PathBuf,
    },
    /// A PKCS#12 (`.p12`/`.pfx`) file and its password (empty when it has none). Each private
    /// key in it, with its certificate chain, is one identity, in alias order.
    Pkcs12 {
        /// The PKCS#12 file.
        file: PathBuf,
        /// Its password.
        password: String,
    },
}

/// Never prints the password (plans print their settings in debug output and logs).
impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientIdentity::Pem { cert, key } => f
                .debug_struct("Pem")
                .field("cert", cert)
                .field("key", key)
                .finish(),
            ClientIdentity::Pkcs12 { file, password } => f
                .debug_struct("Pkcs12")
                .field("file", file)
                .field("password", &if password.is_empty() { "" } else { "***" })
                .finish(),
        }
    }
}

/// The rustls names of the cipher suites onrush can offer (those of the *ring* provider), TLS
/// 1.3 ones first: what [`TlsOptions::cipher_suites`] accepts.
pub fn cipher_suite_names() -> Vec<&'static str> {
    rustls::crypto::ring::ALL_CIPHER_SUITES
        .iter()
        .filter_map(|s| s.suite().as_str())
        .collect()
}

/// A TLS configuration problem, found while building a [`TlsClient`]: the message names the
/// file at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfigError {
    msg: String,
}

impl TlsConfigError {
    fn new(msg: impl Into<String>) -> Self {
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
            builder.with_root_certificates(roots)
        };
        let mut base = builder.with_no_client_auth();
        let certified = load_identities(opts, base.crypto_provider())?;
        base.alpn_protocols = if opts.alpn.is_empty() {
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
            connector: TlsConnector::from(config),
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

/// Why a TLS handshake (or a connection right after it) failed; see [`Error::tls_failure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TlsFailure {
    /// The server's certificate is not signed by a CA onrush trusts (unknown issuer).
    CertificateUnknown,
    /// The server's certificate has expired (or is not valid yet).
    CertificateExpired,
    /// The server's certificate is not valid for the name connected to.
    NameMismatch,
    /// The server demanded a client certificate and none was configured.
    ClientCertificateRequired,
    /// The server rejected the client certificate.
    ClientCertificateRejected,
    /// No common version or cipher suite, or a malformed or unexpected message.
    Protocol,
    /// The handshake did not finish by [`ConnectOptions::deadline`] (the TCP connection was
    /// up): a server too busy doing handshakes, or one that does not speak TLS on that port.
    HandshakeTimeout,
    /// Anything else (e.g. the server closed the connection during the handshake).
    Other,
}

impl TlsFailure {
    /// How to fix it, in plain words.
    pub fn hint(self) -> &'static str {
        match self {
            TlsFailure::CertificateUnknown => {
                "the server's certificate is not signed by a CA onrush trusts: set tls.ca_file \
                 to your CA's PEM, or tls.insecure: true for a test system"
            }
            TlsFailure::CertificateExpired => {
                "the server's certificate is outside its validity period (expired, or the \
                 clock of this machine or the server is wrong): renew it, or tls.insecure: true \
                 for a test system"
            }
            TlsFailure::NameMismatch => {
                "the server's certificate is not valid for the host name in the target URL: use \
                 the name the certificate was issued for, or set tls.server_name to it"
            }
            TlsFailure::ClientCertificateRequired => {
                "the server requires a client certificate (mTLS): set tls.client_cert and \
                 tls.client_key, tls.client_p12, or tls.identities"
            }
            TlsFailure::ClientCertificateRejected => {
                "the server rejected onrush's client certificate: use one signed by a CA the \
                 server trusts, not expired, and meant for client authentication"
            }
            TlsFailure::Protocol => {
                "the TLS handshake failed on the protocol itself (no common TLS version or \
                 cipher suite, or a malformed message): check tls.versions against what the \
                 server supports, and that the port really speaks TLS"
            }
            TlsFailure::HandshakeTimeout => {
                "the TLS handshake did not finish in time although the TCP connection was up: \
                 the server is overloaded doing handshakes (full handshakes cost it the most \
                 CPU: tls.session resume or shared make fewer), or nothing speaks TLS on this \
                 port (a plain HTTP server waits silently); raise http.timeout if the server is \
                 only slow"
            }
            TlsFailure::Other => {
                "the TLS handshake failed: check that the target really speaks TLS on this port"
            }
        }
    }

    /// Classifies a rustls error.
    pub(crate) fn from_rustls(e: &rustls::Error) -> TlsFailure {
        use rustls::Error as E;
        match e {
            E::InvalidCertificate(c) => match c {
                CertificateError::UnknownIssuer => TlsFailure::CertificateUnknown,
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. } => TlsFailure::CertificateExpired,
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => TlsFailure::NameMismatch,
                _ => TlsFailure::Other,
            },
            // Alerts about certificates from a server are about ours: the server verifies no
            // other certificate.
            E::AlertReceived(AlertDescription::CertificateRequired) => {
                TlsFailure::ClientCertificateRequired
            }
            E::AlertReceived(
                AlertDescription::BadCertificate
                | AlertDescription::UnsupportedCertificate
                | AlertDescription::CertificateRevoked
                | AlertDescription::CertificateExpired
                | AlertDescription::CertificateUnknown
                | AlertDescription::UnknownCA
                | AlertDescription::AccessDenied,
            ) => TlsFailure::ClientCertificateRejected,
            E::AlertReceived(_)
            | E::PeerIncompatible(_)
            | E::PeerMisbehaved(_)
            | E::InvalidMessage(_)
            | E::InappropriateMessage { .. }
            | E::InappropriateHandshakeMessage { .. }
            | E::NoApplicationProtocol
            | E::DecryptError => TlsFailure::Protocol,
            _ => TlsFailure::Other,
        }
    }

    /// The classification of an I/O error that carries a rustls error (as tokio-rustls
    /// reports them), if it does.
    pub(crate) fn from_io(e: &std::io::Error) -> Option<TlsFailure> {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .map(TlsFailure::from_rustls)
    }
}

/// A connection over TLS, as [`connect_tls`] returns it.
pub type TlsConnection = Connection<TlsStream<TcpStream>>;

/// Opens a TCP connection to `addr` (as [`crate::connect`] does, with `opts`), then performs
/// the TLS handshake with `session`'s configuration, for `server_name` (the target's host; the
/// `TlsOptions::server_name` override wins when set; an IP address is verified against the
/// certificate's IP addresses and sends no SNI).
///
/// Returns the connection, whether the handshake was full or resumed, and the handshake's
/// duration (TCP connect excluded). With [`ConnectOptions::deadline`] set, a connect or
/// handshake still running then fails with its own class (below); without, the caller wraps
/// it in a timeout.
///
/// Errors: those of [`crate::connect`]; a handshake failure is [`crate::ErrorKind::ConnectOther`]
/// with [`Error::tls_failure`] saying why; a handshake still running at
/// [`ConnectOptions::deadline`] is [`crate::ErrorKind::ConnectTimeout`] with
/// [`TlsFailure::HandshakeTimeout`]. With TLS 1.3 a server that refuses the client
/// certificate (or its absence) says so only after the client's side of the handshake is done:
/// that failure then comes from the first [`Connection::send`] instead, with the same
/// [`Error::tls_failure`] classification.
pub async fn connect_tls(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
) -> Result<(Connection<TlsStream<TcpStream>>, HandshakeKind, Duration), Error> {
    let (stream, kind, took) = connect_tls_stream(addr, opts, session, server_name).await?;
    Ok((Connection::new(stream), kind, took))
}

/// [`connect_tls`] without the HTTP/1.1 [`Connection`]: the TLS stream, for another protocol
/// (HTTP/2) to run over. `stream.get_ref().1.alpn_protocol()` tells which protocol the server
/// chose from [`TlsOptions::alpn`].
pub async fn connect_tls_stream(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
) -> Result<(TlsStream<TcpStream>, HandshakeKind, Duration), Error> {
    crate::conn::refuse_throttle(opts, "connect_tls_throttled")?;
    let name = session.name_for(server_name)?;
    let tcp = connect_tcp(addr, opts).await?;
    handshake(session, name, tcp, addr, opts.deadline).await
}

/// A TLS connection with a bandwidth cap beneath TLS, as [`connect_tls_throttled`] returns it.
pub type ThrottledTlsConnection = Connection<TlsStream<Throttled<TcpStream>>>;

/// [`connect_tls`] with the TCP stream capped to `opts.throttle` bytes per second in each
/// direction (which must be `Some`, else `ConnectOther`). The cap applies to the wire bytes,
/// handshake and TLS records included, and so slows the handshake too, as on a slow link.
pub async fn connect_tls_throttled(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
) -> Result<(ThrottledTlsConnection, HandshakeKind, Duration), Error> {
    let rate = crate::throttle::required_rate(opts)?;
    let name = session.name_for(server_name)?;
    let tcp = connect_tcp(addr, opts).await?;
    let (stream, kind, took) = handshake(
        session,
        name,
        Throttled::new(tcp, rate),
        addr,
        opts.deadline,
    )
    .await?;
    Ok((Connection::new(stream), kind, took))
}

impl TlsSession {
    fn name_for(&self, server_name: &str) -> Result<ServerName<'static>, Error> {
        match &self.server_name {
            Some(name) => Ok(name.clone()),
            None => ServerName::try_from(server_name.to_owned())
                .map_err(|_| Error::tls_name(server_name)),
        }
    }
}

async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    session: &TlsSession,
    name: ServerName<'static>,
    io: S,
    addr: SocketAddr,
    deadline: Option<tokio::time::Instant>,
) -> Result<(TlsStream<S>, HandshakeKind, Duration), Error> {
    let started = Instant::now();
    let connecting = session.connector.connect(name, io);
    let result = match deadline {
        Some(at) => match tokio::time::timeout_at(at, connecting).await {
            Ok(result) => result,
            Err(_elapsed) => return Err(Error::tls_handshake_timeout(addr, started.elapsed())),
        },
        None => connecting.await,
    };
    let stream = result.map_err(|e| Error::tls_handshake(e, addr))?;
    let took = started.elapsed();
    let kind = match stream.get_ref().1.handshake_kind() {
        Some(rustls::HandshakeKind::Resumed) => HandshakeKind::Resumed,
        _ => HandshakeKind::Full,
    };
    Ok((stream, kind, took))
}

/// The client identities of `opts` (`client_cert` first), each checked: its key parses, is of a
/// type the provider can sign with, and matches its certificate.
fn load_identities(
    opts: &TlsOptions,
    provider: &Arc<CryptoProvider>,
) -> Result<Vec<Arc<CertifiedKey>>, TlsConfigError> {
    let pem = opts
        .client_cert
        .iter()
        .map(|(cert, key)| ClientIdentity::Pem {
            cert: cert.clone(),
            key: key.clone(),
        });
    let mut out = Vec::new();
    for identity in pem.chain(opts.identities.iter().cloned()) {
        match &identity {
            ClientIdentity::Pem { cert, key } => {
                let chain = read_certs(cert, "client certificate file")?;
                let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    TlsConfigError::new(format!(
                        "client key file {}: no usable PEM private key: {e}",
                        key.display()
                    ))
                })?;
                let certified = CertifiedKey::from_der(chain, key_der, provider).map_err(|e| {
                    TlsConfigError::new(format!(
                        "client certificate {} with key {}: {e}",
                        cert.display(),
                        key.display()
                    ))
                })?;
                out.push(Arc::new(certified));
            }
            ClientIdentity::Pkcs12 { file, password } => {
                for (alias, chain, key) in read_pkcs12(file, password)? {
                    let certified = CertifiedKey::from_der(chain, key, provider).map_err(|e| {
                        TlsConfigError::new(format!(
                            "PKCS#12 file {}, entry {alias:?}: {e}",
                            file.display()
                        ))
                    })?;
                    out.push(Arc::new(certified));
                }
            }
        }
    }
    Ok(out)
}

/// The private keys of a PKCS#12 file with their certificate chains (leaf first), in alias
/// order: (alias, chain, key).
type Pkcs12Entry = (String, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// Reads and decrypts a PKCS#12 file; the errors say what to do (wrong password, a PEM file
/// given as PKCS#12, a file without a key, an algorithm that can't be read).
pub fn read_pkcs12(path: &Path, password: &str) -> Result<Vec<Pkcs12Entry>, TlsConfigError> {
    let what = |msg: &dyn fmt::Display| {
        TlsConfigError::new(format!("PKCS#12 file {}: {msg}", path.display()))
    };
    let data = std::fs::read(path).map_err(|e| what(&e))?;
    let store = match p12_keystore::KeyStore::from_pkcs12(
        &data,
        password,
        p12_keystore::Pkcs12ImportPolicy::Strict,
    ) {
        Ok(store) => store,
        Err(e) => return Err(what(&pkcs12_problem(&data, password, &e))),
    };
    let mut out = Vec::new();
    for (alias, entry) in store.entries() {
        if let p12_keystore::KeyStoreEntry::PrivateKeyChain(chain) = entry {
            let certs: Vec<CertificateDer<'static>> = chain
                .certs()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect();
            if certs.is_empty() {
                continue;
            }
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
            out.push((alias.clone(), certs, key));
        }
    }
    if out.is_empty() {
        return Err(what(
            &"no private key with its certificate in it (only certificates?): a client \
              identity needs both; export them together, e.g. `openssl pkcs12 -export -in \
              client.pem -inkey client.key -out client.p12`",
        ));
    }
    Ok(out)
}

/// Why `data` could not be read as PKCS#12 with `password`, and the fix.
fn pkcs12_problem(data: &[u8], password: &str, e: &p12_keystore::error::Error) -> String {
    use p12_keystore::error::Error as E;
    if data.trim_ascii_start().starts_with(b"-----BEGIN") {
        return "this is a PEM file, not PKCS#12 (.p12/.pfx): give PEM certificates and keys \
                as client_cert + client_key (or an identity's cert + key)"
            .to_string();
    }
    match e {
        // The MAC is keyed by the password: a mismatch is (nearly always) the wrong password.
        // Without a MAC, a wrong password decrypts to garbage: bad padding or bad DER.
        E::MacError(_) | E::UnpadError => {
            if password.is_empty() {
                "it is password-protected and no password was given: set its password \
                 (tls.client_p12_password, or `password:` of the identity)"
                    .to_string()
            } else {
                "wrong password (the file's integrity check fails with it): give the password \
                 the file was exported with (tls.client_p12_password, or `password:` of the \
                 identity)"
                    .to_string()
            }
        }
        E::UnsupportedEncryptionScheme | E::UnsupportedMacAlgorithm => format!(
            "{e}: onrush reads PBES2 (PBKDF2 with AES or 3DES, as `openssl pkcs12 -export` \
             makes) and the legacy SHA-1 schemes (RC2, 3DES); re-export the file with \
             `openssl pkcs12 -export`"
        ),
        _ => format!(
            "not a readable PKCS#12 file ({e}), or a wrong password: check the file (`openssl \
             pkcs12 -info -in FILE`) and its password"
        ),
    }
}

/// The suites of the *ring* provider named in `names` (rustls names, any case), in that order.
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

fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let bad = |e: &dyn fmt::Display| TlsConfigError::new(format!("{what} {}: {e}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate in it"));
    }
    Ok(certs)
}

/// `insecure: true`: any certificate chain is accepted; the handshake signatures are still
/// verified (so the connection is encrypted to whoever holds the certificate's key).
#[derive(Debug)]
struct AcceptAnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
