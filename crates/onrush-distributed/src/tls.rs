//! TLS for the control connection.
//!
//! By default the controller presents a certificate generated at start and the agent accepts
//! any certificate: the token, bound to the session, is what authenticates both sides (see
//! [`crate::auth`]), and the session still encrypts everything. An operator with a PKI of
//! their own can add to that (the token stays required either way):
//! - the controller presents its own certificate ([`ControllerTls::cert`]), and agents given
//!   the CA ([`AgentTls::ca`]) check it, and the name they dialed, before sending anything;
//! - mutual TLS: the controller requires every agent to present a certificate signed by
//!   [`ControllerTls::client_ca`], and refuses the others at the handshake.
//!
//! The PEM files are read by onrush-pki, the reader the HTTP client and the built-in server
//! use; the messages here name the flag and the file, and say what to do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use onrush_http::tls::AcceptAnyCert;
use rustls::crypto::ring as provider;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// The name an agent asks for when it does not verify the controller's certificate (the
/// generated certificate holds it).
const GENERATED_NAME: &str = "onrush-controller";

/// The controller's TLS settings (`onrush run --agents N --tls-*`); the default is a
/// certificate generated at start and no client certificates.
#[derive(Clone, Debug, Default)]
pub struct ControllerTls {
    /// `--tls-cert`: its PEM certificate chain, leaf first (with [`Self::key`]).
    pub cert: Option<PathBuf>,
    /// `--tls-key`: the certificate's PEM private key.
    pub key: Option<PathBuf>,
    /// `--tls-client-ca`: the PEM CA every agent's certificate must be signed by (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

/// The agent's TLS settings (`onrush agent --tls-*`); the default accepts any controller
/// certificate and presents none.
#[derive(Clone, Debug, Default)]
pub struct AgentTls {
    /// `--tls-ca`: the PEM CA the controller's certificate must be signed by.
    pub ca: Option<PathBuf>,
    /// `--tls-server-name`: the name the controller's certificate must be valid for
    /// [default: the HOST of `--connect`].
    pub server_name: Option<String>,
    /// `--tls-cert`: this agent's PEM client certificate chain (with [`Self::key`]).
    pub cert: Option<PathBuf>,
    /// `--tls-key`: its PEM private key.
    pub key: Option<PathBuf>,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(provider::default_provider())
}

/// The controller's TLS configuration (TLS 1.3 only: both ends are onrush).
pub fn server_config(tls: &ControllerTls) -> Result<Arc<ServerConfig>, String> {
    let provider = provider();
    let certified = match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => load_identity(cert, key, &provider)?,
        (None, None) => generated(&provider)?,
        (Some(_), None) => return Err("--tls-cert needs --tls-key (its private key)".into()),
        (None, Some(_)) => return Err("--tls-key needs --tls-cert (its certificate)".into()),
    };
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?;
    let builder = match &tls.client_ca {
        Some(ca) => {
            let roots = load_roots(ca, "--tls-client-ca")?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("--tls-client-ca {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let resolver = rustls::sign::SingleCertAndKey::from(certified);
    Ok(Arc::new(builder.with_cert_resolver(Arc::new(resolver))))
}

/// A certificate for this run only, for the name agents ask for by default.
fn generated(provider: &Arc<CryptoProvider>) -> Result<CertifiedKey, String> {
    let cert = rcgen::generate_simple_self_signed(vec![GENERATED_NAME.to_string()])
        .map_err(|e| format!("cannot generate the controller's certificate: {e}"))?;
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    CertifiedKey::from_der(vec![der], key, provider)
        .map_err(|e| format!("the generated certificate is refused: {e}"))
}

/// The agent's TLS configuration (TLS 1.3 only). Without a CA any certificate is accepted,
/// but the handshake's signatures are checked with it: the session is really with the holder
/// of that key, which the token proof is then bound to.
pub fn client_config(tls: &AgentTls) -> Result<Arc<ClientConfig>, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?;
    let builder = match &tls.ca {
        Some(ca) => builder.with_root_certificates(load_roots(ca, "--tls-ca")?),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider.clone()))),
    };
    let config = match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            let certified = load_identity(cert, key, &provider)?;
            builder.with_client_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(
                certified,
            )))
        }
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) => return Err("--tls-cert needs --tls-key (its private key)".into()),
        (None, Some(_)) => return Err("--tls-key needs --tls-cert (its certificate)".into()),
    };
    Ok(Arc::new(config))
}

/// The name the agent asks the controller for, and checks its certificate against when it
/// has a CA: `--tls-server-name`, else the HOST of `connect` (`HOST:PORT`, `[V6]:PORT`).
pub fn server_name(tls: &AgentTls, connect: &str) -> Result<ServerName<'static>, String> {
    if tls.ca.is_none() && tls.server_name.is_none() {
        return Ok(ServerName::try_from(GENERATED_NAME).expect("a valid name"));
    }
    let (name, flag) = match &tls.server_name {
        Some(n) => (n.as_str(), "--tls-server-name"),
        None => (host_of(connect), "--connect"),
    };
    ServerName::try_from(name.to_string()).map_err(|e| {
        format!(
            "{flag} {name:?}: not a DNS name or IP address the controller's certificate can be \
             checked against ({e}); give --tls-server-name NAME"
        )
    })
}

/// `HOST` of `HOST:PORT`, without the brackets of an IPv6 address.
fn host_of(connect: &str) -> &str {
    let host = connect.rsplit_once(':').map_or(connect, |(h, _)| h);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// The CA certificates of `path` as trust anchors; `flag` names the option in messages.
fn load_roots(path: &Path, flag: &str) -> Result<RootCertStore, String> {
    let certs = onrush_pki::read_certs(path, flag).map_err(|e| pem_problem(e.into_message()))?;
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| {
            format!(
                "{flag} {}: a certificate in it cannot serve as a CA ({e}); give the PEM \
                 certificate of the CA that signed the other side's certificate",
                path.display()
            )
        })?;
    }
    Ok(roots)
}

/// A certificate chain and its key, checked: the key parses, matches the certificate, and
/// the certificate is within its validity period now.
fn load_identity(
    cert: &Path,
    key: &Path,
    provider: &Arc<CryptoProvider>,
) -> Result<CertifiedKey, String> {
    let chain =
        onrush_pki::read_certs(cert, "--tls-cert").map_err(|e| pem_problem(e.into_message()))?;
    let key_der = onrush_pki::read_key(key, "--tls-key").map_err(|e| {
        format!(
            "{} (a PEM private key: -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC \
             PRIVATE KEY)",
            e.into_message()
        )
    })?;
    check_validity(&chain[0], cert)?;
    CertifiedKey::from_der(chain, key_der, provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => format!(
            "--tls-key {} is not the private key of the certificate in --tls-cert {}: give \
             the key the certificate was issued for",
            key.display(),
            cert.display()
        ),
        e => format!(
            "--tls-cert {} with --tls-key {}: {e}",
            cert.display(),
            key.display()
        ),
    })
}

/// onrush-pki's message, with what a PEM file looks like when it says the file has none.
fn pem_problem(msg: String) -> String {
    if msg.contains("no PEM certificate") {
        format!("{msg} (a PEM file, -----BEGIN CERTIFICATE-----; convert DER with `openssl x509 -inform der -in FILE -out FILE.pem`)")
    } else {
        msg
    }
}

/// An expired (or not yet valid) certificate of one's own is refused at start rather than
/// at every handshake, where the other side would see only "expired".
fn check_validity(cert: &CertificateDer<'_>, path: &Path) -> Result<(), String> {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert) else {
        // rustls reports an unparsable certificate itself, with its own words.
        return Ok(());
    };
    let validity = parsed.validity();
    let now = x509_parser::time::ASN1Time::now();
    if now > validity.not_after {
        return Err(format!(
            "--tls-cert {}: the certificate expired on {}: issue a new one (or check this \
             machine's clock)",
            path.display(),
            validity.not_after
        ));
    }
    if now < validity.not_before {
        return Err(format!(
            "--tls-cert {}: the certificate is not valid before {}: check this machine's clock",
            path.display(),
            validity.not_before
        ));
    }
    Ok(())
}

/// The rustls error inside an I/O error, as tokio-rustls reports them.
pub fn rustls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

/// Why the agent's TLS with its controller failed, and what to do, for the agent's message.
pub fn agent_side(e: &rustls::Error, tls: &AgentTls, name: &ServerName<'_>) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    let ca = tls
        .ca
        .as_deref()
        .map_or_else(|| "--tls-ca".to_string(), |p| p.display().to_string());
    let mine = tls
        .cert
        .as_deref()
        .map_or_else(String::new, |p| format!(" ({})", p.display()));
    match e {
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => format!(
            "certificate verification failed: the controller's certificate is not signed by \
             the CA in --tls-ca {ca}: give the CA that signed the controller's --tls-cert"
        ),
        E::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
        ) => "certificate verification failed: the controller's certificate has expired or \
              is not yet valid: renew the controller's --tls-cert, or check both clocks"
            .to_string(),
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            let presented = match e {
                E::InvalidCertificate(C::NotValidForNameContext { presented, .. }) => {
                    let names: Vec<String> = presented.iter().map(|n| plain_name(n)).collect();
                    format!(" (it is valid for {})", names.join(", "))
                }
                _ => String::new(),
            };
            format!(
                "certificate verification failed: the controller's certificate is not valid \
                 for the name {} this agent dialed{presented}: give --tls-server-name with a \
                 name the certificate holds, or issue it for that name",
                name.to_str()
            )
        }
        E::InvalidCertificate(c) => format!(
            "certificate verification failed: the controller's certificate is refused ({c:?})"
        ),
        E::AlertReceived(A::CertificateRequired) => "the controller requires a client \
             certificate (it runs with --tls-client-ca): give this agent --tls-cert and \
             --tls-key, signed by that CA"
            .to_string(),
        E::AlertReceived(
            A::BadCertificate
            | A::UnknownCA
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnsupportedCertificate
            | A::AccessDenied,
        ) => format!(
            "the controller refused this agent's certificate{mine}: it must be signed by the \
             CA of the controller's --tls-client-ca, be within its validity period and be \
             meant for client authentication"
        ),
        e => format!("TLS failed: {e}"),
    }
}

/// `DnsName("a.example")` / `IpAddress(10.0.0.1)` (how rustls lists a certificate's names) as
/// `a.example` / `10.0.0.1`.
fn plain_name(n: &str) -> String {
    let inner = n
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or(n);
    inner.trim_matches('"').to_string()
}

/// Why an agent's TLS handshake failed, for the controller's message.
pub fn controller_side(e: &rustls::Error, tls: &ControllerTls) -> String {
    use rustls::{CertificateError as C, Error as E};
    let ca = tls
        .client_ca
        .as_deref()
        .map_or_else(String::new, |p| p.display().to_string());
    match e {
        E::NoCertificatesPresented => format!(
            "it presented no client certificate, and --tls-client-ca {ca} requires one: give \
             the agent --tls-cert and --tls-key, signed by that CA"
        ),
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            format!("its client certificate is not signed by the CA in --tls-client-ca {ca}")
        }
        E::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
        ) => "its client certificate has expired or is not yet valid".to_string(),
        E::InvalidCertificate(c) => format!("its client certificate is refused ({c:?})"),
        E::AlertReceived(a) => format!(
            "the agent ended the handshake ({a:?}): it refused this controller's certificate, \
             see the agent's message (its --tls-ca must be the CA that signed --tls-cert, and the \
             certificate must hold the name it dialed)"
        ),
        e => e.to_string(),
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
