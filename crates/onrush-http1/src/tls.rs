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
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::conn::connect_tcp;
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
    /// Client certificate for mTLS: a PEM certificate chain and a PEM private key.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// The server name to send (SNI) and verify the certificate against, instead of the one
    /// passed to [`connect_tls`] (the target's host).
    pub server_name: Option<String>,
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
    /// The configuration without its resumption setting; cloned per VU for `Resume`.
    base: ClientConfig,
    shared: Arc<ClientConfig>,
    full: Arc<ClientConfig>,
    server_name: Option<ServerName<'static>>,
}

/// Session entries kept per VU in [`SessionMode::Resume`]: one per server name (a VU talks to
/// one or a few hosts); rustls keeps up to 8 TLS 1.3 tickets per entry.
const PER_VU_SERVERS: usize = 4;

/// Servers remembered by the [`SessionMode::Shared`] cache.
const SHARED_SERVERS: usize = 256;

impl TlsClient {
    /// Reads the files named in `opts` and builds the configuration.
    pub fn new(opts: &TlsOptions) -> Result<TlsClient, TlsConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
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
            .map_err(|e| TlsConfigError::new(format!("TLS versions {:?}: {e}", opts.versions)))?;
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
        let mut base = match &opts.client_cert {
            Some((cert, key)) => {
                let chain = read_certs(cert, "client certificate file")?;
                let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    TlsConfigError::new(format!(
                        "client key file {}: no usable PEM private key: {e}",
                        key.display()
                    ))
                })?;
                builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                    TlsConfigError::new(format!(
                        "client certificate {} with key {}: {e}",
                        cert.display(),
                        key.display()
                    ))
                })?
            }
            None => builder.with_no_client_auth(),
        };
        base.alpn_protocols = vec![b"http/1.1".to_vec()];
        let server_name =
            match &opts.server_name {
                Some(name) => Some(ServerName::try_from(name.clone()).map_err(|_| {
                    TlsConfigError::new(format!("invalid TLS server name {name:?}"))
                })?),
                None => None,
            };
        let mut shared = base.clone();
        shared.resumption =
            Resumption::store(Arc::new(ClientSessionMemoryCache::new(SHARED_SERVERS)));
        let mut full = base.clone();
        full.resumption = Resumption::disabled();
        Ok(TlsClient {
            base,
            shared: Arc::new(shared),
            full: Arc::new(full),
            server_name,
        })
    }

    /// A session for one VU. `Resume` builds a configuration with its own small session cache
    /// (one allocation per VU, a few hundred bytes, plus the tickets it keeps); `Shared` and
    /// `Full` share the client's configurations.
    pub fn session(&self, mode: SessionMode) -> TlsSession {
        let config = match mode {
            SessionMode::Resume => {
                let mut config = self.base.clone();
                config.resumption =
                    Resumption::store(Arc::new(ClientSessionMemoryCache::new(PER_VU_SERVERS)));
                Arc::new(config)
            }
            SessionMode::Shared => self.shared.clone(),
            SessionMode::Full => self.full.clone(),
        };
        TlsSession {
            connector: TlsConnector::from(config),
            server_name: self.server_name.clone(),
            mode,
        }
    }
}

/// One VU's TLS state (its session cache, in [`SessionMode::Resume`]); cheap to clone.
#[derive(Clone)]
pub struct TlsSession {
    connector: TlsConnector,
    server_name: Option<ServerName<'static>>,
    mode: SessionMode,
}

impl TlsSession {
    /// The mode this session was made with.
    pub fn mode(&self) -> SessionMode {
        self.mode
    }
}

impl fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSession")
            .field("mode", &self.mode)
            .field("server_name", &self.server_name)
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
                 tls.client_key"
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
/// duration (TCP connect excluded). The caller wraps it in a timeout.
///
/// Errors: those of [`crate::connect`]; a handshake failure is [`crate::ErrorKind::ConnectOther`]
/// with [`Error::tls_failure`] saying why. With TLS 1.3 a server that refuses the client
/// certificate (or its absence) says so only after the client's side of the handshake is done:
/// that failure then comes from the first [`Connection::send`] instead, with the same
/// [`Error::tls_failure`] classification.
pub async fn connect_tls(
    addr: SocketAddr,
    opts: &ConnectOptions,
    session: &TlsSession,
    server_name: &str,
) -> Result<(Connection<TlsStream<TcpStream>>, HandshakeKind, Duration), Error> {
    crate::conn::refuse_throttle(opts, "connect_tls_throttled")?;
    let name = session.name_for(server_name)?;
    let tcp = connect_tcp(addr, opts).await?;
    handshake(session, name, tcp, addr).await
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
    handshake(session, name, Throttled::new(tcp, rate), addr).await
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
) -> Result<(Connection<TlsStream<S>>, HandshakeKind, Duration), Error> {
    let started = Instant::now();
    let stream = session
        .connector
        .connect(name, io)
        .await
        .map_err(|e| Error::tls_handshake(e, addr))?;
    let took = started.elapsed();
    let kind = match stream.get_ref().1.handshake_kind() {
        Some(rustls::HandshakeKind::Resumed) => HandshakeKind::Resumed,
        _ => HandshakeKind::Full,
    };
    Ok((Connection::new(stream), kind, took))
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
