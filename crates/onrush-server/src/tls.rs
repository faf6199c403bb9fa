//! HTTPS: the server's rustls configuration (ring provider), its self-signed certificate, the
//! handshake counters, and what `/tls` tells about a connection (client-certificate subjects
//! included).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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

pub(crate) const ALPN_H2: &[u8] = b"h2";
pub(crate) const ALPN_HTTP11: &[u8] = b"http/1.1";

/// What `/tls` reports about one connection: captured once, right after its handshake (a few
/// static strings, and one allocation only when the client presented a certificate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsInfo {
    /// `TLSv1_3` or `TLSv1_2` (rustls' names).
    pub(crate) version: &'static str,
    /// The cipher suite by its IANA-style name as rustls spells it, e.g.
    /// `TLS13_AES_128_GCM_SHA256`.
    pub(crate) cipher: &'static str,
    /// `h2`, `http/1.1`, or `None` when the client offered no ALPN.
    pub(crate) alpn: Option<&'static str>,
    pub(crate) resumed: bool,
    /// The first (end-entity) client certificate's subject, RFC 4514 style (`CN=alice,O=Acme`).
    pub(crate) client_subject: Option<String>,
    /// The name `tls_clients` counts it under: the subject's most specific common name (CN),
    /// or the whole subject when it has none.
    pub(crate) client_name: Option<String>,
}

impl TlsInfo {
    pub(crate) fn of(conn: &rustls::ServerConnection) -> TlsInfo {
        let (client_subject, client_name) = match conn
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|cert| subject(cert))
        {
            Some(Some(subject)) => {
                let name = subject.common_name().unwrap_or_else(|| subject.to_string());
                (Some(subject.to_string()), Some(name))
            }
            // A certificate the verifier accepted but we cannot read: still say one was given.
            Some(None) => (Some(String::new()), Some(String::new())),
            None => (None, None),
        };
        TlsInfo {
            version: conn
                .protocol_version()
                .and_then(|v| v.as_str())
                .unwrap_or("unknown"),
            cipher: conn
                .negotiated_cipher_suite()
                .and_then(|s| s.suite().as_str())
                .unwrap_or("unknown"),
            alpn: match conn.alpn_protocol() {
                Some(ALPN_H2) => Some("h2"),
                Some(ALPN_HTTP11) => Some("http/1.1"),
                _ => None,
            },
            resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            client_subject,
            client_name,
        }
    }

    /// The `/tls` document.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "version": self.version,
            "cipher": self.cipher,
            "alpn": self.alpn,
            "resumed": self.resumed,
            "client_cert_subject": self.client_subject,
        })
    }
}

/// A certificate subject: its relative distinguished names in certificate (DER) order, each a
/// set of (attribute type, value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subject(Vec<Vec<(yasna::models::ObjectIdentifier, String)>>);

const OID_CN: &[u64] = &[2, 5, 4, 3];

/// Short names of the attribute types RFC 4514 lists (and the usual extras); other types are
/// written as dotted OIDs.
const SHORT_NAMES: &[(&[u64], &str)] = &[
    (OID_CN, "CN"),
    (&[2, 5, 4, 7], "L"),
    (&[2, 5, 4, 8], "ST"),
    (&[2, 5, 4, 10], "O"),
    (&[2, 5, 4, 11], "OU"),
    (&[2, 5, 4, 6], "C"),
    (&[2, 5, 4, 9], "STREET"),
    (&[2, 5, 4, 5], "serialNumber"),
    (&[0, 9, 2342, 19200300, 100, 1, 25], "DC"),
    (&[0, 9, 2342, 19200300, 100, 1, 1], "UID"),
    (&[1, 2, 840, 113549, 1, 9, 1], "emailAddress"),
];

impl Subject {
    /// The most specific common name: the last CN in certificate order.
    pub(crate) fn common_name(&self) -> Option<String> {
        self.0
            .iter()
            .rev()
            .flatten()
            .find(|(oid, _)| oid.components().as_slice() == OID_CN)
            .map(|(_, v)| v.clone())
    }
}

/// RFC 4514: most specific RDN first, `,` between RDNs, `+` inside a multi-valued one, special
/// characters escaped with `\`. (Values of unknown string types are written as text, not as
/// RFC 4514's `#hex`: this is for humans and tests, not for parsing back.)
impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, rdn) in self.0.iter().rev().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            for (j, (oid, value)) in rdn.iter().enumerate() {
                if j > 0 {
                    f.write_str("+")?;
                }
                let components = oid.components().as_slice();
                match SHORT_NAMES.iter().find(|(o, _)| *o == components) {
                    Some((_, name)) => f.write_str(name)?,
                    None => write!(f, "{oid}")?,
                }
                f.write_str("=")?;
                let last = value.chars().count().saturating_sub(1);
                for (k, c) in value.chars().enumerate() {
                    let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
                        || (k == 0 && matches!(c, '#' | ' '))
                        || (k == last && c == ' ');
                    if special {
                        f.write_str("\\")?;
                    }
                    write!(f, "{c}")?;
                }
            }
        }
        Ok(())
    }
}

/// The subject of a DER certificate, or `None` if it cannot be read. Walks `Certificate ->
/// tbsCertificate -> subject` (RFC 5280 4.1) and skips every other field unparsed.
pub(crate) fn subject(der: &[u8]) -> Option<Subject> {
    use yasna::Tag;
    yasna::parse_der(der, |r| {
        r.read_sequence(|r| {
            let subject = r.next().read_sequence(|r| {
                // version [0] EXPLICIT (absent for v1 certificates)
                r.read_optional(|r| r.read_tagged(Tag::context(0), |r| r.read_der()))?;
                r.next().read_der()?; // serialNumber
                r.next().read_der()?; // signature
                r.next().read_der()?; // issuer
                r.next().read_der()?; // validity
                let subject = r.next().collect_sequence_of(|r| {
                    r.collect_set_of(|r| {
                        r.read_sequence(|r| {
                            let oid = r.next().read_oid()?;
                            let value = r.next().read_tagged_der()?;
                            Ok((oid, directory_string(value.tag(), value.value())))
                        })
                    })
                })?;
                // subjectPublicKeyInfo, issuerUniqueID, subjectUniqueID, extensions
                while r.read_optional(|r| r.read_der())?.is_some() {}
                Ok(subject)
            })?;
            r.next().read_der()?; // signatureAlgorithm
            r.next().read_der()?; // signatureValue
            Ok(subject)
        })
    })
    .ok()
    .map(Subject)
}

/// An attribute value as text: UTF8String, PrintableString, IA5String, ... as UTF-8 (lossy),
/// TeletexString as Latin-1, BMPString as UTF-16, UniversalString as UTF-32.
fn directory_string(tag: yasna::Tag, bytes: &[u8]) -> String {
    match tag.tag_number {
        20 => bytes.iter().map(|&b| char::from(b)).collect(),
        30 => char::decode_utf16(
            bytes
                .chunks_exact(2)
                .map(|p| u16::from_be_bytes([p[0], p[1]])),
        )
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect(),
        28 => bytes
            .chunks_exact(4)
            .map(|q| {
                char::from_u32(u32::from_be_bytes([q[0], q[1], q[2], q[3]]))
                    .unwrap_or(char::REPLACEMENT_CHARACTER)
            })
            .collect(),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

pub(crate) const ALPN_H3: &[u8] = b"h3";

/// What a TLS server is built with: the TCP acceptor, the QUIC configuration when HTTP/3 is
/// on, and the PEM of the generated CA, if one was generated.
pub(crate) struct Built {
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
    pub(crate) quic: Option<Arc<rustls::ServerConfig>>,
    pub(crate) ca_pem: Option<String>,
}

/// Builds the TLS configurations of the server: over TCP always, and for QUIC when `h3`. Both
/// serve the same certificate and ask for the same client certificates; QUIC's is TLS 1.3
/// only (RFC 9001 §4.2), offers ALPN `h3` alone, and has tickets of its own (a ticket issued
/// over TCP is not offered to QUIC, whose resumption also carries transport parameters).
///
/// `quic_resumed` counts the QUIC handshakes that resumed a session: quinn does not tell, but
/// a TLS 1.3 resumption is a ticket this server issued coming back, which the QUIC
/// configuration's ticketer ([`CountingTicketer`]) sees as it decrypts it.
pub(crate) fn build(tls: &ServerTls, h3: bool, quic_resumed: Arc<AtomicU64>) -> io::Result<Built> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (chain, key, ca_pem) = match &tls.cert_key {
        Some((cert, key)) => {
            let chain = read_certs(cert, "certificate file")?;
            let key_der =
                onrush_pki::read_key(key, "key file").map_err(|e| invalid(e.into_message()))?;
            (chain, key_der, None)
        }
        None => {
            let (chain, key, ca) = self_signed()?;
            (chain, key, Some(ca))
        }
    };
    let verifier = match &tls.client_ca {
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_certs(path, "client CA file")? {
                roots
                    .add(cert)
                    .map_err(|e| invalid(format!("client CA file {}: {e}", path.display())))?;
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| invalid(format!("client CA file {}: {e}", path.display())))?;
            Some(verifier)
        }
        None => None,
    };
    let config = |versions: &[&'static rustls::SupportedProtocolVersion]| {
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| invalid(e.to_string()))?;
        let builder = match &verifier {
            Some(v) => builder.with_client_cert_verifier(v.clone()),
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| invalid(format!("server certificate and key: {e}")))?;
        config.ticketer =
            rustls::crypto::ring::Ticketer::new().map_err(|e| invalid(e.to_string()))?;
        Ok::<_, io::Error>(config)
    };
    let mut tcp = config(&[&rustls::version::TLS13, &rustls::version::TLS12])?;
    // Our preference first: a client offering both gets HTTP/2. A client offering no ALPN at
    // all (wrk, curl --no-alpn, older tools) gets HTTP/1.1, as before HTTP/2 was served.
    tcp.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()];
    tcp.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    let quic = if h3 {
        let mut quic = config(&[&rustls::version::TLS13])?;
        quic.alpn_protocols = vec![ALPN_H3.to_vec()];
        // quinn takes 0 (no 0-RTT) or u32::MAX (0-RTT accepted, the limit being QUIC's flow
        // control). Accepted, so that a client's 0-RTT can be tested; onrush's client sends
        // none unless told to.
        quic.max_early_data_size = u32::MAX;
        quic.ticketer = Arc::new(CountingTicketer {
            inner: rustls::crypto::ring::Ticketer::new().map_err(|e| invalid(e.to_string()))?,
            resumed: quic_resumed,
        });
        Some(Arc::new(quic))
    } else {
        None
    };
    Ok(Built {
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(tcp)),
        quic,
        ca_pem,
    })
}

/// A ticketer that counts the tickets it takes back: each one a client resumed its session
/// with (rustls decrypts the ticket of a TLS 1.3 PSK offer before accepting it; one that does
/// not decrypt, another server's or an expired key's, is a full handshake and not counted).
#[derive(Debug)]
struct CountingTicketer {
    inner: Arc<dyn rustls::server::ProducesTickets>,
    resumed: Arc<AtomicU64>,
}

impl rustls::server::ProducesTickets for CountingTicketer {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }

    fn lifetime(&self) -> u32 {
        self.inner.lifetime()
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.inner.encrypt(plain)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let plain = self.inner.decrypt(cipher);
        if plain.is_some() {
            self.resumed.fetch_add(1, Ordering::Relaxed);
        }
        plain
    }
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

/// The PEM certificates of `path`, read by onrush-pki (the reader onrush's client uses too).
fn read_certs(path: &Path, what: &str) -> io::Result<Vec<CertificateDer<'static>>> {
    onrush_pki::read_certs(path, what).map_err(|e| invalid(e.into_message()))
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{DnType, DnValue};

    fn cert_with(dn: &[(DnType, DnValue)]) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (ty, value) in dn {
            params.distinguished_name.push(ty.clone(), value.clone());
        }
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn subject_in_rfc4514_order_with_escapes_and_string_types() {
        let der = cert_with(&[
            (
                DnType::CountryName,
                DnValue::PrintableString("DE".try_into().unwrap()),
            ),
            (
                DnType::OrganizationName,
                DnValue::BmpString("Müller & Co".try_into().unwrap()),
            ),
            (
                DnType::OrganizationalUnitName,
                DnValue::UniversalString("R&D ☃".try_into().unwrap()),
            ),
            (
                DnType::LocalityName,
                DnValue::TeletexString("Koln".try_into().unwrap()),
            ),
            (
                DnType::CustomDnType(vec![2, 5, 4, 42]),
                DnValue::Utf8String("Ada".into()),
            ),
            (
                DnType::CommonName,
                DnValue::Utf8String(" #1 <svc>; a+b ".into()),
            ),
        ]);
        // Leading space and trailing space escaped, `#` only at the start (not here).
        let subject = subject(&der).unwrap();
        assert_eq!(
            subject.to_string(),
            r"CN=\ #1 \<svc\>\; a\+b\ ,2.5.4.42=Ada,L=Koln,OU=R&D ☃,O=Müller & Co,C=DE"
        );
        assert_eq!(subject.common_name().as_deref(), Some(" #1 <svc>; a+b "));
    }

    #[test]
    fn subject_without_cn_and_unreadable_der() {
        let der = cert_with(&[(DnType::OrganizationName, "Acme".into())]);
        let subject = subject(&der).unwrap();
        assert_eq!(subject.to_string(), "O=Acme");
        assert_eq!(subject.common_name(), None);
        let hash = cert_with(&[(DnType::CommonName, "#x".into())]);
        assert_eq!(super::subject(&hash).unwrap().to_string(), r"CN=\#x");
        let empty = super::subject(&cert_with(&[])).unwrap();
        assert_eq!(empty.to_string(), "");
        assert_eq!(super::subject(b"\x30\x03\x02\x01\x01"), None);
        assert_eq!(super::subject(&der[..der.len() - 1]), None);
    }
}
