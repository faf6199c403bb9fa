//! The failure class of a socket error, shared by the stream protocols (TCP, Thrift), so that
//! a refused connection or a reset reads the same in every protocol's results.

use std::io::{Error, ErrorKind};

use onrush_metrics::FailureClass;

/// An error of `connect()`.
pub fn connect_failure(e: Error) -> FailureClass {
    match e.kind() {
        ErrorKind::ConnectionRefused => FailureClass::ConnectRefused,
        ErrorKind::AddrNotAvailable => FailureClass::AddrNotAvailable,
        ErrorKind::TimedOut => FailureClass::ConnectTimeout,
        // A reset answering the handshake is the peer's doing, not a local I/O error.
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => {
            FailureClass::Reset
        }
        _ => FailureClass::Io,
    }
}

/// An error reading or writing an established connection.
pub fn io_failure(e: Error) -> FailureClass {
    match e.kind() {
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => FailureClass::Reset,
        ErrorKind::UnexpectedEof => FailureClass::ClosedEarly,
        _ => FailureClass::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_while_connecting_is_a_reset() {
        // It was `io`, whose hint blames the open-files limit.
        for kind in [
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionAborted,
            ErrorKind::BrokenPipe,
        ] {
            assert_eq!(connect_failure(kind.into()), FailureClass::Reset, "{kind}");
        }
        assert_eq!(connect_failure(ErrorKind::Other.into()), FailureClass::Io);
    }
}
