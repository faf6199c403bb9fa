//! Why a TLS handshake failed, in classes a report can count and a hint can fix.

use rustls::{AlertDescription, CertificateError, InvalidMessage};

/// Why a TLS handshake (or a connection right after it) failed; see
/// [`Error::tls_failure`](crate::Error::tls_failure).
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
    /// What the server sent is not TLS at all (its first bytes are no TLS record header): most
    /// likely a plain-HTTP server answering the ClientHello with an HTTP/1.x error.
    NotTls,
    /// The handshake did not finish by [`ConnectOptions::deadline`](crate::ConnectOptions::deadline) (the TCP connection was
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
            TlsFailure::NotTls => {
                "the server did not answer in TLS: is this port plain HTTP? use http:// (what \
                 it sent does not start like a TLS record)"
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
            // The record header itself is not TLS: an unknown content type (a plain-HTTP
            // server's "HTTP/1.1 400" starts with `H`) or a version that is no TLS version.
            E::InvalidMessage(
                InvalidMessage::InvalidContentType | InvalidMessage::UnknownProtocolVersion,
            ) => TlsFailure::NotTls,
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
