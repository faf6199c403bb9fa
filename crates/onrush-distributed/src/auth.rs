//! Token authentication, both ways, bound to the TLS session.
//!
//! The controller's certificate is generated at each start, so an agent cannot check it
//! against a CA; what authenticates each side to the other is the token. Neither side sends
//! it: each proves it knows it with an HMAC-SHA256 over both sides' nonces and a value
//! exported from the TLS session (RFC 5705 keying material). Someone in the middle
//! terminates two TLS sessions with two different exported values, so a proof made for one
//! is worthless on the other: the agent only accepts a controller that knows the token, and
//! the controller only an agent that does.

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The label of the exported keying material both proofs are bound to.
pub const EXPORTER_LABEL: &[u8] = b"EXPORTER-onrush-distributed";

/// `n` random bytes, hex.
pub(crate) fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system's random source works");
    hex(&bytes)
}

/// A fresh nonce.
pub fn nonce() -> String {
    random_hex(16)
}

/// A fresh token: 32 random bytes, hex.
pub fn new_token() -> String {
    random_hex(32)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Who makes a proof: the two roles sign different messages, so that a proof cannot be
/// reflected back to the side that made it.
#[derive(Clone, Copy)]
pub enum Role {
    Controller,
    Agent,
}

fn message(role: Role, binding: &[u8], agent_nonce: &str, controller_nonce: &str) -> Vec<u8> {
    let mut m = match role {
        Role::Controller => b"onrush controller\0".to_vec(),
        Role::Agent => b"onrush agent\0".to_vec(),
    };
    m.extend_from_slice(binding);
    m.extend_from_slice(agent_nonce.as_bytes());
    m.push(0);
    m.extend_from_slice(controller_nonce.as_bytes());
    m
}

/// The proof `role` sends.
pub fn proof(
    token: &str,
    role: Role,
    binding: &[u8],
    agent_nonce: &str,
    controller_nonce: &str,
) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, token.trim().as_bytes());
    hex(hmac::sign(&key, &message(role, binding, agent_nonce, controller_nonce)).as_ref())
}

/// Whether `proof` was made by `role` with `token` (compared in constant time).
pub fn verify(
    token: &str,
    role: Role,
    binding: &[u8],
    agent_nonce: &str,
    controller_nonce: &str,
    proof: &str,
) -> bool {
    let Some(tag) = unhex(proof) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, token.trim().as_bytes());
    hmac::verify(
        &key,
        &message(role, binding, agent_nonce, controller_nonce),
        &tag,
    )
    .is_ok()
}

/// Reads a token file: its first line, which must be long enough to be a secret.
/// `-` reads the first line of stdin (how `--launch ssh` hands the token over: never on a
/// command line, never on the remote disk).
pub fn read_token(path: &std::path::Path) -> Result<String, String> {
    let text = if path.as_os_str() == "-" {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the token from stdin: {e}"))?;
        line
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?
    };
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.len() < 16 {
        return Err(format!(
            "{}: the token is {} characters; use at least 16 (the controller writes a \
             64-character one when it is started without --token-file)",
            path.display(),
            token.len()
        ));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_holds_only_for_its_token_role_binding_and_nonces() {
        let p = proof("secret-token-123456", Role::Agent, b"bind", "an", "cn");
        assert!(verify(
            "secret-token-123456",
            Role::Agent,
            b"bind",
            "an",
            "cn",
            &p
        ));
        assert!(!verify(
            "another-token-12345",
            Role::Agent,
            b"bind",
            "an",
            "cn",
            &p
        ));
        assert!(!verify(
            "secret-token-123456",
            Role::Controller,
            b"bind",
            "an",
            "cn",
            &p
        ));
        assert!(!verify(
            "secret-token-123456",
            Role::Agent,
            b"other",
            "an",
            "cn",
            &p
        ));
        assert!(!verify(
            "secret-token-123456",
            Role::Agent,
            b"bind",
            "an2",
            "cn",
            &p
        ));
        assert!(!verify(
            "secret-token-123456",
            Role::Agent,
            b"bind",
            "an",
            "cn",
            "zz"
        ));
        assert_ne!(nonce(), nonce());
        assert_eq!(new_token().len(), 64);
    }
}
