//! `summary.json` "distributed" (and `agents.json`): a distributed run's record of its agents,
//! written by the controller (`onrush run --agents N`), read by the report.
//!
//! The controller keeps its agents in these very types while the run goes, so what it writes
//! and what readers read cannot drift apart. Every field reads with a default: a section of an
//! older version (before `streamed_bytes` or the spares' fields, say) still reads, kept as it
//! was in [`Extras::other`](crate::Extras::other) and read through
//! [`Extras::distributed_run`](crate::Extras::distributed_run).

use serde::{Deserialize, Serialize};

/// `distributed`: who ran the load, their clocks, and whether the run is whole.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DistributedRun {
    /// Every agent, in the order they joined (spares after the agents they replaced).
    pub agents: Vec<AgentReport>,
    /// True when an agent was lost or sent no results: the merged figures miss some load.
    pub partial: bool,
    /// The most two agents' starts can be apart, in ms; null until every agent has said.
    pub start_skew_ms: Option<f64>,
    /// The plan's `distributed.on_agent_loss`: `continue`, `abort` or `replace`.
    pub on_agent_loss: String,
}

impl DistributedRun {
    /// True when an agent was lost or handed no results over (what [`partial`](Self::partial)
    /// records).
    pub fn is_partial(agents: &[AgentReport]) -> bool {
        agents
            .iter()
            .any(|a| a.lost_at_s.is_some() || !a.results_received)
    }
}

/// One of `distributed.agents[]`: one agent as the controller knows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentReport {
    pub name: String,
    pub address: String,
    pub threads: u64,
    /// Its share of the load; null for an agent that never got one (a spare never used).
    pub segment: Option<AgentSegment>,
    /// The agent's clock minus the controller's, in ms (from the probe with the shortest
    /// round trip).
    pub clock_offset_ms: f64,
    /// That probe's round trip: the offset is known to within half of it.
    pub clock_rtt_ms: f64,
    /// Seconds from the start when the agent was found lost (no word for 3 s), if it was.
    pub lost_at_s: Option<f64>,
    pub lost_reason: Option<String>,
    /// How late it woke for the common start, in ms of its own clock (`None`: it never said).
    pub start_late_ms: Option<f64>,
    /// Whether it handed its result files over at the end.
    pub results_received: bool,
    /// Bytes of `intervals.jsonl` and `generator.jsonl` it streamed during the run.
    pub streamed_bytes: u64,
    /// Its generator verdict and peak CPU, from the summary it handed over (absent when that
    /// summary did not arrive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator: Option<AgentHealth>,
    /// A spare: the lost agent whose segment it took over (`on_agent_loss: replace`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// A spare: where in the plan's schedule it started (s), i.e. the run's time then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joined_at_s: Option<f64>,
    /// A lost agent: the spare that took over its segment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
}

/// An agent's share of the load (the engine's `Segment`, as the controller dealt it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentSegment {
    /// This agent among the run's agents (join order), and how many there are.
    pub agent: u64,
    pub agents: u64,
    pub first_worker: u64,
    pub total_workers: u64,
    pub workers: u64,
}

/// An agent's own health over the run: what its `summary.json` says of the generator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentHealth {
    /// `healthy` or `saturated`.
    pub verdict: String,
    pub cpu_percent_max: f64,
    pub message: String,
}

impl AgentHealth {
    /// The part of an agent's generator verdict the controller records.
    pub fn of(verdict: &crate::GeneratorVerdict) -> AgentHealth {
        AgentHealth {
            verdict: verdict.verdict.clone(),
            cpu_percent_max: verdict.cpu_percent_max,
            message: verdict.message.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::Extras;

    /// `distributed` as the controller of the previous version wrote it.
    fn written() -> Value {
        json!({
            "agents": [
                {"name": "lg1", "address": "10.0.0.5:40000", "threads": 2,
                 "segment": {"agent": 0, "agents": 2, "first_worker": 0, "total_workers": 4,
                             "workers": 2},
                 "clock_offset_ms": -1.25, "clock_rtt_ms": 0.5, "lost_at_s": 5.0,
                 "lost_reason": "no word for 3 s", "start_late_ms": 0.3,
                 "results_received": false, "streamed_bytes": 1234, "replaced_by": "lg9"},
                {"name": "lg9", "address": "10.0.0.9:40000", "threads": 2, "segment": null,
                 "clock_offset_ms": 0.0, "clock_rtt_ms": 0.25, "lost_at_s": null,
                 "lost_reason": null, "start_late_ms": null, "results_received": true,
                 "streamed_bytes": 0, "replaces": "lg1", "joined_at_s": 5.5,
                 "generator": {"verdict": "healthy", "cpu_percent_max": 12.5, "message": "m"}}
            ],
            "partial": true,
            "start_skew_ms": null,
            "on_agent_loss": "replace",
        })
    }

    #[test]
    fn the_controllers_section_is_typed_and_written_back_unchanged() {
        let mut extras = Extras::default();
        extras.set("distributed", written());
        assert!(extras.other.is_empty(), "{:?}", extras.other);
        let run = extras.distributed.as_ref().unwrap();
        assert_eq!(run.agents[0].segment.unwrap().total_workers, 4);
        assert_eq!(run.agents[1].replaces.as_deref(), Some("lg1"));
        assert!(DistributedRun::is_partial(&run.agents));
        assert_eq!(extras.get("distributed"), Some(written()));
    }

    #[test]
    fn an_older_section_stays_as_read_and_reads_leniently() {
        let older = json!({"agents": [{"name": "lg1", "results_received": true}],
                           "partial": false});
        let mut extras = Extras::default();
        extras.set("distributed", older.clone());
        assert_eq!(extras.distributed, None);
        assert_eq!(extras.get("distributed"), Some(older));
        let run = extras.distributed_run().unwrap();
        assert_eq!(run.agents[0].name, "lg1");
        assert_eq!(run.agents[0].generator, None);
        extras.set("distributed", json!(3));
        assert_eq!(extras.distributed_run(), None);
    }
}
