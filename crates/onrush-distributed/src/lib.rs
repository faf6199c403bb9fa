//! Distributed runs: one controller, many agents, one plan.
//!
//! - Agents dial out to the controller ([`agent`]), so they need no inbound port. The
//!   connection is TLS; both sides prove they know the run's token, bound to the TLS session
//!   ([`auth`]).
//! - The controller ([`controller`]) waits for its agents, measures each one's clock offset,
//!   sends every agent the plan with all the files it refers to ([`bundle`]) and its share of
//!   the load (a segment of the workers: the totals over all agents are the plan's exactly),
//!   and starts them all at one instant.
//! - Each agent runs the engine on its share, keeps its full results on its own disk, and
//!   streams its `intervals.jsonl` as it grows: per-second counters and HDR histograms, never
//!   raw samples. At the end it hands its result files over; the controller keeps them under
//!   `agents/<name>/` and merges them (`onrush merge`) into exact totals and percentiles.
//! - Heartbeats go both ways each second; a side that hears nothing for [`LOSS_AFTER`]
//!   treats the other as lost (an agent then stops its load by itself).
//!
//! `--launch ssh` starts the agents over OpenSSH ([`ssh`]).
//!
//! The wire format is [`wire`]: length-prefixed frames, JSON messages and raw data.

pub mod agent;
pub mod allow;
pub mod auth;
pub mod bundle;
pub mod controller;
pub mod kube;
mod link;
mod live_status;
pub mod ssh;
pub mod tls;
pub mod wire;

use std::time::Duration;

/// This build's version: agents and controllers of different versions refuse each other.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The results format both sides write; they must agree.
pub const RESULTS_FORMAT: u32 = onrush_results::RESULTS_FORMAT_VERSION;
/// How often each side says it is still there.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// Silence after which the other side is taken as lost.
pub const LOSS_AFTER: Duration = Duration::from_secs(3);
