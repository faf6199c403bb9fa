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
