//! Thrift's failure classes, this crate's, in the group `Thrift`: registered by name when the
//! binary starts (`Thrift::register`), or on first use; a one-byte index either way.

use std::sync::OnceLock;

use onrush_protocol::FailureClass;

static CLASSES: OnceLock<[FailureClass; 2]> = OnceLock::new();

fn registered() -> &'static [FailureClass; 2] {
    CLASSES.get_or_init(|| {
        let register = |name, hint| {
            FailureClass::register_in("Thrift", name, hint)
                .expect("Thrift's classes fit beside onrush's own")
        };
        [
            register(
                "thrift_exception",
                "the Thrift server threw an exception the method declares: the service refused \
                 the call (its `exception` header names the type, the body holds its fields); \
                 check the arguments, or expect it with `on_failure: continue`",
            ),
            register(
                "thrift_application_exception",
                "the Thrift server answered with a TApplicationException: an unknown method \
                 (is `call:` right, and `multiplexed:` as the server expects?), arguments it \
                 could not read, or its handler failed; the body holds its message",
            ),
        ]
    })
}

/// The server answered with an exception the method declares (`throws`); the exception's type
/// name is the reply's `exception` header, its fields the JSON body.
pub fn exception() -> FailureClass {
    registered()[0]
}

/// The server answered with a `TApplicationException` (unknown method, wrong arguments, an
/// internal error of the server's handler).
pub fn application_exception() -> FailureClass {
    registered()[1]
}

/// Registers both (the binary does it before any plan is read, so that `validate`, `merge`
/// and `report` know their hints).
pub fn register() {
    registered();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_classes_are_in_the_thrift_group() {
        register();
        for (class, name) in [
            (exception(), "thrift_exception"),
            (application_exception(), "thrift_application_exception"),
        ] {
            assert_eq!((class.as_str(), class.group()), (name, "Thrift"));
            assert!(!class.hint().is_empty());
        }
    }
}
