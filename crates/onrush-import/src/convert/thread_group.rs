//! Thread groups → scenarios: threads, ramp-up, loops, scheduler → `load`; what the thread
//! group gathered (feeders, cookies, pacing) → the scenario's keys.

use super::{join, Conv, Item, Scope};
use crate::jmx::{El, Props};
use crate::report::Status;
use crate::yaml::Y;

const CONCURRENCY: &str = "com.blazemeter.jmeter.threads.concurrency.ConcurrencyThreadGroup";
const ARRIVALS: &str = "com.blazemeter.jmeter.threads.arrivals.ArrivalsThreadGroup";
const ULTIMATE: &str = "kg.apc.jmeter.threads.UltimateThreadGroup";

impl Conv<'_> {
    pub(super) fn thread_group(
        &mut self,
        el: &El,
        scope: &Scope,
        parent: &str,
        scenarios: &mut Vec<Item>,
    ) {
        match el.class.as_str() {
            "ThreadGroup" => {}
            "SetupThreadGroup" | "PostThreadGroup" => {
                self.phase_group(el, scope, parent, scenarios);
                return;
            }
            CONCURRENCY | ARRIVALS => {
                self.plugin_group(el, scope, parent, scenarios);
                return;
            }
            ULTIMATE => {
                self.ultimate_group(el, scope, parent, scenarios);
                return;
            }
            _ => {
                self.entry_tree(el, parent, Status::NotConverted, "a thread group onrush does not know (a plugin?): write its load as `load:` stages or an open model (docs/plan.md, Load models)");
                return;
            }
        }
        let mut notes: Vec<String> = Vec::new();
        let threads = self.load_number(
            el,
            parent,
            el.s("ThreadGroup.num_threads"),
            "1",
            &mut notes,
            "threads",
        );
        if threads == Y::Raw("0".into())
            || el
                .prop("ThreadGroup.main_controller")
                .is_some_and(|p| p.s("LoopController.loops").trim() == "0")
        {
            self.entry_tree(
                el,
                parent,
                Status::Converted,
                "0 threads or 0 loops: JMeter runs none of it, so it is left out",
            );
            return;
        }
        let lc = el.prop("ThreadGroup.main_controller");
        let loops_raw = lc
            .map(|p| p.s("LoopController.loops").to_string())
            .unwrap_or_else(|| "1".into());
        let forever = lc.is_some_and(|p| p.b("LoopController.continue_forever", false))
            && loops_raw.trim() == "-1"
            || loops_raw.trim() == "-1";
        let scheduler = el.b("ThreadGroup.scheduler", false);
        let duration = el.s("ThreadGroup.duration").trim().to_string();
        let delay = el.s("ThreadGroup.delay").trim().to_string();
        let ramp = el.s("ThreadGroup.ramp_time").trim().to_string();
        let mut load = Y::map();
        load.set("vus", threads);
        let use_duration = scheduler && !duration.is_empty() && duration != "0";
        if use_duration && (forever || loops_raw.trim().is_empty()) {
            match self.static_text(el, parent, &duration) {
                Ok(d) => load.set("duration", Y::s(format!("{d}s"))),
                Err(e) => {
                    notes.push(format!("duration {e}: 10m used"));
                    load.set("duration", Y::s("10m"));
                }
            }
        } else if forever {
            notes.push("JMeter loops forever (until stopped): the scenario runs for `duration: 10m`; change it".into());
            load.set("duration", Y::s("10m"));
        } else {
            let iterations = self.load_number(el, parent, &loops_raw, "1", &mut notes, "loops");
            load.set("iterations", iterations);
            if use_duration {
                notes.push(format!("JMeter also stops after the scheduler's {duration}s; onrush stops after the iterations only (a load has iterations or a duration)"));
            }
        }
        if !ramp.is_empty() && ramp != "0" {
            match self.static_text(el, parent, &ramp) {
                Ok(r) => load.set("ramp_up", Y::s(format!("{r}s"))),
                Err(e) => notes.push(format!("ramp-up {e}: left out")),
            }
        }
        if scheduler && !delay.is_empty() && delay != "0" {
            notes.push(format!(
                "the startup delay of {delay}s is not converted: the scenario starts at once"
            ));
        }
        let on_failure = on_sample_error(el);
        let new_user = !el.b("ThreadGroup.same_user_on_next_iteration", true);
        let status = if notes.is_empty() {
            Status::Converted
        } else {
            Status::Approximated
        };
        let how = if notes.is_empty() {
            "→ a scenario and its `load`".to_string()
        } else {
            notes.join("; ")
        };
        self.entry(el, parent, status, how);
        self.scenario_from(
            &el.name,
            &el.children,
            scope,
            scenarios,
            load.clone(),
            on_failure,
        );
        if let Some((s, _)) = scenarios.last_mut() {
            if new_user {
                http_set(s, "cookies", Y::s("per_iteration"));
                http_set(s, "connections", Y::s("per_iteration"));
            }
        }
    }

    /// Builds one scenario from a thread group's children.
    pub(super) fn scenario_from(
        &mut self,
        name: &str,
        children: &[El],
        scope: &Scope,
        scenarios: &mut Vec<Item>,
        load: Y,
        on_failure: Option<&'static str>,
    ) {
        self.scen = self.plan_scen.clone();
        let path_parent = scope.path.clone();
        let mut inner = scope.clone();
        inner.path = join(&path_parent, name);
        let mut steps = self.children(children, &inner);
        let st = std::mem::take(&mut self.scen);
        let mut comments = Vec::new();
        if !steps.iter().any(|(y, _)| *y != Y::Nothing) {
            comments.push(
                "nothing of this thread group converted (see the report): it only waits".into(),
            );
            steps.push(placeholder());
        }
        let unique = unique_name(name, scenarios);
        let mut s = scenario_y(&unique, load, steps);
        if let Y::Map(m) = &mut s {
            m.retain(|e| e.0 != "_");
        }
        if !st.feeders.is_empty() {
            insert_before(&mut s, "steps", "feeders", Y::Seq(st.feeders));
        }
        if let Some(f) = on_failure {
            insert_before(&mut s, "steps", "on_failure", Y::s(f));
        }
        if let Some((per_min, per_thread, how)) = st.throughput {
            if st.requests > 0 && per_min > 0.0 {
                let secs = 60.0 * st.requests as f64 / per_min;
                let pacing = format!("{}ms", (secs * 1000.0).round() as u64);
                let mut c = vec![format!(
                    "JMeter Constant Throughput Timer: {per_min}/min {how}"
                )];
                if !per_thread {
                    c.push("shared by all threads in JMeter: multiply this pacing by the number of VUs".into());
                }
                if let Y::Map(m) = &mut s {
                    let at = m.iter().position(|e| e.0 == "steps").unwrap_or(m.len());
                    m.insert(at, ("pacing".into(), Y::s(pacing), c));
                }
            }
        }
        if !st.cookie_manager {
            http_set(&mut s, "cookies", Y::s("off"));
            comments.push("no HTTP Cookie Manager in scope: JMeter keeps no cookies, so neither does this scenario".into());
        } else if st.clear_cookies {
            http_set(&mut s, "cookies", Y::s("per_iteration"));
        }
        scenarios.push((s, comments));
    }

    /// A setUp or tearDown Thread Group → the plan's `setup:` or `teardown:` steps: converted
    /// as a thread group would be, then its steps run once, by one VU, before (after) the load.
    fn phase_group(&mut self, el: &El, scope: &Scope, parent: &str, scenarios: &[Item]) {
        let setup = el.class == "SetupThreadGroup";
        let (which, key) = if setup {
            ("setUp", "setup")
        } else {
            ("tearDown", "teardown")
        };
        let mut plain = el.clone();
        plain.class = "ThreadGroup".into();
        let mut converted: Vec<Item> = scenarios.to_vec();
        let before = converted.len();
        let first_entry = self.report.entries.len();
        self.thread_group(&plain, scope, parent, &mut converted);
        // The entries of the group itself say what it became.
        let path = join(parent, &el.name);
        let several = el
            .s("ThreadGroup.num_threads")
            .trim()
            .parse::<u64>()
            .is_ok_and(|n| n > 1)
            || el.prop("ThreadGroup.main_controller").is_some_and(|p| {
                p.s("LoopController.loops")
                    .trim()
                    .parse::<i64>()
                    .is_ok_and(|n| n != 1)
            });
        for e in &mut self.report.entries[first_entry..] {
            if e.path == path && e.testclass == "ThreadGroup" {
                e.testclass = el.class.clone();
                if several {
                    e.status = Status::Approximated;
                    e.note =
                        format!(
                        "→ `{key}:` steps, run once by one VU {} (JMeter ran its threads × loops; \
                         onrush's {key} runs once)",
                        if setup { "before the load" } else { "after the load, however it ended" }
                    );
                } else {
                    e.note = format!(
                        "→ `{key}:` steps, run once {}",
                        if setup {
                            "before the load; what they extract is readable by every VU"
                        } else {
                            "after the load, however it ended"
                        }
                    );
                }
            }
        }
        let Some((scenario, _)) = converted.into_iter().nth(before) else {
            return; // left out (0 threads or loops), and reported so
        };
        let steps = match scenario.get("steps") {
            Some(Y::Seq(items)) => items.clone(),
            _ => return,
        };
        let target = if setup {
            &mut self.setup_steps
        } else {
            &mut self.teardown_steps
        };
        if !target.is_empty() {
            target.push((
                Y::Nothing,
                vec![format!("JMeter {which} Thread Group `{}`", el.name)],
            ));
        }
        target.extend(steps);
    }

    /// The plugins' Concurrency Thread Group (→ closed `stages`) and Arrivals Thread Group
    /// (→ open `stages` of rates): a ramp to the target level, then a hold.
    fn plugin_group(&mut self, el: &El, scope: &Scope, parent: &str, scenarios: &mut Vec<Item>) {
        let arrivals = el.class == ARRIVALS;
        let unit = if el.s("Unit").trim().eq_ignore_ascii_case("M") {
            "m"
        } else {
            "s"
        };
        let mut notes = Vec::new();
        let value = |c: &mut Self, name: &str, default: &str, notes: &mut Vec<String>| -> String {
            let raw = el.s(name).trim();
            if raw.is_empty() {
                return default.to_string();
            }
            match c.plan_text(el, parent, raw) {
                Ok(t) if !t.contains("$${") => t,
                _ => {
                    notes.push(format!(
                        "{name} `{raw}` is not known when the plan loads: {default} used"
                    ));
                    default.to_string()
                }
            }
        };
        let target = value(self, "TargetLevel", "1", &mut notes);
        let ramp = value(self, "RampUp", "0", &mut notes);
        let hold = value(self, "Hold", "0", &mut notes);
        let steps = value(self, "Steps", "0", &mut notes);
        let level = |t: &str| {
            if arrivals {
                Y::s(format!("{t}/{unit}"))
            } else if t.parse::<u64>().is_ok() {
                Y::Raw(t.into())
            } else {
                Y::s(t)
            }
        };
        let key = if arrivals { "rate" } else { "vus" };
        let mut stages = Vec::new();
        let mut load = Y::map();
        if ramp != "0" {
            let mut st = Y::map();
            st.set(key, level(&target));
            st.set("over", Y::s(format!("{ramp}{unit}")));
            stages.push((st, vec![]));
            if steps != "0" && !steps.is_empty() {
                notes.push(format!(
                    "the ramp-up in {steps} steps becomes a linear ramp"
                ));
            }
        } else if arrivals {
            load.set("start_rate", level(&target));
        } else {
            load.set("start_vus", level(&target));
        }
        if hold != "0" || stages.is_empty() {
            let hold = if hold == "0" {
                notes.push("no hold time: the level is held 10m; change it".into());
                "10m".to_string()
            } else {
                format!("{hold}{unit}")
            };
            let mut st = Y::map();
            st.set(key, level(&target));
            st.set("over", Y::s(hold));
            stages.push((st, vec![]));
        }
        load.set("stages", Y::Seq(stages));
        if arrivals {
            let limit = value(self, "ConcurrencyLimit", "", &mut notes);
            let max = if limit.is_empty() {
                notes.push("no concurrency limit: `max_vus: 1000`".into());
                "1000".to_string()
            } else {
                limit
            };
            load.set(
                "max_vus",
                if max.parse::<u64>().is_ok() {
                    Y::Raw(max)
                } else {
                    Y::s(max)
                },
            );
        }
        if !el.s("Iterations").trim().is_empty() {
            notes.push("the per-thread iterations limit is not converted".into());
        }
        let how = if arrivals {
            "→ an open model: `stages` of arrival rates"
        } else {
            "→ closed `stages` of VUs"
        };
        self.entry_notes(el, parent, how, notes);
        self.scenario_from(&el.name, &el.children, scope, scenarios, load, None);
    }

    /// The plugins' Ultimate Thread Group: rows of (threads, initial delay, startup time, hold,
    /// shutdown time), each a batch of threads that ramps up, holds and ramps down on its own.
    /// The VUs over time are the sum of those trapezoids: piecewise linear, with a corner at
    /// each row's four instants, so closed `stages` through every corner are exact.
    fn ultimate_group(&mut self, el: &El, scope: &Scope, parent: &str, scenarios: &mut Vec<Item>) {
        let mut notes = Vec::new();
        let mut rows: Vec<[f64; 5]> = Vec::new();
        let table = el
            .prop("ultimatethreadgroupdata")
            .map(|p| p.children.as_slice())
            .unwrap_or_default();
        for (i, row) in table.iter().enumerate() {
            let cells: Vec<&str> = row.children.iter().map(|c| c.value.trim()).collect();
            let parsed: Option<Vec<f64>> = cells
                .iter()
                .map(|c| c.parse::<f64>().ok().filter(|v| *v >= 0.0))
                .collect();
            match parsed {
                Some(v) if v.len() == 5 => rows.push([v[0], v[1], v[2], v[3], v[4]]),
                _ => notes.push(format!(
                    "row {} ({}) is not five plain numbers (threads, delay, startup, hold, shutdown): left out",
                    i + 1,
                    cells.join(", ")
                )),
            }
        }
        if rows.is_empty() {
            self.entry_tree(
                el,
                parent,
                Status::NotConverted,
                "an Ultimate Thread Group without a usable schedule row: write its load as `load: { stages: [...] }` (docs/plan.md, Load models)",
            );
            return;
        }
        let mut stages = Vec::new();
        let mut at = 0.0;
        for (t, vus) in ultimate_corners(&rows) {
            if t <= at {
                continue;
            }
            let mut st = Y::map();
            st.set("vus", Y::Raw(format!("{}", vus.round() as u64)));
            st.set("over", Y::s(seconds_text(t - at)));
            stages.push((st, vec![]));
            at = t;
        }
        let mut load = Y::map();
        load.set("stages", Y::Seq(stages));
        if rows.iter().any(|r| r[0].fract() != 0.0) {
            notes.push("fractional thread counts are rounded".into());
        }
        let how = format!(
            "→ closed `stages` of VUs through every corner of its {} schedule row{} (exact)",
            rows.len(),
            if rows.len() == 1 { "" } else { "s" }
        );
        self.entry_notes(el, parent, &how, notes);
        let on_failure = on_sample_error(el);
        self.scenario_from(&el.name, &el.children, scope, scenarios, load, on_failure);
    }

    /// A load value (`vus`, `iterations`): a number, or a plan-variable template.
    fn load_number(
        &mut self,
        el: &El,
        parent: &str,
        raw: &str,
        default: &str,
        notes: &mut Vec<String>,
        what: &str,
    ) -> Y {
        let raw = raw.trim();
        if raw.is_empty() {
            return Y::Raw(default.into());
        }
        if raw.parse::<u64>().is_ok() {
            return Y::Raw(raw.into());
        }
        match self.static_text(el, parent, raw) {
            Ok(t) if !t.contains("$${") => Y::s(t),
            Ok(_) | Err(_) => {
                notes.push(format!(
                    "{what} `{raw}` cannot be computed when the plan loads: {default} used"
                ));
                Y::Raw(default.into())
            }
        }
    }
}

pub(super) fn idle_load() -> Y {
    let mut load = Y::map();
    load.set("vus", Y::Raw("1".into()));
    load.set("iterations", Y::Raw("1".into()));
    load
}

pub(super) fn placeholder() -> Item {
    let mut think = Y::map();
    think.set("think", Y::s("1ms"));
    (think, Vec::new())
}

pub(super) fn scenario_y(name: &str, load: Y, steps: Vec<Item>) -> Y {
    let mut s = Y::map();
    s.set("name", Y::s(name));
    s.set("load", load);
    s.set("steps", Y::Seq(steps));
    s
}

fn unique_name(name: &str, scenarios: &[Item]) -> String {
    let base = if name.trim().is_empty() {
        "scenario"
    } else {
        name.trim()
    };
    let base = base.replace("${", "$${");
    let taken = |n: &str| {
        scenarios
            .iter()
            .any(|(s, _)| s.get("name") == Some(&Y::s(n)))
    };
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|i| format!("{base} {i}"))
        .find(|n| !taken(n))
        .expect("a free name")
}

fn insert_before(map: &mut Y, before: &str, key: &str, value: Y) {
    if let Y::Map(m) = map {
        let at = m.iter().position(|e| e.0 == before).unwrap_or(m.len());
        m.insert(at, (key.to_string(), value, Vec::new()));
    }
}

/// Sets `http.KEY` of a scenario.
fn http_set(s: &mut Y, key: &str, value: Y) {
    if s.get("http").is_none() {
        insert_before(s, "steps", "http", Y::map());
    }
    if let Some(h) = s.get_mut("http") {
        h.set(key, value);
    }
}

/// A thread group's "action after a sampler error" as the scenario's `on_failure`
/// (`None`: continue, onrush's default).
fn on_sample_error(el: &El) -> Option<&'static str> {
    match el.s("ThreadGroup.on_sample_error") {
        "startnextloop" => Some("next_iteration"),
        "stopthread" => Some("stop_vu"),
        "stoptest" | "stoptestnow" => Some("stop_test"),
        _ => None,
    }
}

/// The corners of the sum of an Ultimate Thread Group's trapezoids: (seconds, VUs) at every
/// instant where a row starts or ends a ramp, in time order, from (0, 0). Where the VUs jump
/// (a startup or shutdown time of 0: JMeter starts or stops those threads at once) the corner
/// is followed by one 1 ms later at the new level: stages ramp, they cannot jump.
fn ultimate_corners(rows: &[[f64; 5]]) -> Vec<(f64, f64)> {
    // Inside the pieces; the limits at a corner are taken just before and just after it.
    let level = |r: &[f64; 5], t: f64| {
        let [n, delay, up, hold, down] = *r;
        let (a, b, c, d) = (
            delay,
            delay + up,
            delay + up + hold,
            delay + up + hold + down,
        );
        if t <= a || t >= d {
            0.0
        } else if t < b {
            n * (t - a) / up
        } else if t <= c {
            n
        } else {
            n * (d - t) / down
        }
    };
    let total = |t: f64| -> f64 { rows.iter().map(|r| level(r, t)).sum::<f64>().round() };
    let mut times: Vec<f64> = rows
        .iter()
        .flat_map(|r| {
            let [_, delay, up, hold, down] = *r;
            [
                delay,
                delay + up,
                delay + up + hold,
                delay + up + hold + down,
            ]
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let mut corners = vec![(0.0, 0.0)];
    const NEAR: f64 = 1e-7;
    for t in times {
        let (before, after) = (total(t - NEAR), total(t + NEAR));
        corners.push((t, before));
        if after != before {
            corners.push((t + 0.001, after));
        }
    }
    corners
}

/// `90s`, `1.5s`: a duration in seconds as the plan writes it.
fn seconds_text(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{}s", s as u64)
    } else {
        format!("{}ms", (s * 1000.0).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_rows_sum_at_every_corner() {
        // 10 threads: up over 10 s, hold 20 s, down over 10 s; 6 more from 15 s, up 5 s,
        // hold 5 s, down at once.
        let corners =
            ultimate_corners(&[[10.0, 0.0, 10.0, 20.0, 10.0], [6.0, 15.0, 5.0, 5.0, 0.0]]);
        assert_eq!(
            corners,
            [
                (0.0, 0.0),
                (0.0, 0.0),
                (10.0, 10.0),
                (15.0, 10.0),
                (20.0, 16.0),
                (25.0, 16.0),
                (25.001, 10.0),
                (30.0, 10.0),
                (40.0, 0.0)
            ]
        );
    }
}
