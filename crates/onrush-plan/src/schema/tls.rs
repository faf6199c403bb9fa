//! `http.tls`: session reuse, trust, client identities (mutual TLS), and the cipher suites,
//! key-exchange groups and versions offered.

use serde_json::{json, Map, Value};

use super::values::TEMPLATE;

/// `tls`, `tls_identity`, `tls_cipher`, `tls_kx_group` and `tls_version`.
pub(super) fn definitions() -> Map<String, Value> {
    let cipher_names: Vec<&str> = crate::TLS_CIPHER_SUITES.iter().map(|s| s.0).collect();
    let mut defs = Map::new();
    defs.insert("tls".into(), json!({
        "type": "object",
        "description": "TLS for https:// targets (a scenario's `tls` keys override the plan-level ones key by key)",
        "additionalProperties": false,
        "properties": {
            "session": {
                "enum": ["resume", "shared", "full"],
                "description": "TLS session reuse: resume (default: a session cache per VU; a returning user), shared (one cache for all VUs; cheapest for the load machine), full (a full handshake for every new connection; a brand-new user)"
            },
            "insecure": {
                "anyOf": [{ "type": "boolean" }, { "type": "string", "pattern": TEMPLATE }],
                "description": "true: accept any server certificate (test systems only). Default false"
            },
            "ca_file": { "type": "string", "description": "PEM file of CA certificates to trust (relative to the plan's directory; must exist)", "examples": ["ca.pem"] },
            "client_cert": { "type": "string", "description": "Mutual TLS: PEM certificate chain (relative to the plan's directory; needs `client_key`)", "examples": ["client.pem"] },
            "client_key": { "type": "string", "description": "Mutual TLS: PEM private key of `client_cert` (relative to the plan's directory; needs `client_cert`)", "examples": ["client.key"] },
            "client_p12": { "type": "string", "description": "Mutual TLS: a PKCS#12 (.p12/.pfx) file with the client certificate chain and key (relative to the plan's directory; opened when the plan loads). Instead of `client_cert` + `client_key`", "examples": ["client.p12"] },
            "client_p12_password": { "type": ["string", "number"], "description": "Password of `client_p12` (default empty); `${NAME}` reads it from the environment", "examples": ["${P12_PASSWORD}"] },
            "identities": {
                "description": "Several client identities spread over VUs: VU k (from 1) presents identity (k - 1) mod n (a PKCS#12 file with several keys counts as that many). Instead of `client_cert`/`client_p12`/`identities_dir`",
                "anyOf": [
                    { "$ref": "#/definitions/tls_identity" },
                    { "type": "array", "minItems": 1, "items": { "$ref": "#/definitions/tls_identity" } }
                ]
            },
            "identities_dir": { "type": "string", "description": "A folder of client identities, spread over VUs in file-name order: every NAME.pem or NAME.crt with its NAME.key, and every .p12/.pfx file (opened with `identities_password`)", "examples": ["certs"] },
            "identities_password": { "type": ["string", "number"], "description": "Password of the .p12/.pfx files of `identities_dir`", "examples": ["${P12_PASSWORD}"] },
            "ciphers": {
                "description": "The cipher suites offered, in order (default all): rustls, IANA or OpenSSL names, any case",
                "anyOf": [
                    { "$ref": "#/definitions/tls_cipher" },
                    { "type": "array", "minItems": 1, "items": { "$ref": "#/definitions/tls_cipher" } }
                ],
                "examples": [["TLS13_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]]
            },
            "kx_groups": {
                "description": "The key-exchange groups offered, in order (default all, X25519 first): X25519, secp256r1 (P-256), secp384r1 (P-384)",
                "anyOf": [
                    { "$ref": "#/definitions/tls_kx_group" },
                    { "type": "array", "minItems": 1, "items": { "$ref": "#/definitions/tls_kx_group" } }
                ],
                "examples": [["secp256r1"], ["X25519", "secp256r1"]]
            },
            "versions": {
                "description": "TLS versions offered (default both 1.2 and 1.3)",
                "anyOf": [
                    { "$ref": "#/definitions/tls_version" },
                    { "type": "array", "items": { "$ref": "#/definitions/tls_version" } }
                ],
                "examples": [["1.2", "1.3"], "1.3"]
            },
            "server_name": { "type": "string", "description": "SNI and certificate name (default: the target's host)", "examples": ["api.example.com"] }
        },
        "dependencies": {
            "client_cert": ["client_key"],
            "client_key": ["client_cert"],
            "client_p12_password": ["client_p12"],
            "identities_password": ["identities_dir"]
        }
    }));
    defs.insert("tls_identity".into(), json!({
        "type": "object",
        "description": "One client identity: `cert` + `key` (PEM) or `p12` (+ `password`)",
        "additionalProperties": false,
        "properties": {
            "cert": { "type": "string", "description": "PEM certificate chain (relative to the plan's directory)", "examples": ["alice.pem"] },
            "key": { "type": "string", "description": "PEM private key of `cert`", "examples": ["alice.key"] },
            "p12": { "type": "string", "description": "PKCS#12 (.p12/.pfx) file", "examples": ["bob.p12"] },
            "password": { "type": ["string", "number"], "description": "Password of `p12`", "examples": ["${BOB_P12_PASSWORD}"] }
        },
        "oneOf": [
            { "required": ["cert", "key"] },
            { "required": ["p12"] }
        ]
    }));
    defs.insert("tls_cipher".into(), json!({
        "description": "A cipher suite: rustls name (as listed), IANA or OpenSSL name, any case",
        "type": "string",
        "examples": cipher_names
    }));
    defs.insert("tls_kx_group".into(), json!({
        "description": "A key-exchange group: rustls name (as listed) or P-256, P-384, prime256v1, any case",
        "type": "string",
        "examples": ["X25519", "secp256r1", "secp384r1"]
    }));
    defs.insert(
        "tls_version".into(),
        json!({
            "description": "A TLS version: \"1.2\" or \"1.3\"",
            "anyOf": [
                { "type": "string", "enum": ["1.2", "1.3"] },
                { "type": "number", "enum": [1.2, 1.3] }
            ]
        }),
    );
    defs
}
