//! gRPC's failure classes: one per non-OK status code, named as gRPC names them
//! (`deadline_exceeded`, `unavailable`, ...), each with the advice the summary and the report
//! print, in the group `gRPC` (the report's heading for them). They are this crate's:
//! registered by name when the binary starts (`Grpc::register`), or on first use in a program
//! that never registered protocols (a test); a class is then a one-byte index, as onrush's own
//! are.

use std::sync::OnceLock;

use onrush_protocol::FailureClass;

/// The status codes a session names itself (the others come from `grpc-status`).
pub mod code {
    pub const UNKNOWN: u32 = 2;
    pub const INVALID_ARGUMENT: u32 = 3;
    pub const DEADLINE_EXCEEDED: u32 = 4;
    pub const PERMISSION_DENIED: u32 = 7;
    pub const RESOURCE_EXHAUSTED: u32 = 8;
    pub const UNIMPLEMENTED: u32 = 12;
    pub const INTERNAL: u32 = 13;
    pub const UNAVAILABLE: u32 = 14;
    pub const UNAUTHENTICATED: u32 = 16;
}

/// Codes 1 to 16: the class's name and hint.
const STATUSES: [(&str, &str); 16] = [
    ("cancelled", "the server cancelled the call (CANCELLED)"),
    ("unknown", "the server failed with an unknown error (UNKNOWN): often an exception in its handler; check its logs"),
    ("invalid_argument", "the server rejected the request message (INVALID_ARGUMENT): check the step's message"),
    ("deadline_exceeded", "no answer within the call's deadline (DEADLINE_EXCEEDED, the step's timeout, sent as grpc-timeout): the server is slow or overloaded; raise the timeout or lower the load"),
    ("not_found", "the server found no such entity (NOT_FOUND): check the message's ids"),
    ("already_exists", "the entity already exists (ALREADY_EXISTS): use unique values (e.g. ${uuid()})"),
    ("permission_denied", "the caller may not do this (PERMISSION_DENIED): check the metadata's credentials"),
    ("resource_exhausted", "the server ran out of a resource or rate-limited the call (RESOURCE_EXHAUSTED), or a message exceeded its size limit"),
    ("failed_precondition", "the system is not in a state for this call (FAILED_PRECONDITION)"),
    ("aborted", "the call was aborted, often by a concurrency conflict (ABORTED)"),
    ("out_of_range", "a value was out of range (OUT_OF_RANGE)"),
    ("unimplemented", "the server does not implement this method (UNIMPLEMENTED): do its .proto and the plan's match?"),
    ("internal", "the server failed internally (INTERNAL): check its logs"),
    ("unavailable", "the service is unavailable (UNAVAILABLE): overloaded, shutting down or restarting; a retry may succeed"),
    ("data_loss", "unrecoverable data loss or corruption (DATA_LOSS)"),
    ("unauthenticated", "the call has no valid credentials (UNAUTHENTICATED): check the metadata (authorization)"),
];

/// The group the report shows these classes under.
pub const GROUP: &str = "gRPC";

static CLASSES: OnceLock<[FailureClass; 16]> = OnceLock::new();

/// The classes of codes 1 to 16, registered on first use.
pub fn registered() -> &'static [FailureClass; 16] {
    CLASSES.get_or_init(|| {
        std::array::from_fn(|i| {
            let (name, hint) = STATUSES[i];
            FailureClass::register_in(GROUP, name, hint)
                .expect("gRPC's 16 classes fit beside onrush's own")
        })
    })
}

/// The class of status `code` (1 to 16; a code gRPC does not define is `unknown`).
pub fn status(code: u32) -> FailureClass {
    match code {
        1..=16 => registered()[code as usize - 1],
        _ => registered()[code::UNKNOWN as usize - 1],
    }
}

/// The failure class of a `grpc-status`: `None` for 0 (OK).
pub fn of_status(code: u32) -> Option<FailureClass> {
    (code != 0).then(|| status(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_name_their_class() {
        assert_eq!(of_status(0), None);
        assert_eq!(of_status(4).unwrap().as_str(), "deadline_exceeded");
        assert_eq!(of_status(16).unwrap().as_str(), "unauthenticated");
        assert_eq!(of_status(99).unwrap().as_str(), "unknown");
        assert!(of_status(14).unwrap().hint().contains("UNAVAILABLE"));
        assert!(registered().iter().all(|c| c.group() == "gRPC"));
        assert_eq!(
            FailureClass::named("not_found"),
            Some(status(5)),
            "registered by name: results files and thresholds find it"
        );
    }
}
