//! TLS for the control connection: the controller presents a certificate generated at start;
//! the agent accepts any certificate, because the token, bound to the session, is what
//! authenticates both sides (see [`crate::auth`]). The session still encrypts everything.

use std::sync::Arc;

use onrush_http::tls::AcceptAnyCert;
use rustls::crypto::ring as provider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ClientConfig, ServerConfig};

/// The controller's TLS configuration, with a certificate generated now.
pub fn server_config() -> Result<Arc<ServerConfig>, String> {
    let cert = rcgen::generate_simple_self_signed(vec!["onrush-controller".to_string()])
        .map_err(|e| format!("cannot generate the controller's certificate: {e}"))?;
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let config = ServerConfig::builder_with_provider(Arc::new(provider::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![der], key)
        .map_err(|e| format!("the generated certificate is refused: {e}"))?;
    Ok(Arc::new(config))
}

/// The agent's TLS configuration (TLS 1.3 only: both ends are onrush). Any certificate is
/// accepted, but the handshake's signatures are checked with it: the session is really with
/// the holder of that key, which the token proof is then bound to.
pub fn client_config() -> Arc<ClientConfig> {
    let provider = Arc::new(provider::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3 is supported")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
        .with_no_client_auth();
    Arc::new(config)
}
