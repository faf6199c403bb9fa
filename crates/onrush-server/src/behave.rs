//! The behaviours every message protocol of the built-in server offers besides the echo
//! (TCP lines and length-prefixed frames, WebSocket messages): a message that starts with a
//! command is answered as the command says.
//!
//! | message | answer |
//! |---|---|
//! | `/delay/MS REST` | `REST`, after MS milliseconds (the connection's later messages wait) |
//! | `/stream/N REST` | `REST` N times (N ≤ 10000), as N separate messages |
//! | `/close` (WebSocket: `/close/CODE REASON`) | no answer: the server closes the connection (a WebSocket close frame with CODE, default 1000) |
//! | `/stall` | no answer, ever: the server reads and drops until the client closes the connection |
//! | anything else | itself |
//!
//! A command with a bad argument (`/delay/x`) is answered `ERR ...` naming what was expected.

use std::time::Duration;

/// The most replies `/stream/N` sends.
pub(crate) const MAX_STREAM: u32 = 10_000;

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Behaviour<'a> {
    Echo(&'a [u8]),
    Delay(Duration, &'a [u8]),
    Stream(u32, &'a [u8]),
    /// `/close/CODE REASON`: the code (WebSocket only) and reason.
    Close(Option<u16>, &'a [u8]),
    Stall,
    /// A malformed command: the error text to answer.
    Error(String),
}

/// What `msg` asks for.
pub(crate) fn parse(msg: &[u8]) -> Behaviour<'_> {
    let Some(cmd) = msg.strip_prefix(b"/") else {
        return Behaviour::Echo(msg);
    };
    let (word, rest) = split_word(cmd);
    let (name, arg) = match word.iter().position(|&b| b == b'/') {
        Some(i) => (&word[..i], Some(&word[i + 1..])),
        None => (word, None),
    };
    match (name, arg) {
        (b"delay", Some(ms)) => match number(ms) {
            Some(ms) => Behaviour::Delay(Duration::from_millis(ms), rest),
            None => bad(msg, "/delay/MS REST, MS in milliseconds"),
        },
        (b"stream", Some(n)) => match number(n).filter(|n| *n <= u64::from(MAX_STREAM)) {
            Some(n) => Behaviour::Stream(n as u32, rest),
            None => bad(msg, "/stream/N REST, N from 0 to 10000"),
        },
        (b"close", None) => Behaviour::Close(None, rest),
        (b"close", Some(code)) => match number(code).and_then(|c| u16::try_from(c).ok()) {
            Some(code) => Behaviour::Close(Some(code), rest),
            None => bad(msg, "/close/CODE REASON, CODE a WebSocket close code"),
        },
        (b"stall", None) => Behaviour::Stall,
        _ => Behaviour::Echo(msg),
    }
}

fn bad(msg: &[u8], expected: &str) -> Behaviour<'static> {
    let shown = String::from_utf8_lossy(&msg[..msg.len().min(64)]).into_owned();
    Behaviour::Error(format!("ERR bad command {shown:?}: expected {expected}"))
}

/// The first word and what follows its single separating space.
fn split_word(text: &[u8]) -> (&[u8], &[u8]) {
    match text.iter().position(|&b| b == b' ') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, &[]),
    }
}

fn number(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 12 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_echo() {
        assert_eq!(parse(b"hello"), Behaviour::Echo(b"hello"));
        assert_eq!(parse(b"/nope x"), Behaviour::Echo(b"/nope x"));
        assert_eq!(
            parse(b"/delay/25 hi there"),
            Behaviour::Delay(Duration::from_millis(25), b"hi there")
        );
        assert_eq!(parse(b"/stream/3 x"), Behaviour::Stream(3, b"x"));
        assert_eq!(parse(b"/close"), Behaviour::Close(None, b""));
        assert_eq!(
            parse(b"/close/4000 bye"),
            Behaviour::Close(Some(4000), b"bye")
        );
        assert_eq!(parse(b"/stall"), Behaviour::Stall);
        assert!(matches!(parse(b"/delay/x y"), Behaviour::Error(e) if e.contains("/delay/MS")));
        assert!(matches!(parse(b"/stream/10001"), Behaviour::Error(_)));
    }
}
