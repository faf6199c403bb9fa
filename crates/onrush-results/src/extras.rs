//! The top-level fields of `summary.json` that the caller adds (`onrush run`: `interrupted`,
//! `vars`, `threads`, `machine`, `load`, `generator`, `thresholds`, ...), typed.
//!
//! Byte compatibility: these fields were written as untyped JSON values, whose objects have
//! their keys in alphabetical order, and top-level extras likewise. [`Extras`] keeps that: it
//! serialises through a sorted JSON map, and it stores a value typed only when the typed value
//! writes back exactly the same JSON; anything else (an older or hand-edited file, a key this
//! version does not know) is kept in `other` as read, so reading and writing a summary never
//! changes it.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::distributed::DistributedRun;
use crate::exchanges::FailingExchange;
use crate::generator::GeneratorVerdict;
use crate::thresholds::ThresholdOutcome;

/// One of `stopped_early[]`: a scenario (or the run, `"*"`) stopped before its plan said.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoppedEarly {
    pub scenario: String,
    pub reason: String,
}

/// One of `vus_not_started[]`: a closed-model scenario some of whose VUs never started.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VusNotStarted {
    pub scenario: String,
    /// The VUs the plan asked for (`vus`, or the highest of the stages).
    pub planned: u64,
    pub started: u64,
    /// planned - started.
    pub not_started: u64,
    /// Why, in words a user acts on.
    pub reason: String,
}

/// `machine`: where the run ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    pub cpus: u64,
    pub os: String,
}

/// One of `load[]`: a scenario's load model in words.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioLoad {
    pub scenario: String,
    pub model: String,
    /// `shared`, `per_vu`, `per_iteration` or `per_request`.
    pub connections: String,
}

macro_rules! typed_extras {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty ),* $(,)?) => {
        /// The caller's top-level fields of `summary.json`, typed (see the module docs).
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct Extras {
            $( $(#[$doc])* pub $field: Option<$ty>, )*
            /// Every other top-level field, and a known one whose value does not have its
            /// type, as read.
            pub other: Map<String, Value>,
        }

        /// The keys [`Extras`] types.
        pub const TYPED_EXTRA_KEYS: &[&str] = &[$( stringify!($field) ),*];

        impl Extras {
            /// Sets `key` to `value`: typed when `key` is known and `value` has its type,
            /// else kept as is. Reserved keys of the summary (`run`, `totals`, ...) are ignored.
            pub fn set(&mut self, key: impl Into<String>, value: Value) {
                let key = key.into();
                if crate::summary::RESERVED_KEYS.contains(&key.as_str()) {
                    return;
                }
                self.remove(&key);
                match key.as_str() {
                    $( stringify!($field) => {
                        if let Some(v) = exactly::<$ty>(&value) {
                            self.$field = Some(v);
                            return;
                        }
                    } )*
                    _ => {}
                }
                self.other.insert(key, value);
            }

            /// The value of `key` as JSON, typed or not; `None` when absent.
            pub fn get(&self, key: &str) -> Option<Value> {
                match key {
                    $( stringify!($field) if self.$field.is_some() => {
                        self.$field.as_ref().map(to_value)
                    } )*
                    _ => self.other.get(key).cloned(),
                }
            }

            /// Removes `key`, returning its value as JSON.
            pub fn remove(&mut self, key: &str) -> Option<Value> {
                match key {
                    $( stringify!($field) if self.$field.is_some() => {
                        self.$field.take().as_ref().map(to_value)
                    } )*
                    _ => self.other.remove(key),
                }
            }

            /// All fields as one JSON object, keys in alphabetical order (as written).
            pub fn to_map(&self) -> Map<String, Value> {
                let mut map = self.other.clone();
                $( if let Some(v) = &self.$field {
                    map.insert(stringify!($field).to_string(), to_value(v));
                } )*
                map
            }
        }
    };
}

typed_extras! {
    /// The run was stopped early (Ctrl-C).
    interrupted: bool,
    /// Plan variables in force.
    vars: BTreeMap<String, String>,
    /// Scenarios (or the run) that stopped before their plan said.
    stopped_early: Vec<StoppedEarly>,
    /// Closed-model scenarios whose VUs did not all start.
    vus_not_started: Vec<VusNotStarted>,
    /// Worker threads of the generator.
    threads: u64,
    machine: Machine,
    load: Vec<ScenarioLoad>,
    /// The generator's own health.
    generator: GeneratorVerdict,
    /// Every threshold's outcome.
    thresholds: Vec<ThresholdOutcome>,
    /// The `abort_on_fail` threshold that stopped the run.
    aborted_by: ThresholdOutcome,
    /// Per failure class that occurred: the first message the protocol gave for it (e.g.
    /// which byte broke a response's framing), what the class's count alone cannot tell.
    failure_examples: BTreeMap<String, String>,
    /// The first few failing requests of each step and failure class, with what the response
    /// said (crate::exchanges).
    failing_exchanges: Vec<FailingExchange>,
    /// A distributed run's agents, as its controller recorded them.
    distributed: DistributedRun,
}

impl Extras {
    /// Builds from a JSON object (each key as by [`set`](Self::set)).
    pub fn from_map(map: Map<String, Value>) -> Extras {
        let mut e = Extras::default();
        for (k, v) in map {
            e.set(k, v);
        }
        e
    }

    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        self.to_map().is_empty()
    }

    /// Removes every field.
    pub fn clear(&mut self) {
        *self = Extras::default();
    }

    /// `thresholds`, typed; when they were written in another shape (an older version's:
    /// `measured` as text, no `measured_text`), read from that shape. `None` without a list.
    pub fn threshold_outcomes(&self) -> Option<Vec<ThresholdOutcome>> {
        match &self.thresholds {
            Some(typed) => Some(typed.clone()),
            None => crate::thresholds::read_any_shape(self.other.get("thresholds")?),
        }
    }

    /// `distributed`, typed; when it was written in another shape (an older version's, with
    /// fewer fields), read leniently from that shape. `None` for a run that was not
    /// distributed (or a `distributed` that is not an object).
    pub fn distributed_run(&self) -> Option<DistributedRun> {
        match &self.distributed {
            Some(typed) => Some(typed.clone()),
            None => serde_json::from_value(self.other.get("distributed")?.clone()).ok(),
        }
    }
}

fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("extras always serialise")
}

/// `value` as a `T`, when writing that `T` back gives exactly `value`.
fn exactly<T: DeserializeOwned + Serialize>(value: &Value) -> Option<T> {
    let typed: T = serde_json::from_value(value.clone()).ok()?;
    (to_value(&typed) == *value).then_some(typed)
}

impl Serialize for Extras {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Extras {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(d).map(Extras::from_map)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn known_keys_are_typed_and_written_back_unchanged() {
        let generator = json!({"verdict": "saturated", "message": "m", "saturated_from_s": 12,
            "causes": [{"cause": "cpu", "first_s": 12, "detail": "d", "fix": "f"}],
            "cpu_percent_max": 99.0, "worker_cpu_percent_max": 99.5, "rss_mb_max": 14.2,
            "rss_mb_peak": 15.0, "schedule_lag_p99_ms_max": null, "open_fds_max": 61,
            "sockets_to_targets_max": 50, "time_wait_max": 0});
        let threshold = json!({"threshold": "p99 < 100ms", "scope": "total", "measured": 87.2,
            "measured_text": "87.2 ms", "passed": true, "message": "p99 87.2 ms < 100 ms"});
        let map = json!({
            "interrupted": false, "vars": {"host": "shop.test"}, "threads": 2,
            "stopped_early": [{"scenario": "s", "reason": "r"}],
            "machine": {"hostname": "h", "cpus": 2, "os": "linux 6.1"},
            "load": [{"scenario": "s", "model": "closed", "connections": "per_vu"}],
            "generator": generator, "thresholds": [threshold], "aborted_by": threshold,
        });
        let Value::Object(map) = map else { panic!() };
        let e = Extras::from_map(map.clone());
        assert!(e.other.is_empty(), "{:?}", e.other);
        assert_eq!(e.threads, Some(2));
        assert_eq!(e.generator.as_ref().unwrap().causes[0].first_s, 12);
        assert_eq!(e.thresholds.as_ref().unwrap()[0].measured, Some(87.2));
        assert_eq!(e.to_map(), map);
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
        // Nine keys, `vus_not_started` (VUs of a closed model that never started),
        // `failure_examples`, `failing_exchanges`, and `distributed` (a distributed run's
        // agents).
        assert_eq!(TYPED_EXTRA_KEYS.len(), 13);
    }

    #[test]
    fn values_of_another_shape_stay_as_read() {
        let mut e = Extras::default();
        e.set("threads", json!(2.0)); // typed it would be written `2`
        e.set("thresholds", json!("not an array"));
        e.set("machine", json!({"hostname": "h"})); // fields missing
        e.set("something_new", json!({"a": [1, 2]}));
        e.set("totals", json!(null)); // reserved: ignored
        assert_eq!((e.threads.is_none(), e.thresholds.is_none()), (true, true));
        assert_eq!(e.other.len(), 4);
        assert_eq!(e.get("threads"), Some(json!(2.0)));
        assert_eq!(e.get("totals"), None);
        // Setting a typed value replaces the untyped one.
        e.set("threads", json!(3));
        assert_eq!((e.threads, e.other.get("threads")), (Some(3), None));
        assert_eq!(e.remove("threads"), Some(json!(3)));
        assert!(e.get("threads").is_none());
    }
}
