//! `- { udp: HOST:PORT, send: ..., timeout: ... }` → [`UdpStep`]: one datagram sent, one
//! (optionally) received.

use super::steps::Build;
use super::Ctx;
use crate::error::PlanError;
use crate::yaml::Node;
use crate::{Step, UdpStep};

pub(super) const UDP_KEYS: [&str; 10] = [
    "udp",
    "name",
    "send",
    "send_hex",
    "reply",
    "max_reply",
    "timeout",
    "extract",
    "check",
    "on_failure",
];

const EXAMPLE: &str = "e.g. `- { udp: 127.0.0.1:5353, send: \"PING\", timeout: 500ms }`";

/// The largest UDP payload (65535 minus the 8-byte UDP header; IPv4's 20-byte header makes it
/// 65507 there, IPv6 without jumbograms 65527): also the default, since a datagram costs its
/// size only while it is received.
const MAX_DATAGRAM: u64 = 65_527;

impl Ctx<'_> {
    pub(super) fn udp(&self, node: &Node, path: &str, m: &mut Build) -> Result<Step, PlanError> {
        let f = self.map(node, path, &UDP_KEYS)?;
        let (host, port, name) = self.endpoint(&f, "udp", EXAMPLE)?;
        let send = self.payload(&f, false)?;
        let wait_reply = match f.get("reply") {
            None => true,
            Some(node) => {
                let field = f.child("reply");
                let text = self.string(node, &field)?;
                if text.trim() != "none" {
                    return Err(self
                        .err(node, &field, format!("expected `none`, found {text:?}"))
                        .with_hint(
                            "`reply: none` sends without waiting; without `reply:` the step \
                             waits up to `timeout` for one datagram",
                        ));
                }
                false
            }
        };
        let max_reply = match f.get("max_reply") {
            Some(n) => self.uint(
                n,
                &f.child("max_reply"),
                1,
                MAX_DATAGRAM,
                "the longest reply datagram in bytes, e.g. `max_reply: 1500`",
            )?,
            None => MAX_DATAGRAM,
        } as usize;
        let timeout = self.step_timeout(&f)?;
        let metric = m.id(name);
        let (extract, checks, on_failure) = self.step_outcome(&f, metric, m)?;
        Ok(Step::Udp(UdpStep {
            metric,
            host,
            port,
            send,
            wait_reply,
            max_reply,
            timeout,
            extract,
            checks,
            on_failure,
        }))
    }
}
