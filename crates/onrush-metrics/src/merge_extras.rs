//! What a merged `summary.json` keeps of its inputs' own top-level fields (`interrupted`,
//! `vars`, `generator`, ...: the ones `onrush run` adds beside the figures), documented in
//! docs/results.md, "Merging runs". A field is kept when it means the same of the merged run
//! as of its inputs; merging one directory keeps every one of them but the thresholds.
//!
//! * `interrupted`: true when any input was interrupted or did not finish.
//! * `vars`: the variables with the same value in every input that has variables.
//! * `threads`: the sum (the worker threads of all the generators).
//! * `stopped_early`: every input's entries, repeats left out.
//! * `generator`: saturated when any input was, from its earliest second; causes by kind, the
//!   earliest of each; peaks the highest. With several inputs, details name their directory.
//! * `failing_exchanges`: the earliest three of each (scenario, step, class) of all inputs
//!   (a distributed run's agents each kept their own earliest).
//! * `thresholds`, `aborted_by`: never — they judged each run's own figures, not the merged
//!   ones (evaluate thresholds on the merged summary instead).
//! * any other field (`machine`, `load`, ...): kept when every input with a summary has the
//!   same value.
//!
//! An input without `summary.json` (a run that was killed) has none of these fields: it
//! counts as interrupted and is left out of the others.
//!
//! `failure_classes` (each class's group and hint) is the figures' own field, not the caller's,
//! but comes from the inputs too ([`keep_failure_classes`]): the build that merges may not have
//! the protocol whose classes the inputs counted.

use std::collections::BTreeMap;

use onrush_results::{Extras, FailureClassInfo, GeneratorVerdict, SaturationCause};

/// One input of a merge, as far as its top-level fields go.
pub(crate) struct InputRecord {
    /// The directory, as given (names it in the generator's details).
    pub dir: String,
    /// Its `summary.json`'s fields; `None` without `summary.json`.
    pub extras: Option<Extras>,
    /// Its `summary.json`'s `failure_classes` (empty without `summary.json`).
    pub failure_classes: BTreeMap<String, FailureClassInfo>,
    /// Its `intervals.jsonl` says the run did not finish.
    pub unfinished: bool,
}

/// The merged summary's top-level fields (see the module docs).
pub(crate) fn merged_extras(inputs: &[InputRecord]) -> Extras {
    let with: Vec<&Extras> = inputs.iter().filter_map(|i| i.extras.as_ref()).collect();
    let mut out = Extras::default();

    let stopped = inputs
        .iter()
        .any(|i| i.unfinished || i.extras.as_ref().and_then(|e| e.interrupted) == Some(true));
    out.interrupted = if stopped {
        Some(true)
    } else {
        with.iter().find_map(|e| e.interrupted)
    };

    let vars: Vec<&BTreeMap<String, String>> =
        with.iter().filter_map(|e| e.vars.as_ref()).collect();
    if let Some((first, rest)) = vars.split_first() {
        out.vars = Some(
            first
                .iter()
                .filter(|(k, v)| rest.iter().all(|o| o.get(*k) == Some(v)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
    }

    let threads: Vec<u64> = with.iter().filter_map(|e| e.threads).collect();
    if !threads.is_empty() {
        out.threads = Some(threads.iter().sum());
    }

    let mut stops = Vec::new();
    for s in with
        .iter()
        .filter_map(|e| e.stopped_early.as_ref())
        .flatten()
    {
        if !stops.contains(s) {
            stops.push(s.clone());
        }
    }
    if !stops.is_empty() {
        out.stopped_early = Some(stops);
    }

    let generators: Vec<(&str, &GeneratorVerdict)> = inputs
        .iter()
        .filter_map(|i| Some((i.dir.as_str(), i.extras.as_ref()?.generator.as_ref()?)))
        .collect();
    out.generator = merged_generator(&generators, inputs.len());

    let failing: Vec<_> = with
        .iter()
        .filter_map(|e| e.failing_exchanges.clone())
        .flatten()
        .collect();
    if !failing.is_empty() {
        out.failing_exchanges = Some(onrush_results::exchanges::keep_first(failing));
    }

    // Every other field, typed or not, when all inputs with a summary agree on it.
    const COMBINED: &[&str] = &[
        "failing_exchanges",
        "interrupted",
        "vars",
        "threads",
        "stopped_early",
        "generator",
        "thresholds",
        "aborted_by",
    ];
    if let Some((first, rest)) = with.split_first() {
        for (key, value) in first.to_map() {
            if COMBINED.contains(&key.as_str()) {
                continue;
            }
            if rest.iter().all(|e| e.get(&key).as_ref() == Some(&value)) {
                out.set(key, value);
            }
        }
    }
    out
}

/// Completes the group and hint of each class of a merged summary (as this build knows them)
/// with what the inputs recorded, which says more when this build does not have the class's
/// protocol; the first input to say wins, so merging one run keeps its own.
pub(crate) fn keep_failure_classes(
    inputs: &[InputRecord],
    classes: &mut BTreeMap<String, FailureClassInfo>,
) {
    for (name, info) in classes.iter_mut() {
        let recorded = inputs
            .iter()
            .filter_map(|i| i.failure_classes.get(name))
            .fold(FailureClassInfo::default(), |said, more| {
                said.or(more.clone())
            });
        *info = recorded.or(std::mem::take(info));
    }
}

/// The generator verdicts of the inputs (with their directories) as one; `inputs` is the
/// number of inputs merged. One verdict of one input is kept as it is.
fn merged_generator(
    verdicts: &[(&str, &GeneratorVerdict)],
    inputs: usize,
) -> Option<GeneratorVerdict> {
    let (_, first) = verdicts.first()?;
    if inputs == 1 && verdicts.len() == 1 {
        return Some((*first).clone());
    }
    let saturated: Vec<&(&str, &GeneratorVerdict)> =
        verdicts.iter().filter(|(_, v)| !v.healthy()).collect();
    let mut causes: BTreeMap<String, SaturationCause> = BTreeMap::new();
    for (dir, v) in &saturated {
        for c in &v.causes {
            let named = SaturationCause {
                detail: format!("{dir}: {}", c.detail),
                ..c.clone()
            };
            match causes.get(&c.cause) {
                Some(known) if known.first_s <= c.first_s => {}
                _ => {
                    causes.insert(c.cause.clone(), named);
                }
            }
        }
    }
    let max =
        |f: fn(&GeneratorVerdict) -> f64| verdicts.iter().map(|(_, v)| f(v)).fold(0.0, f64::max);
    let max_u = |f: fn(&GeneratorVerdict) -> u64| verdicts.iter().map(|(_, v)| f(v)).max();
    let message = match saturated.first() {
        None => format!(
            "generator healthy in every run merged ({} of {}): the results describe the target",
            verdicts.len(),
            inputs
        ),
        Some((dir, v)) => format!(
            "generator saturated in {} of the {} runs merged; first, {dir}: {}",
            saturated.len(),
            inputs,
            v.message
        ),
    };
    Some(GeneratorVerdict {
        verdict: if saturated.is_empty() {
            "healthy"
        } else {
            "saturated"
        }
        .to_string(),
        message,
        saturated_from_s: saturated
            .iter()
            .filter_map(|(_, v)| v.saturated_from_s)
            .min(),
        causes: causes.into_values().collect(),
        cpu_percent_max: max(|v| v.cpu_percent_max),
        worker_cpu_percent_max: max(|v| v.worker_cpu_percent_max),
        rss_mb_max: max(|v| v.rss_mb_max),
        rss_mb_peak: max(|v| v.rss_mb_peak),
        schedule_lag_p99_ms_max: verdicts
            .iter()
            .filter_map(|(_, v)| v.schedule_lag_p99_ms_max)
            .reduce(f64::max),
        open_fds_max: max_u(|v| v.open_fds_max).unwrap_or(0),
        sockets_to_targets_max: max_u(|v| v.sockets_to_targets_max).unwrap_or(0),
        time_wait_max: max_u(|v| v.time_wait_max).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use onrush_results::{Machine, StoppedEarly};
    use serde_json::json;

    fn verdict(healthy: bool, from: Option<u64>, cpu: f64) -> GeneratorVerdict {
        GeneratorVerdict {
            verdict: if healthy { "healthy" } else { "saturated" }.into(),
            message: "m".into(),
            saturated_from_s: from,
            causes: if healthy {
                Vec::new()
            } else {
                vec![SaturationCause {
                    cause: "cpu".into(),
                    first_s: from.unwrap_or(0),
                    detail: "CPU 99% on worker 0".into(),
                    fix: "f".into(),
                }]
            },
            cpu_percent_max: cpu,
            ..Default::default()
        }
    }

    fn extras(vars: &[(&str, &str)], threads: u64, generator: GeneratorVerdict) -> Extras {
        Extras {
            interrupted: Some(false),
            vars: Some(
                vars.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            threads: Some(threads),
            machine: Some(Machine {
                hostname: "h".into(),
                cpus: 2,
                os: "linux".into(),
            }),
            generator: Some(generator),
            thresholds: Some(Vec::new()),
            stopped_early: Some(vec![StoppedEarly {
                scenario: "s".into(),
                reason: "r".into(),
            }]),
            ..Default::default()
        }
    }

    fn input(dir: &str, extras: Option<Extras>) -> InputRecord {
        InputRecord {
            dir: dir.into(),
            extras,
            failure_classes: BTreeMap::new(),
            unfinished: false,
        }
    }

    fn info(group: &str, hint: &str) -> FailureClassInfo {
        FailureClassInfo {
            group: group.into(),
            hint: hint.into(),
        }
    }

    #[test]
    fn failure_classes_keep_what_the_inputs_recorded() {
        let mut a = input("a", None);
        a.failure_classes
            .insert("not_found".into(), info("other", ""));
        let mut b = input("b", None);
        b.failure_classes.insert(
            "not_found".into(),
            info("gRPC", "no such entity (NOT_FOUND)"),
        );
        b.failure_classes
            .insert("timeout".into(), info("connection", "an older hint"));
        // What this build knows: `timeout` itself; `not_found` only by name (read from a file).
        let mut merged = BTreeMap::from([
            ("not_found".to_string(), info("other", "")),
            (
                "timeout".to_string(),
                info("connection", "this build's hint"),
            ),
            ("io".to_string(), info("connection", "io hint")),
        ]);
        keep_failure_classes(&[a, b], &mut merged);
        assert_eq!(
            merged["not_found"],
            info("gRPC", "no such entity (NOT_FOUND)")
        );
        assert_eq!(merged["timeout"], info("connection", "an older hint"));
        assert_eq!(
            merged["io"],
            info("connection", "io hint"),
            "no input recorded it"
        );
    }

    #[test]
    fn one_input_keeps_everything_but_the_thresholds() {
        let mut e = extras(&[("host", "a")], 2, verdict(true, None, 50.0));
        e.set("something_new", json!({"x": 1}));
        let m = merged_extras(&[input("a", Some(e.clone()))]);
        e.thresholds = None;
        assert_eq!(m, e);
    }

    #[test]
    fn several_inputs_combine_field_by_field() {
        let a = extras(
            &[("host", "a"), ("vus", "10")],
            2,
            verdict(true, None, 50.0),
        );
        let mut b = extras(
            &[("host", "b"), ("vus", "10")],
            4,
            verdict(false, Some(7), 99.0),
        );
        b.machine.as_mut().unwrap().hostname = "other".into();
        let killed = InputRecord {
            unfinished: true,
            ..input("c", None)
        };
        let m = merged_extras(&[input("a", Some(a)), input("b", Some(b)), killed]);
        assert_eq!(m.interrupted, Some(true)); // c did not finish
        assert_eq!(
            m.vars,
            Some(
                [("vus".to_string(), "10".to_string())]
                    .into_iter()
                    .collect()
            )
        );
        assert_eq!(m.threads, Some(6));
        assert_eq!(m.machine, None); // two machines
        assert_eq!(m.thresholds, None);
        assert_eq!(m.stopped_early.as_ref().map(Vec::len), Some(1));
        let g = m.generator.unwrap();
        assert_eq!(
            (g.verdict.as_str(), g.saturated_from_s, g.cpu_percent_max),
            ("saturated", Some(7), 99.0)
        );
        assert_eq!(g.causes[0].detail, "b: CPU 99% on worker 0");
        assert!(
            g.message
                .starts_with("generator saturated in 1 of the 3 runs merged; first, b: m"),
            "{}",
            g.message
        );
    }
}
