//! UDP's failure class, this crate's, in the group `UDP`: registered by name when the binary
//! starts (`Udp::register`), or on first use; a one-byte index either way.

use std::sync::OnceLock;

use onrush_protocol::FailureClass;

static NO_REPLY: OnceLock<FailureClass> = OnceLock::new();

/// No reply datagram within the step's timeout (a datagram, or its reply, was lost, or the
/// server did not answer). A class of its own: on UDP a loss is an expected event to count,
/// not a stalled connection.
pub fn no_reply() -> FailureClass {
    *NO_REPLY.get_or_init(|| {
        FailureClass::register_in(
            "UDP",
            "no_reply",
            "no reply datagram came within the step's timeout: the request or its reply was \
             lost (a full socket buffer on either side, a lossy network), or the server does \
             not answer this request; raise the timeout if replies are only slow",
        )
        .expect("UDP's class fits beside onrush's own")
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_reply_is_in_the_udp_group() {
        let class = super::no_reply();
        assert_eq!((class.as_str(), class.group()), ("no_reply", "UDP"));
        assert!(class.hint().contains("lost"));
    }
}
