//! How a UDP step is written in a plan: `- { udp: HOST:PORT, send: ..., reply: none,
//! max_reply: 1500 }`, read into a [`UdpSpec`] when the plan loads.

use onrush_plan::grammar::{payload_schema, CompiledStep, Mapping, StepGrammar};
use onrush_plan::{PlanError, TcpPayload};
use serde_json::json;

/// A UDP step as the plan wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct UdpSpec {
    /// `host:port` as written (resolved by the protocol when the run is prepared).
    pub host: String,
    pub port: u16,
    /// The datagram's payload (`send:` or `send_hex:`; never a file); None sends an empty one.
    pub send: Option<TcpPayload>,
    /// False for `reply: none`.
    pub wait_reply: bool,
    /// The longest reply datagram accepted (`max_reply`, default and at most 65527 bytes).
    pub max_reply: usize,
}

const KEYS: &[&str] = &["send", "send_hex", "reply", "max_reply"];
const EXAMPLE: &str = "{ udp: 127.0.0.1:5353, send: \"PING\", timeout: 500ms }";

/// The largest UDP payload (65535 minus the 8-byte UDP header; IPv4's 20-byte header makes it
/// 65507 there, IPv6 without jumbograms 65527): also the default, since a datagram costs its
/// size only while it is received.
const MAX_DATAGRAM: u64 = 65_527;

/// The `udp:` step grammar.
pub struct UdpGrammar;

impl StepGrammar for UdpGrammar {
    fn key(&self) -> &'static str {
        "udp"
    }

    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }

    fn example(&self) -> &'static str {
        EXAMPLE
    }

    fn schema(&self) -> serde_json::Value {
        let mut props = payload_schema(false);
        props.insert("udp".into(), json!({ "type": "string", "description": "HOST:PORT a datagram is sent to (resolved once)", "examples": ["127.0.0.1:5353"] }));
        props.insert(
            "name".into(),
            json!({ "type": "string", "description": "Metric name. Default: `udp HOST:PORT`" }),
        );
        props.insert("reply".into(), json!({ "const": "none", "description": "`none`: wait for no reply (the request completes when the datagram is sent); without it one datagram is waited for up to `timeout` (none: `no_reply`)" }));
        props.insert("max_reply".into(), json!({ "type": ["integer", "string"], "description": "The longest reply datagram accepted, bytes (default and at most 65527)" }));
        serde_json::Value::Object(props)
    }

    fn schema_rules(&self) -> serde_json::Value {
        json!({
            "description": "A UDP exchange: send one datagram (`send` or `send_hex`) to `udp` and, unless `reply: none`, wait up to `timeout` for one datagram in reply; the reply is the body for extractors and checks",
            "not": { "required": ["send", "send_hex"] }
        })
    }

    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let target = step.required("udp", "HOST:PORT")?;
        let written = target.string()?;
        let (host, port) = target.host_port(EXAMPLE).map_err(|e| {
            if written.contains("://") {
                e.with_hint(format!(
                    "write the address without a scheme (UDP has no TLS: DTLS is not \
                     supported); e.g. `- {EXAMPLE}`"
                ))
            } else {
                e.with_hint(format!("e.g. `- {EXAMPLE}`"))
            }
        })?;
        let send = step.payload(false)?;
        let wait_reply = match step.get("reply") {
            None => true,
            Some(reply) => {
                let text = reply.string()?;
                if text.trim() != "none" {
                    return Err(reply
                        .error(format!("expected `none`, found {text:?}"))
                        .with_hint(
                            "`reply: none` sends without waiting; without `reply:` the step \
                             waits up to `timeout` for one datagram",
                        ));
                }
                false
            }
        };
        let max_reply = match step.get("max_reply") {
            Some(v) => v.uint(
                1,
                MAX_DATAGRAM,
                "the longest reply datagram in bytes, e.g. `max_reply: 1500`",
            )?,
            None => MAX_DATAGRAM,
        } as usize;
        Ok(CompiledStep {
            name: format!("udp {written}"),
            spec: Box::new(UdpSpec {
                host,
                port,
                send,
                wait_reply,
                max_reply,
            }),
        })
    }
}
