//! TLS for the control connection: the controller presents a certificate generated at start;
//! the agent accepts any certificate, because the token, bound to the session, is what
//! authenticates both sides (see [`crate::auth`]). The session still encrypts everything.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring as provider, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};

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

/// The agent's TLS configuration (TLS 1.3 only: both ends are onrush).
pub fn client_config() -> Arc<ClientConfig> {
    let provider = Arc::new(provider::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3 is supported")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(TokenAuthenticated(provider)))
        .with_no_client_auth();
    Arc::new(config)
}

/// Accepts the controller's certificate whatever it is, but checks the handshake's
/// signatures with it (the session must really be with the holder of that key, which the
/// token proof is then bound to).
#[derive(Debug)]
struct TokenAuthenticated(Arc<CryptoProvider>);

impl ServerCertVerifier for TokenAuthenticated {
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

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
