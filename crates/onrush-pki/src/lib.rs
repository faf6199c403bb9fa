//! onrush's one reader of certificates and private keys from files: PEM ([`read_certs`],
//! [`read_key`]) and PKCS#12 ([`read_pkcs12`]).
//!
//! The plan loader (onrush-plan, at validation), the HTTP client (onrush-http, when a run
//! starts) and the built-in server (onrush-server) all read identities; before this crate each
//! had its own reader, and they could disagree on what a file holds. The readers here decide
//! what is in a file and classify what is wrong with it; the callers word the message for
//! their context (a plan error points at a YAML line, a runtime error names the file), which
//! is why [`Pkcs12Error`] is an enum rather than a sentence.
//!
//! Small on purpose (see Cargo.toml): onrush-plan depends on it and must not pull in the HTTP
//! stack. The types are rustls-pki-types', which rustls re-exports as `rustls::pki_types`.

use std::fmt;
use std::io;
use std::path::Path;

use rustls_pki_types::pem::PemObject;
pub use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A PEM file that can't be used; the message names the file and says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemError {
    msg: String,
}

impl PemError {
    /// The message, e.g. `CA file ca.pem: no PEM certificate in it`.
    pub fn message(&self) -> &str {
        &self.msg
    }

    /// The message, owned, for the caller's own error type.
    pub fn into_message(self) -> String {
        self.msg
    }
}

impl fmt::Display for PemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for PemError {}

/// The PEM certificates of `path`, in file order (a chain leaf first, or a CA bundle). `what`
/// names the file's role for the message: `"{what} {path}: {problem}"`, e.g. `CA file
/// /etc/ca.pem: no PEM certificate in it`. A file without a certificate is an error.
pub fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let bad = |e: &dyn fmt::Display| PemError {
        msg: format!("{what} {}: {e}", path.display()),
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate in it"));
    }
    Ok(certs)
}

/// The first PEM private key of `path` (PKCS#8, PKCS#1 or SEC1). `what` names the file's role
/// for the message: `"{what} {path}: no usable PEM private key: {problem}"`.
pub fn read_key(path: &Path, what: &str) -> Result<PrivateKeyDer<'static>, PemError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| PemError {
        msg: format!("{what} {}: no usable PEM private key: {e}", path.display()),
    })
}

/// One client identity of a PKCS#12 file: a private key and its certificate chain.
/// (Not `Clone`: private keys are not copied around.)
#[derive(Debug)]
pub struct Pkcs12Identity {
    /// The entry's alias (friendly name) in the file.
    pub alias: String,
    /// The certificate chain, leaf first; never empty.
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key (PKCS#8).
    pub key: PrivateKeyDer<'static>,
}

/// Why a PKCS#12 file can't serve as client identities.
#[derive(Debug)]
pub enum Pkcs12Error {
    /// The file could not be read.
    Io(io::Error),
    /// The file is PEM (it starts with `-----BEGIN`), not PKCS#12.
    Pem,
    /// The file is password-protected and the password given is empty.
    PasswordMissing,
    /// The file's integrity check fails with the password given (or, without a MAC, the
    /// decryption does): nearly always the wrong password.
    WrongPassword,
    /// The file uses an encryption or MAC algorithm that can't be read; the reader's words.
    UnsupportedAlgorithm(String),
    /// Not a readable PKCS#12 file (or one opened with a wrong password and no MAC to tell);
    /// the reader's words.
    Unreadable(String),
    /// The file holds no private key with its certificate (only certificates?).
    NoKey,
}

impl Pkcs12Error {
    /// Whether the password is at fault (so an error can point at it rather than the file).
    pub fn is_about_password(&self) -> bool {
        matches!(
            self,
            Pkcs12Error::PasswordMissing | Pkcs12Error::WrongPassword
        )
    }
}

/// A short description; callers usually word their own message from the variant.
impl fmt::Display for Pkcs12Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pkcs12Error::Io(e) => write!(f, "cannot be read: {e}"),
            Pkcs12Error::Pem => f.write_str("is a PEM file, not PKCS#12 (.p12/.pfx)"),
            Pkcs12Error::PasswordMissing => {
                f.write_str("is password-protected and no password is given")
            }
            Pkcs12Error::WrongPassword => {
                f.write_str("wrong password (the file's integrity check fails with it)")
            }
            Pkcs12Error::UnsupportedAlgorithm(e) => {
                write!(f, "uses an algorithm onrush cannot read ({e})")
            }
            Pkcs12Error::Unreadable(e) => write!(f, "is not a readable PKCS#12 file ({e})"),
            Pkcs12Error::NoKey => {
                f.write_str("holds no private key with its certificate (only certificates?)")
            }
        }
    }
}

impl std::error::Error for Pkcs12Error {}

/// Reads and decrypts the PKCS#12 file `path` with `password` (empty when it has none): each
/// private key with its certificate chain, in alias order. A file without any is
/// [`Pkcs12Error::NoKey`].
pub fn read_pkcs12(path: &Path, password: &str) -> Result<Vec<Pkcs12Identity>, Pkcs12Error> {
    let data = std::fs::read(path).map_err(Pkcs12Error::Io)?;
    parse_pkcs12(&data, password)
}

/// [`read_pkcs12`] over the file's bytes.
pub fn parse_pkcs12(data: &[u8], password: &str) -> Result<Vec<Pkcs12Identity>, Pkcs12Error> {
    use p12_keystore::error::Error as E;
    // Checked first: a PEM file fails the DER parse with a message that would not say so.
    if data.trim_ascii_start().starts_with(b"-----BEGIN") {
        return Err(Pkcs12Error::Pem);
    }
    let store = p12_keystore::KeyStore::from_pkcs12(
        data,
        password,
        p12_keystore::Pkcs12ImportPolicy::Strict,
    )
    .map_err(|e| match e {
        // The MAC is keyed by the password: a mismatch is (nearly always) the wrong password.
        // Without a MAC, a wrong password decrypts to garbage: bad padding.
        E::MacError(_) | E::UnpadError if password.is_empty() => Pkcs12Error::PasswordMissing,
        E::MacError(_) | E::UnpadError => Pkcs12Error::WrongPassword,
        E::UnsupportedEncryptionScheme | E::UnsupportedMacAlgorithm => {
            Pkcs12Error::UnsupportedAlgorithm(e.to_string())
        }
        e => Pkcs12Error::Unreadable(e.to_string()),
    })?;
    let mut out = Vec::new();
    for (alias, entry) in store.entries() {
        if let p12_keystore::KeyStoreEntry::PrivateKeyChain(chain) = entry {
            let certs: Vec<CertificateDer<'static>> = chain
                .certs()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect();
            // A key without its certificate can't authenticate: not an identity.
            if certs.is_empty() {
                continue;
            }
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
            out.push(Pkcs12Identity {
                alias: alias.clone(),
                chain: certs,
                key,
            });
        }
    }
    if out.is_empty() {
        return Err(Pkcs12Error::NoKey);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_given_as_pkcs12() {
        let e = parse_pkcs12(b"\n  -----BEGIN CERTIFICATE-----\n", "").unwrap_err();
        assert!(matches!(e, Pkcs12Error::Pem), "{e:?}");
        assert!(!e.is_about_password());
    }

    #[test]
    fn garbage_is_unreadable() {
        let e = parse_pkcs12(b"\x30\x03\x02\x01\x03", "pw").unwrap_err();
        assert!(matches!(e, Pkcs12Error::Unreadable(_)), "{e:?}");
    }

    #[test]
    fn missing_files_name_themselves() {
        let path = Path::new("/nonexistent/onrush-pki/ca.pem");
        let e = read_certs(path, "CA file").unwrap_err();
        assert!(
            e.message()
                .starts_with("CA file /nonexistent/onrush-pki/ca.pem: "),
            "{e}"
        );
        let e = read_key(path, "key file").unwrap_err();
        assert!(
            e.message().starts_with(
                "key file /nonexistent/onrush-pki/ca.pem: no usable PEM private key: "
            ),
            "{e}"
        );
        let e = read_pkcs12(path, "").unwrap_err();
        assert!(matches!(e, Pkcs12Error::Io(_)), "{e:?}");
    }

    #[test]
    fn a_pem_file_without_certificates() {
        let dir = std::env::temp_dir().join(format!("onrush-pki-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("empty.pem");
        std::fs::write(&path, "just text\n").unwrap();
        let e = read_certs(&path, "CA file").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("CA file {}: no PEM certificate in it", path.display())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
