//! `http.tls`: how `https://` connections are set up: session reuse, the CAs trusted, client
//! identities (mutual TLS), and the cipher suites, key-exchange groups and versions offered.

use std::path::{Path, PathBuf};

/// `http.tls`: TLS settings for `https://` targets. A scenario's `tls:` keys override the
/// plan-level ones key by key. Default: `session: resume`, certificates verified against the
/// system roots, TLS 1.2 and 1.3, the target's host as server name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsSettings {
    /// `session`: how TLS sessions are reused across new connections.
    pub session: TlsSessionMode,
    /// `insecure: true`: accept any server certificate (test systems only).
    pub insecure: bool,
    /// `ca_file`: a PEM file of CAs to trust, resolved against the plan's directory (checked to
    /// exist when the plan loads).
    pub ca_file: Option<PathBuf>,
    /// The client identities for mutual TLS, from one of `client_cert` + `client_key`,
    /// `client_p12` (+ `client_p12_password`), `identities` or `identities_dir` (+
    /// `identities_password`); files resolved against the plan's directory and checked to
    /// exist, PKCS#12 files opened with their password. VU k (from 1) presents identity
    /// (k - 1) mod n, where a PKCS#12 file holding several keys counts as that many identities.
    /// Empty (default): no client certificate. A scenario that gives any of these keys
    /// replaces the plan-level identities as a whole.
    pub identities: Vec<ClientIdentity>,
    /// `ciphers`: the cipher suites offered, by rustls name ([`TLS_CIPHER_SUITES`]), in the
    /// order written, without duplicates; empty (default): all of them.
    pub ciphers: Vec<String>,
    /// `kx_groups`: the key-exchange groups offered, by rustls name ([`TLS_KX_GROUPS`]), in
    /// the order written (the first one's key share goes in the ClientHello), without
    /// duplicates; empty (default): all of them, X25519 first.
    pub kx_groups: Vec<String>,
    /// `versions`: the TLS versions offered, in ascending order without duplicates; empty
    /// (default): both 1.2 and 1.3.
    pub versions: Vec<TlsVersionSetting>,
    /// `server_name`: the SNI name and the name the certificate is checked against; `None`
    /// (default): the target's host.
    pub server_name: Option<String>,
}

/// One client identity of `http.tls` (mutual TLS): where its certificate chain and key are.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientIdentity {
    /// A PEM certificate chain and its PEM private key (`client_cert` + `client_key`, an
    /// `identities` entry `{ cert, key }`, or a `NAME.pem`/`NAME.crt` + `NAME.key` pair of
    /// `identities_dir`).
    Pem { cert: PathBuf, key: PathBuf },
    /// A PKCS#12 file and its password (`client_p12`, an entry `{ p12, password }`, or a
    /// `*.p12`/`*.pfx` of `identities_dir`); `keys` is how many private keys (identities) it
    /// holds, as found when the plan loaded.
    Pkcs12 {
        file: PathBuf,
        password: String,
        keys: usize,
    },
}

impl ClientIdentity {
    /// The certificate (PEM) or PKCS#12 file.
    pub fn file(&self) -> &Path {
        match self {
            ClientIdentity::Pem { cert, .. } => cert,
            ClientIdentity::Pkcs12 { file, .. } => file,
        }
    }
}

/// Never prints the password.
impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientIdentity::Pem { cert, key } => f
                .debug_struct("Pem")
                .field("cert", cert)
                .field("key", key)
                .finish(),
            ClientIdentity::Pkcs12 {
                file,
                password,
                keys,
            } => f
                .debug_struct("Pkcs12")
                .field("file", file)
                .field("password", &if password.is_empty() { "" } else { "***" })
                .field("keys", keys)
                .finish(),
        }
    }
}

/// The key-exchange groups `http.tls.kx_groups` accepts: (rustls name, other names). The
/// rustls names are those of rustls' *ring* provider, which onrush offers (a test of the
/// `onrush` crate checks the two lists agree); a plan may write any name, in any case.
pub const TLS_KX_GROUPS: [(&str, &[&str]); 3] = [
    ("X25519", &["x25519"]),
    ("secp256r1", &["P-256", "P256", "prime256v1"]),
    ("secp384r1", &["P-384", "P384"]),
];

/// The cipher suites `http.tls.ciphers` accepts: (rustls name, IANA name, OpenSSL name, TLS
/// version). The rustls names are those of rustls' *ring* provider, which onrush offers (a
/// test of the `onrush` crate checks the two lists agree); a plan may write any of the three
/// names, in any case.
pub const TLS_CIPHER_SUITES: [(&str, &str, &str, TlsVersionSetting); 9] = [
    (
        "TLS13_AES_256_GCM_SHA384",
        "TLS_AES_256_GCM_SHA384",
        "TLS_AES_256_GCM_SHA384",
        TlsVersionSetting::V1_3,
    ),
    (
        "TLS13_AES_128_GCM_SHA256",
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_128_GCM_SHA256",
        TlsVersionSetting::V1_3,
    ),
    (
        "TLS13_CHACHA20_POLY1305_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
        TlsVersionSetting::V1_3,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        TlsVersionSetting::V1_2,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305",
        TlsVersionSetting::V1_2,
    ),
];

/// `http.tls.session`: what a new TLS connection reuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsSessionMode {
    /// `resume` (default): each VU keeps its own session cache, so a VU's first connection is a
    /// full handshake and its later ones resume (a returning user).
    #[default]
    Resume,
    /// `shared`: one session cache for all VUs: almost every connection resumes (cheapest for the
    /// load machine).
    Shared,
    /// `full`: no session reuse: every new connection is a full handshake (a brand-new user).
    Full,
}

impl TlsSessionMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            TlsSessionMode::Resume => "resume",
            TlsSessionMode::Shared => "shared",
            TlsSessionMode::Full => "full",
        }
    }
}

/// `http.tls.versions`: one TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TlsVersionSetting {
    /// `"1.2"`
    V1_2,
    /// `"1.3"`
    V1_3,
}

impl TlsVersionSetting {
    pub fn as_str(&self) -> &'static str {
        match self {
            TlsVersionSetting::V1_2 => "1.2",
            TlsVersionSetting::V1_3 => "1.3",
        }
    }
}
