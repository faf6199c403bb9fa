//! HTTPS: the server's rustls configuration (ring provider), its self-signed certificate, and
//! the handshake counters.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerSessionMemoryCache, WebPkiClientVerifier};

/// TLS settings for [`crate::start_tls`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerTls {
    /// A PEM certificate chain and its PEM private key. `None`: a CA and a certificate for
    /// `localhost`, `127.0.0.1` and `::1` signed by it are generated at start (see
    /// [`crate::ServerHandle::self_signed_ca_pem`] to trust it).
    pub cert_key: Option<(PathBuf, PathBuf)>,
    /// Require a client certificate signed by a CA of this PEM file (mTLS).
    pub client_ca: Option<PathBuf>,
}

/// TLS handshakes the server has completed or failed since start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TlsStats {
    /// Full handshakes.
    pub full: u64,
    /// Resumed handshakes (session ticket or session ID).
    pub resumed: u64,
    /// Handshakes that failed (the client hung up, refused our certificate, had no or a wrong
    /// client certificate, ...).
    pub failed: u64,
}

/// Session IDs remembered for TLS 1.2 resumption; TLS 1.3 (and 1.2 clients that ask) use
/// stateless tickets.
const SESSION_CACHE: usize = 64 * 1024;

/// Builds the acceptor; returns it and the PEM of the generated CA, if one was generated.
pub(crate) fn acceptor(tls: &ServerTls) -> io::Result<(tokio_rustls::TlsAcceptor, Option<String>)> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (chain, key, ca_pem) = match &tls.cert_key {
        Some((cert, key)) => {
            let chain = read_certs(cert, "certificate file")?;
            let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                invalid(format!(
                    "key file {}: no usable PEM private key: {e}",
                    key.display()
                ))
            })?;
            (chain, key_der, None)
        }
        None => {
            let (chain, key, ca) = self_signed()?;
            (chain, key, Some(ca))
        }
    };
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| invalid(e.to_string()))?;
    let builder = match &tls.client_ca {
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_certs(path, "client CA file")? {
                roots
                    .add(cert)
                    .map_err(|e| invalid(format!("client CA file {}: {e}", path.display())))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| invalid(format!("client CA file {}: {e}", path.display())))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| invalid(format!("server certificate and key: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(|e| invalid(e.to_string()))?;
    Ok((tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca_pem))
}

/// A throwaway CA and a server certificate signed by it, for 127.0.0.1 / localhost / ::1.
fn self_signed() -> io::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, String)> {
    let err = |e: rcgen::Error| invalid(format!("generating the self-signed certificate: {e}"));
    let ca_key = rcgen::KeyPair::generate().map_err(err)?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "onrush built-in server CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key).map_err(err)?;

    let key = rcgen::KeyPair::generate().map_err(err)?;
    let mut params = rcgen::CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])
    .map_err(err)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "onrush built-in server");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &ca, &ca_key).map_err(err)?;
    let key_der =
        PrivateKeyDer::try_from(key.serialize_der()).map_err(|e| invalid(e.to_string()))?;
    Ok((
        vec![cert.der().clone(), ca.der().clone()],
        key_der,
        ca.pem(),
    ))
}

fn read_certs(path: &Path, what: &str) -> io::Result<Vec<CertificateDer<'static>>> {
    let bad = |e: &dyn std::fmt::Display| invalid(format!("{what} {}: {e}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate in it"));
    }
    Ok(certs)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}
