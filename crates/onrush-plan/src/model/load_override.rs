//! `onrush run --vus/--duration/--iterations/--rate`: a plan's load changed from the command
//! line, as k6's flags change its options, without editing the file. Every scenario (setup and
//! teardown apart) takes the flags that fit its model; a flag that does not fit one (`--rate`
//! on a closed scenario, `--vus` on stages) is refused with the scenario's name and what to do,
//! rather than ignored: a run that silently kept the file's load would mislead.

use std::time::Duration;

use super::load::{LoadModel, RateStage, VuStage};
use super::plan::Plan;

/// The load flags of `onrush run`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadOverride {
    pub vus: Option<u32>,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    /// Arrivals per second.
    pub rate: Option<f64>,
}

impl LoadOverride {
    pub fn is_empty(&self) -> bool {
        *self == LoadOverride::default()
    }
}

impl Plan {
    /// Applies `o` to every scenario's load; the error names the scenario and the fix.
    pub fn override_load(&mut self, o: &LoadOverride) -> Result<(), String> {
        if o.is_empty() {
            return Ok(());
        }
        if o.duration.is_some() && o.iterations.is_some() {
            return Err("--duration and --iterations both end the load; give one of them".into());
        }
        for s in &mut self.scenarios {
            s.load =
                overridden(&s.load, o).map_err(|why| format!("scenario {:?}: {why}", s.name))?;
        }
        Ok(())
    }
}

fn overridden(load: &LoadModel, o: &LoadOverride) -> Result<LoadModel, String> {
    Ok(match load.clone() {
        LoadModel::ClosedIterations {
            vus,
            iterations,
            ramp_up,
        }
        | LoadModel::SharedIterations {
            vus,
            iterations,
            ramp_up,
        } => {
            if o.rate.is_some() {
                return Err(closed_rate());
            }
            let vus = o.vus.unwrap_or(vus);
            let shared = matches!(load, LoadModel::SharedIterations { .. });
            match o.duration {
                // `--duration` turns iterations into VUs held for that long (k6's `-d`).
                Some(d) => hold(vus, d, ramp_up)?,
                None if shared => LoadModel::SharedIterations {
                    vus,
                    iterations: o.iterations.unwrap_or(iterations),
                    ramp_up,
                },
                None => LoadModel::ClosedIterations {
                    vus,
                    iterations: o.iterations.unwrap_or(iterations),
                    ramp_up,
                },
            }
        }
        LoadModel::ClosedStages { start_vus, stages } => {
            if o.rate.is_some() {
                return Err(closed_rate());
            }
            // One stage, or a ramp then a hold: what `vus` + `duration` (+ `ramp_up`) wrote.
            let plain = match stages.as_slice() {
                [hold] if start_vus == hold.vus => Some((Duration::ZERO, *hold)),
                [ramp, hold] if start_vus == 0 && ramp.vus == hold.vus => Some((ramp.over, *hold)),
                _ => None,
            };
            let Some((ramp_up, stage)) = plain else {
                if o.vus.is_some() || o.duration.is_some() {
                    return Err("its load follows `stages:`; --vus and --duration change a `vus` + `duration` load: edit its stages, or give them a variable to set with -D".into());
                }
                return Err(no_iterations());
            };
            if o.iterations.is_some() {
                return Err(no_iterations());
            }
            let vus = o.vus.unwrap_or(stage.vus);
            let whole = o.duration.unwrap_or(ramp_up + stage.over);
            hold(vus, whole, ramp_up)?
        }
        LoadModel::Open {
            start_rate,
            stages,
            max_vus,
            slack,
            warm_up,
        } => {
            if o.vus.is_some() {
                return Err("its load is open (arrivals per second): --vus applies to closed loads; give --rate, or set its max_vus in the plan".into());
            }
            if o.iterations.is_some() {
                return Err("its load is open (arrivals per second): --iterations applies to closed loads; give --rate and --duration".into());
            }
            let stage = match stages.as_slice() {
                [s] if start_rate == s.per_second => *s,
                _ => return Err("its load follows `stages:`; --rate and --duration change a `rate` + `duration` load: edit its stages, or give them a variable to set with -D".into()),
            };
            let rate = o.rate.unwrap_or(stage.per_second);
            LoadModel::Open {
                start_rate: rate,
                stages: vec![RateStage {
                    per_second: rate,
                    over: o.duration.unwrap_or(stage.over),
                }],
                max_vus,
                slack,
                warm_up,
            }
        }
    })
}

/// `vus` VUs for `whole`, the first `ramp_up` of it a ramp from 0.
fn hold(vus: u32, whole: Duration, ramp_up: Duration) -> Result<LoadModel, String> {
    if whole.is_zero() {
        return Err("--duration is 0; expected a positive duration".into());
    }
    Ok(if ramp_up.is_zero() {
        LoadModel::ClosedStages {
            start_vus: vus,
            stages: vec![VuStage { vus, over: whole }],
        }
    } else {
        let ramp = ramp_up.min(whole);
        LoadModel::ClosedStages {
            start_vus: 0,
            stages: vec![
                VuStage { vus, over: ramp },
                VuStage {
                    vus,
                    over: whole - ramp,
                },
            ],
        }
    })
}

fn closed_rate() -> String {
    "its load is closed (VUs): --rate applies to open loads (`load: { rate, duration, max_vus }`); give --vus".into()
}

fn no_iterations() -> String {
    "its load runs for a duration: --iterations applies to an iterations load; give --duration"
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(vus: u32, iterations: u64) -> LoadModel {
        LoadModel::ClosedIterations {
            vus,
            iterations,
            ramp_up: Duration::ZERO,
        }
    }

    #[test]
    fn flags_change_the_load_they_fit() {
        let o = LoadOverride {
            vus: Some(7),
            ..Default::default()
        };
        assert_eq!(overridden(&closed(2, 10), &o).unwrap(), closed(7, 10));
        let o = LoadOverride {
            iterations: Some(3),
            ..Default::default()
        };
        assert_eq!(overridden(&closed(2, 10), &o).unwrap(), closed(2, 3));
        let o = LoadOverride {
            duration: Some(Duration::from_secs(5)),
            vus: Some(4),
            ..Default::default()
        };
        assert_eq!(
            overridden(&closed(2, 10), &o).unwrap(),
            LoadModel::ClosedStages {
                start_vus: 4,
                stages: vec![VuStage {
                    vus: 4,
                    over: Duration::from_secs(5)
                }]
            }
        );
        let open = LoadModel::Open {
            start_rate: 10.0,
            stages: vec![RateStage {
                per_second: 10.0,
                over: Duration::from_secs(5),
            }],
            max_vus: 50,
            slack: Duration::from_millis(1),
            warm_up: Default::default(),
        };
        let o = LoadOverride {
            rate: Some(200.0),
            ..Default::default()
        };
        match overridden(&open, &o).unwrap() {
            LoadModel::Open {
                start_rate, stages, ..
            } => {
                assert_eq!(start_rate, 200.0);
                assert_eq!(
                    stages,
                    vec![RateStage {
                        per_second: 200.0,
                        over: Duration::from_secs(5)
                    }]
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(overridden(&closed(2, 10), &o)
            .unwrap_err()
            .contains("--rate applies to open"));
        let o = LoadOverride {
            vus: Some(3),
            ..Default::default()
        };
        assert!(overridden(&open, &o)
            .unwrap_err()
            .contains("--vus applies to closed"));
    }
}
