//! Client identities for mTLS: where they come from ([`ClientIdentity`]) and how they are
//! loaded and checked. The files are read by onrush-pki, the reader the plan loader uses too;
//! the messages here are the runtime's wording (they name the file at fault).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use super::{TlsConfigError, TlsOptions};

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

/// The client identities of `opts` (`client_cert` first), each checked: its key parses, is of a
/// type the provider can sign with, and matches its certificate.
pub(super) fn load_identities(
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
                let key_der = onrush_pki::read_key(key, "client key file")
                    .map_err(|e| TlsConfigError::new(e.into_message()))?;
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

/// Reads and decrypts a PKCS#12 file (with onrush-pki, as the plan loader does); the errors
/// say what to do (wrong password, a PEM file given as PKCS#12, a file without a key, an
/// algorithm that can't be read).
pub fn read_pkcs12(path: &Path, password: &str) -> Result<Vec<Pkcs12Entry>, TlsConfigError> {
    let identities = onrush_pki::read_pkcs12(path, password).map_err(|e| {
        TlsConfigError::new(format!(
            "PKCS#12 file {}: {}",
            path.display(),
            pkcs12_problem(&e)
        ))
    })?;
    Ok(identities
        .into_iter()
        .map(|i| (i.alias, i.chain, i.key))
        .collect())
}

/// What is wrong with a PKCS#12 file, and the fix, in the words of a run (the plan loader
/// words its own, pointing at plan fields).
fn pkcs12_problem(e: &onrush_pki::Pkcs12Error) -> String {
    use onrush_pki::Pkcs12Error as E;
    match e {
        E::Io(e) => e.to_string(),
        E::Pem => "this is a PEM file, not PKCS#12 (.p12/.pfx): give PEM certificates and keys \
                   as client_cert + client_key (or an identity's cert + key)"
            .to_string(),
        E::PasswordMissing => "it is password-protected and no password was given: set its \
                               password (tls.client_p12_password, or `password:` of the identity)"
            .to_string(),
        E::WrongPassword => "wrong password (the file's integrity check fails with it): give the \
                             password the file was exported with (tls.client_p12_password, or \
                             `password:` of the identity)"
            .to_string(),
        E::UnsupportedAlgorithm(e) => format!(
            "{e}: onrush reads PBES2 (PBKDF2 with AES or 3DES, as `openssl pkcs12 -export` \
             makes) and the legacy SHA-1 schemes (RC2, 3DES); re-export the file with \
             `openssl pkcs12 -export`"
        ),
        E::Unreadable(e) => format!(
            "not a readable PKCS#12 file ({e}), or a wrong password: check the file (`openssl \
             pkcs12 -info -in FILE`) and its password"
        ),
        E::NoKey => "no private key with its certificate in it (only certificates?): a client \
                     identity needs both; export them together, e.g. `openssl pkcs12 -export \
                     -in client.pem -inkey client.key -out client.p12`"
            .to_string(),
    }
}

/// The PEM certificates of `path` (onrush-pki's reader, shared with the built-in server).
pub(super) fn read_certs(
    path: &Path,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    onrush_pki::read_certs(path, what).map_err(|e| TlsConfigError::new(e.into_message()))
}
