//! The first message of each failure class, per worker thread: a class's count says that
//! responses were malformed, the message says how ("not an HTTP/1.x status line; the
//! response began \"\\x16\\x03\\x01...\"": TLS on a plain port). Kept in a thread-local
//! slot per class, so noting costs a failing request one check once its class has a message,
//! and nothing is shared between workers; a worker hands its messages over when it ends.

use std::cell::RefCell;

use crate::FailureClass;

thread_local! {
    static FIRST: RefCell<[Option<Box<str>>; FailureClass::CAPACITY]> =
        const { RefCell::new([const { None }; FailureClass::CAPACITY]) };
}

/// Keeps `detail()` as this thread's example of `class`, unless it has one already (then
/// `detail` is not called: no message is built for the millionth reset).
pub fn note(class: FailureClass, detail: impl FnOnce() -> String) {
    FIRST.with_borrow_mut(|first| {
        let slot = &mut first[class.index()];
        if slot.is_none() {
            *slot = Some(detail().into_boxed_str());
        }
    });
}

/// This thread's examples, by class name, and the slots emptied (for the next run a thread
/// might serve).
pub fn take() -> Vec<(FailureClass, String)> {
    FIRST.with_borrow_mut(|first| {
        FailureClass::all()
            .zip(first.iter_mut())
            .filter_map(|(class, slot)| slot.take().map(|d| (class, d.into_string())))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_message_of_a_class_is_kept_and_taken_once() {
        let _ = take();
        note(FailureClass::BadResponse, || "first".to_string());
        note(FailureClass::BadResponse, || {
            panic!("not built: the class has a message")
        });
        note(FailureClass::Reset, || "reset".to_string());
        let mut got = take();
        got.sort_by_key(|(c, _)| c.as_str());
        assert_eq!(
            got,
            [
                (FailureClass::BadResponse, "first".to_string()),
                (FailureClass::Reset, "reset".to_string()),
            ]
        );
        assert!(take().is_empty());
    }
}
