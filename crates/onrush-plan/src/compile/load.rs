//! `load:` → [`LoadModel`]: the closed model (`vus`) and the open model (`rate`).

use std::time::Duration;

use super::{Ctx, Fields};
use crate::error::PlanError;
use crate::units::show_duration;
use crate::yaml::{Kind, Node};
use crate::{LoadModel, RateStage, VuStage, WarmUp};

const LOAD_KEYS: [&str; 13] = [
    "vus",
    "iterations",
    "shared_iterations",
    "duration",
    "ramp_up",
    "stages",
    "start_vus",
    "rate",
    "start_rate",
    "max_vus",
    "graceful_stop",
    "arrival_slack",
    "warm_up",
];
const STAGE_KEYS: [&str; 3] = ["vus", "rate", "over"];
const CLOSED_ONLY: [&str; 5] = [
    "vus",
    "iterations",
    "shared_iterations",
    "ramp_up",
    "start_vus",
];
const OPEN_ONLY: [&str; 5] = ["rate", "start_rate", "max_vus", "arrival_slack", "warm_up"];

const MODELS: &str = "closed model: `vus` virtual users run iterations back to back (`iterations` per VU, or for a `duration`); \
open model: new iterations start at a fixed `rate` for a `duration`, using at most `max_vus`";
const VUS_HINT: &str = "`vus` is the number of virtual users, at least 1, e.g. `vus: 10`";
const MAX_VUS: u64 = 10_000_000;
/// How long requests in flight at the end of a load's duration may finish (k6's default).
const DEFAULT_GRACEFUL_STOP: Duration = Duration::from_secs(30);

impl Ctx<'_> {
    pub(crate) fn load(&self, node: &Node, path: &str) -> Result<LoadModel, PlanError> {
        let f = self.map(node, path, &LOAD_KEYS)?;
        let present: Vec<&str> = f.keys().collect();
        let closed = present.iter().find(|k| CLOSED_ONLY.contains(k));
        let open = present.iter().find(|k| OPEN_ONLY.contains(k));
        if let (Some(c), Some(o)) = (closed, open) {
            let (second, first) = if self.pos(&f, c) > self.pos(&f, o) {
                (*c, *o)
            } else {
                (*o, *c)
            };
            return Err(self
                .err(f.key(second).expect("present"), &f.child(second), format!("`{second}` cannot be combined with `{first}`: they belong to different load models; expected one model"))
                .with_hint(MODELS));
        }
        if let Some(stages) = f.get("stages") {
            for k in [
                "vus",
                "rate",
                "iterations",
                "shared_iterations",
                "duration",
                "ramp_up",
            ] {
                if let Some(key) = f.key(k) {
                    return Err(self
                        .err(key, &f.child(k), format!("`{k}` cannot be combined with `stages`; expected either `stages` or `{}`", if open.is_some() || k == "rate" { "rate` + `duration" } else { "vus` + `iterations`/`duration" }))
                        .with_hint("the stages give the targets and durations: `stages: [{ vus: 10, over: 30s }, { vus: 10, over: 2m }]`"));
                }
            }
            return self.stages(&f, stages, open.is_some());
        }
        if f.get("vus").is_some() {
            return self.closed(&f);
        }
        if f.get("rate").is_some() {
            return self.open(&f);
        }
        let (msg, hint) = match present.first() {
            None => ("empty load; expected `vus` (closed model) or `rate` (open model)", "e.g. `load: { vus: 10, duration: 30s }` or `load: { rate: 100/s, duration: 30s, max_vus: 50 }`"),
            Some(&"start_rate") | Some(&"max_vus") => ("missing `rate`; expected `rate` with the open model's `max_vus`", "e.g. `load: { rate: 100/s, duration: 30s, max_vus: 50 }`"),
            Some(_) => ("missing `vus` or `rate`; expected `vus` (closed model) or `rate` (open model)", "e.g. `load: { vus: 10, iterations: 100 }` or `load: { rate: 100/s, duration: 30s, max_vus: 50 }`"),
        };
        Err(self.err(node, path, msg).with_hint(hint))
    }

    /// `load.graceful_stop`: how long requests still in flight when a load's `duration` (or
    /// its stages) ends may take to finish before they are cut. Only a load with a duration
    /// has an end to be graceful about; `iterations` run to completion.
    pub(crate) fn graceful_stop(
        &self,
        node: &Node,
        path: &str,
        load: &LoadModel,
    ) -> Result<Duration, PlanError> {
        let f = self.map(node, path, &LOAD_KEYS)?;
        let Some(g) = f.get("graceful_stop") else {
            return Ok(DEFAULT_GRACEFUL_STOP);
        };
        if load.duration().is_none() {
            return Err(self
                .err(
                    f.key("graceful_stop").expect("present"),
                    &f.child("graceful_stop"),
                    "`graceful_stop` applies to a load with a `duration` or `stages`; this load ends when its iterations are done",
                )
                .with_hint("remove `graceful_stop`, or give the load a `duration` instead of `iterations`"));
        }
        self.duration(g, &f.child("graceful_stop"))
    }

    fn pos(&self, f: &Fields, key: &str) -> usize {
        f.key(key).map_or(0, |k| k.span.start)
    }

    fn vus(&self, f: &Fields, key: &str, min: u64) -> Result<u32, PlanError> {
        let node = f.get(key).expect("caller checked");
        Ok(self.uint(node, &f.child(key), min, MAX_VUS, VUS_HINT)? as u32)
    }

    fn closed(&self, f: &Fields) -> Result<LoadModel, PlanError> {
        let vus = self.vus(f, "vus", 1)?;
        if let Some(k) = f.key("start_vus") {
            return Err(self.err(k, &f.child("start_vus"), "`start_vus` is only used with `stages`; expected `vus` + `ramp_up` to start gradually").with_hint("remove `start_vus`, or describe the ramp with `stages`"));
        }
        let ramp_up = match f.get("ramp_up") {
            Some(n) => self.duration(n, &f.child("ramp_up"))?,
            None => Duration::ZERO,
        };
        if let Some(shared) = f.get("shared_iterations") {
            for other in ["iterations", "duration"] {
                if let Some(k) = f.key(other) {
                    return Err(self
                        .err(k, &f.child(other), format!("`{other}` cannot be combined with `shared_iterations`; expected one of them"))
                        .with_hint("`shared_iterations: N` runs N iterations in total, shared by the VUs; `iterations: N` runs N per VU"));
                }
            }
            let iterations = self.uint(
                shared,
                &f.child("shared_iterations"),
                1,
                u64::MAX,
                "`shared_iterations` is the total number of iterations the VUs share, at least 1",
            )?;
            return Ok(LoadModel::SharedIterations {
                vus,
                iterations,
                ramp_up,
            });
        }
        match (f.get("iterations"), f.get("duration")) {
            (Some(_), Some(_)) => {
                let (second, first) = if self.pos(f, "duration") > self.pos(f, "iterations") {
                    ("duration", "iterations")
                } else {
                    ("iterations", "duration")
                };
                Err(self
                    .err(f.key(second).expect("present"), &f.child(second), format!("`{second}` cannot be combined with `{first}`; expected one of them"))
                    .with_hint("`iterations: N` runs N iterations per VU then stops; `duration: 30s` keeps the VUs busy for 30s. Keep one"))
            }
            (Some(it), None) => {
                let iterations = self.uint(
                    it,
                    &f.child("iterations"),
                    1,
                    u64::MAX,
                    "`iterations` is the number of iterations each VU runs, at least 1",
                )?;
                Ok(LoadModel::ClosedIterations {
                    vus,
                    iterations,
                    ramp_up,
                })
            }
            (None, Some(d)) => {
                let duration = self.positive_duration(d, &f.child("duration"))?;
                if ramp_up.is_zero() {
                    return Ok(LoadModel::ClosedStages {
                        start_vus: vus,
                        stages: vec![VuStage {
                            vus,
                            over: duration,
                        }],
                    });
                }
                if ramp_up >= duration {
                    let r = f.get("ramp_up").expect("non-zero ramp_up is present");
                    return Err(self
                        .err(r, &f.child("ramp_up"), format!("ramp_up {} is not shorter than duration {}; expected ramp_up < duration", show_duration(ramp_up), show_duration(duration)))
                        .with_hint("the duration includes the ramp-up: e.g. `duration: 60s, ramp_up: 10s` ramps for 10s then holds for 50s"));
                }
                Ok(LoadModel::ClosedStages {
                    start_vus: 0,
                    stages: vec![
                        VuStage { vus, over: ramp_up },
                        VuStage {
                            vus,
                            over: duration - ramp_up,
                        },
                    ],
                })
            }
            (None, None) => Err(self
                .err(
                    f.node_ref(),
                    f.path_str(),
                    "missing `iterations` or `duration`; expected how long the VUs run",
                )
                .with_hint("add `iterations: 100` (per VU) or `duration: 30s`")),
        }
    }

    fn open(&self, f: &Fields) -> Result<LoadModel, PlanError> {
        let rate_node = f.get("rate").expect("caller checked");
        let rate = self.rate(rate_node, &f.child("rate"))?;
        if rate <= 0.0 {
            return Err(self
                .err(
                    rate_node,
                    &f.child("rate"),
                    "rate is 0; expected a positive rate",
                )
                .with_hint("e.g. `rate: 100/s`; to ramp from or to 0, use `stages`"));
        }
        if let Some(k) = f.key("start_rate") {
            return Err(self.err(k, &f.child("start_rate"), "`start_rate` is only used with `stages`; expected `rate` + `duration`").with_hint("remove `start_rate`, or describe the ramp with `stages: [{ rate: 200/s, over: 30s }]`"));
        }
        let Some(d) = f.get("duration") else {
            return Err(self
                .err(
                    rate_node,
                    f.path_str(),
                    "missing `duration`; expected how long arrivals continue at this rate",
                )
                .with_hint("add e.g. `duration: 30s`"));
        };
        let duration = self.positive_duration(d, &f.child("duration"))?;
        let max_vus = self.max_vus(f)?;
        Ok(LoadModel::Open {
            start_rate: rate,
            stages: vec![RateStage {
                per_second: rate,
                over: duration,
            }],
            max_vus,
            slack: self.arrival_slack(f)?,
            warm_up: self.warm_up(f, max_vus)?,
        })
    }

    fn max_vus(&self, f: &Fields) -> Result<u32, PlanError> {
        match f.get("max_vus") {
            Some(n) => Ok(self.uint(n, &f.child("max_vus"), 1, MAX_VUS, "`max_vus` is the most VUs busy at once, at least 1")? as u32),
            None => Err(self
                .err(f.node_ref(), f.path_str(), "missing `max_vus`; expected the most VUs the open model may use at once")
                .with_hint("add e.g. `max_vus: 100`: when all of them are busy, new arrivals are counted as dropped and reported, never silently delayed")),
        }
    }

    /// `arrival_slack`: at most 1 s, since arrivals started that early would change the load's
    /// shape, not only its cost.
    fn arrival_slack(&self, f: &Fields) -> Result<Duration, PlanError> {
        let Some(node) = f.get("arrival_slack") else {
            return Ok(crate::DEFAULT_ARRIVAL_SLACK);
        };
        let path = f.child("arrival_slack");
        let slack = self.duration(node, &path)?;
        if slack > Duration::from_secs(1) {
            return Err(self
                .err(node, &path, "`arrival_slack` is over 1s; expected a few milliseconds at most")
                .with_hint("e.g. `arrival_slack: 1ms` (the default), or `0ms` to start every arrival at its exact time"));
        }
        Ok(slack)
    }

    /// `warm_up`: `true` (the default: as many VUs as the first second needs), `false`, or a
    /// number of VUs, at most `max_vus`.
    fn warm_up(&self, f: &Fields, max_vus: u32) -> Result<WarmUp, PlanError> {
        let Some(node) = f.get("warm_up") else {
            return Ok(WarmUp::Auto);
        };
        let path = f.child("warm_up");
        const HINT: &str = "`warm_up: true` (the default) connects the VUs the first second needs before the schedule starts, `false` connects each VU when an arrival first needs it, a number N connects N VUs (at most `max_vus`)";
        let text = self.string(node, &path)?;
        match text.trim() {
            "true" | "True" | "TRUE" => return Ok(WarmUp::Auto),
            "false" | "False" | "FALSE" => return Ok(WarmUp::Off),
            _ => {}
        }
        let Ok(n) = text.trim().parse::<u64>() else {
            return Err(self
                .err(
                    node,
                    &path,
                    format!(
                        "expected `true`, `false` or a number of VUs, found {:?}",
                        text.trim()
                    ),
                )
                .with_hint(HINT));
        };
        if n > max_vus as u64 {
            return Err(self
                .err(node, &path, format!("`warm_up: {n}` is more than `max_vus: {max_vus}`; expected at most {max_vus} VUs"))
                .with_hint(HINT));
        }
        Ok(if n == 0 {
            WarmUp::Off
        } else {
            WarmUp::Vus(n as u32)
        })
    }

    fn positive_duration(&self, node: &Node, path: &str) -> Result<Duration, PlanError> {
        let d = self.duration(node, path)?;
        if d.is_zero() {
            return Err(self
                .err(node, path, "duration is 0; expected a positive duration")
                .with_hint("e.g. `duration: 30s`"));
        }
        Ok(d)
    }

    fn stages(&self, f: &Fields, node: &Node, open_keys: bool) -> Result<LoadModel, PlanError> {
        let path = f.child("stages");
        let items = match &node.kind {
            Kind::Seq(items) if !items.is_empty() => items,
            Kind::Seq(_) => {
                return Err(self
                    .err(
                        node,
                        &path,
                        "the list is empty; expected at least one stage",
                    )
                    .with_hint("e.g. `stages: [{ vus: 10, over: 30s }]`"))
            }
            _ => {
                return Err(self
                    .err(
                        node,
                        &path,
                        format!("expected a list of stages, found {}", node.describe()),
                    )
                    .with_hint("e.g. `stages: [{ vus: 10, over: 30s }, { vus: 0, over: 10s }]`"))
            }
        };
        // The model: from the first stage that says, else from start_rate/max_vus.
        let mut open = None;
        for (i, item) in items.iter().enumerate() {
            let sf = self.map(item, &format!("{path}[{i}]"), &STAGE_KEYS)?;
            match (sf.key("vus"), sf.key("rate")) {
                (Some(_), Some(r)) => return Err(self.err(r, &sf.child("rate"), "a stage has both `vus` and `rate`; expected one").with_hint(MODELS)),
                (Some(k), None) if open == Some(true) || (open.is_none() && open_keys) => {
                    return Err(self.err(k, &sf.child("vus"), "a `vus` stage in an open-model load (`rate` stages, `start_rate`, `max_vus`); expected `rate`").with_hint(MODELS))
                }
                (None, Some(k)) if open == Some(false) => return Err(self.err(k, &sf.child("rate"), "a `rate` stage after `vus` stages; expected `vus`").with_hint(MODELS)),
                (Some(_), None) => open = Some(false),
                (None, Some(_)) => open = Some(true),
                (None, None) => return Err(self.err(item, &format!("{path}[{i}]"), "missing `vus` or `rate`; expected a target for this stage").with_hint("e.g. `{ vus: 10, over: 30s }` (closed model) or `{ rate: 200/s, over: 30s }` (open model)")),
            }
            if sf.get("over").is_none() {
                return Err(self
                    .err(
                        item,
                        &format!("{path}[{i}]"),
                        "missing `over`; expected how long this stage ramps to its target",
                    )
                    .with_hint("e.g. `{ vus: 10, over: 30s }`"));
            }
        }
        let open = open.unwrap_or(false);
        let mut total = Duration::ZERO;
        if open {
            if let Some(k) = f.key("start_vus") {
                return Err(self
                    .err(k, &f.child("start_vus"), "`start_vus` belongs to the closed model, but these are `rate` stages; expected `start_rate`")
                    .with_hint(MODELS));
            }
            let start_rate = match f.get("start_rate") {
                Some(n) => self.rate(n, &f.child("start_rate"))?,
                None => 0.0,
            };
            let mut stages = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let sf = self.map(item, &format!("{path}[{i}]"), &STAGE_KEYS)?;
                let per_second = self.rate(sf.get("rate").expect("checked"), &sf.child("rate"))?;
                let over = self.duration(sf.get("over").expect("checked"), &sf.child("over"))?;
                total += over;
                stages.push(RateStage { per_second, over });
            }
            self.check_stages(
                node,
                &path,
                total,
                start_rate > 0.0 || stages.iter().any(|s| s.per_second > 0.0),
            )?;
            let max_vus = self.max_vus(f)?;
            Ok(LoadModel::Open {
                start_rate,
                stages,
                max_vus,
                slack: self.arrival_slack(f)?,
                warm_up: self.warm_up(f, max_vus)?,
            })
        } else {
            let start_vus = match f.get("start_vus") {
                Some(_) => self.vus(f, "start_vus", 0)?,
                None => 0,
            };
            let mut stages = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let sf = self.map(item, &format!("{path}[{i}]"), &STAGE_KEYS)?;
                let vus = self.uint(
                    sf.get("vus").expect("checked"),
                    &sf.child("vus"),
                    0,
                    MAX_VUS,
                    "the number of VUs to reach by the end of this stage, e.g. `vus: 10`",
                )? as u32;
                let over = self.duration(sf.get("over").expect("checked"), &sf.child("over"))?;
                total += over;
                stages.push(VuStage { vus, over });
            }
            self.check_stages(
                node,
                &path,
                total,
                start_vus > 0 || stages.iter().any(|s| s.vus > 0),
            )?;
            Ok(LoadModel::ClosedStages { start_vus, stages })
        }
    }

    fn check_stages(
        &self,
        node: &Node,
        path: &str,
        total: Duration,
        any_load: bool,
    ) -> Result<(), PlanError> {
        if total.is_zero() {
            return Err(self
                .err(
                    node,
                    path,
                    "the stages last 0s in total; expected a positive total duration",
                )
                .with_hint("give at least one stage a duration, e.g. `over: 30s`"));
        }
        if !any_load {
            return Err(self
                .err(node, path, "every stage targets 0; expected some load")
                .with_hint("set `vus` (or `rate`) above 0 in at least one stage"));
        }
        Ok(())
    }
}

impl Fields<'_> {
    pub(crate) fn path_str(&self) -> &str {
        &self.path
    }
    pub(crate) fn node_ref(&self) -> &Node {
        self.node
    }
}
