//! The live merge of several runs' `intervals.jsonl` as it streams in (a distributed run's
//! agents, each sending the new lines of its file once a second) into one [`Collector`]: the
//! controller's view of the whole run while it runs, exact per second, for the live status,
//! the exporters and `abort_on_fail` thresholds.
//!
//! The results written at the end do not come from here but from [`merge`](crate::merge)
//! over each agent's complete files, so a second that comes late over a slow link is only
//! late here: it is counted in the next second still open (as the collector does with a
//! worker's late snapshot), and totals stay exact.
//!
//! A run's second `t` is complete once a line of a later second arrives, or the run ended.
//! The merge closes second `t` once every run still streaming has completed it — or once
//! another run is [`WAIT_SECONDS`] seconds further, so that one silent agent (a scenario that
//! ended early there, a stalled link) does not freeze the live view of the others.
//!
//! ```
//! use onrush_metrics::LiveMerge;
//! let header = r#"{"kind":"header","onrush_results":2,"plan":"shop","start_unix_ms":1767225600000,"layout":[{"scenario":"s","steps":["home"]}]}"#;
//! let second = |t: u64, n: u64| format!(r#"{{"kind":"step","t":{t},"scenario":"s","step":"home","requests":{n},"failures":0}}"#);
//! let mut live = LiveMerge::new(2);
//! for agent in 0..2 {
//!     live.push(agent, format!("{header}\n{}\n", second(0, 10 + agent as u64)).as_bytes()).unwrap();
//! }
//! assert_eq!(live.close_ready(), 0); // second 0 may still grow on both
//! live.push(0, format!("{}\n", second(1, 1)).as_bytes()).unwrap();
//! live.push(1, format!("{}\n", second(1, 1)).as_bytes()).unwrap();
//! assert_eq!(live.close_ready(), 1);
//! assert_eq!(live.closed_seconds()[0].steps[0].requests, 21);
//! live.end(0);
//! live.end(1);
//! live.close_ready();
//! assert_eq!(live.closed_seconds()[0].second, 1);
//! assert_eq!(live.collector().unwrap().summary().totals.requests, 23);
//! ```

use onrush_results::{HistDecoder, Line};

use crate::collector::{Collector, RunInfo};
use crate::files;
use crate::record::Layout;
use crate::second::SecondData;
use crate::snapshot::{CheckCounts, ScenarioInterval, Snapshot, StepInterval};

/// Seconds a run may lag behind the most advanced one before its seconds are closed without
/// it (what it sends later is counted in the next open second).
pub const WAIT_SECONDS: u64 = 3;

/// Worker ids of the runs being merged start here, far from the ids of this process's own
/// [`WorkerMetrics`](crate::WorkerMetrics).
const WORKER_BASE: u64 = 1 << 40;

/// See the module documentation.
pub struct LiveMerge {
    inputs: Vec<Input>,
    collector: Option<Collector>,
    /// The collector's layout, kept apart to place lines while the collector is borrowed.
    layout: Option<Layout>,
    dec: HistDecoder,
    /// The last second closed.
    closed_through: Option<u64>,
    /// The latest `close_ready` closed seconds (the collector's closed seconds are those).
    fresh: bool,
    /// Where the merged seconds are written as they close (`stream_to`).
    stream_dir: Option<std::path::PathBuf>,
}

#[derive(Default)]
struct Input {
    /// Bytes after the last newline received: the start of a line still coming.
    partial: Vec<u8>,
    /// The second being received and its scenario lines so far (VU gauges, iterations,
    /// checks). Its step lines go to the collector as they arrive: a whole second's decoded
    /// step histograms per agent is what made a controller's memory grow by ~4 MiB per agent.
    current: Option<(u64, Snapshot)>,
    /// Every second before this one is complete.
    complete_before: u64,
    ended: bool,
}

impl LiveMerge {
    /// A merge of `inputs` streams, numbered from 0.
    pub fn new(inputs: usize) -> LiveMerge {
        LiveMerge {
            inputs: (0..inputs).map(|_| Input::default()).collect(),
            collector: None,
            layout: None,
            dec: HistDecoder::new(),
            closed_through: None,
            fresh: false,
            stream_dir: None,
        }
    }

    /// Writes the merged seconds to `dir/intervals.jsonl` as they close (a distributed run's
    /// live page reads them, as one machine's reads its own); set before the first header.
    /// If the file cannot be made, the merge goes on in memory, and says so.
    pub fn stream_to(&mut self, dir: std::path::PathBuf) {
        self.stream_dir = Some(dir);
    }

    /// One more input (a stream that starts during the run: a spare agent taking over a lost
    /// one's segment), numbered after the others. The seconds already closed are not waited
    /// for; what it sends of them counts in the next second, as any late line.
    pub fn add_input(&mut self) -> usize {
        let complete_before = self.closed_through.map_or(0, |c| c + 1);
        self.inputs.push(Input {
            complete_before,
            ..Input::default()
        });
        self.inputs.len() - 1
    }

    /// The bytes `input` streamed next (any cut: a line may continue in the next call). The
    /// first line of a stream is its header; the first header seen gives the run's layout,
    /// name and start. An error names the line's problem; the stream goes on.
    pub fn push(&mut self, input: usize, bytes: &[u8]) -> Result<(), String> {
        let Some(state) = self.inputs.get_mut(input) else {
            return Err(format!("no input {input}"));
        };
        state.partial.extend_from_slice(bytes);
        let Some(end) = state.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(());
        };
        let rest = state.partial.split_off(end + 1);
        let whole = std::mem::replace(&mut state.partial, rest);
        let mut first_error = None;
        for raw in whole.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if let Err(e) = self.line(input, raw) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `input` will send nothing more (it finished, or was lost): its last second is complete
    /// and the merge no longer waits for it.
    pub fn end(&mut self, input: usize) {
        if let Some(state) = self.inputs.get_mut(input) {
            state.ended = true;
        }
        self.flush_current(input, u64::MAX);
    }

    /// Closes every second that is complete (see the module documentation) and returns how
    /// many seconds that closed (0 when none). [`collector`](Self::collector) then holds the
    /// run so far, for a summary or a threshold, and its
    /// [`closed_seconds`](Collector::closed_seconds) are the seconds just closed, oldest first.
    pub fn close_ready(&mut self) -> usize {
        self.fresh = false;
        let Some(through) = self.ready_through() else {
            return 0;
        };
        if self.closed_through.is_some_and(|c| through <= c) {
            return 0;
        }
        let Some(collector) = self.collector.as_mut() else {
            return 0;
        };
        collector.close_second(through);
        self.closed_through = Some(through);
        self.fresh = true;
        collector.closed_seconds().len()
    }

    /// The seconds the latest [`close_ready`](Self::close_ready) closed.
    pub fn closed_seconds(&self) -> &[SecondData] {
        match &self.collector {
            Some(c) if self.fresh => c.closed_seconds(),
            _ => &[],
        }
    }

    /// The collector of the merged run (`None` until a header came).
    pub fn collector(&self) -> Option<&Collector> {
        self.collector.as_ref()
    }

    /// The mutable collector (to set the duration before asking for a summary).
    pub fn collector_mut(&mut self) -> Option<&mut Collector> {
        self.collector.as_mut()
    }

    /// The last second every stream still going has completed, or that all are past when
    /// one lags by more than [`WAIT_SECONDS`].
    fn ready_through(&self) -> Option<u64> {
        let complete = |i: &Input| i.complete_before;
        let front = self.inputs.iter().map(complete).max()?;
        let live_min = self
            .inputs
            .iter()
            .filter(|i| !i.ended)
            .map(complete)
            .min()
            .unwrap_or(front);
        let through = live_min.max(front.saturating_sub(WAIT_SECONDS));
        through.checked_sub(1)
    }

    fn line(&mut self, input: usize, raw: &[u8]) -> Result<(), String> {
        let line: Line = serde_json::from_slice(raw).map_err(|e| format!("a line: {e}"))?;
        let t = match &line {
            Line::Header(h) => {
                if self.collector.is_none() {
                    let mut layout = Layout::default();
                    layout.scenarios = h.layout.iter().map(files::scenario_layout).collect();
                    let info = RunInfo::new(&h.plan, h.start_unix_ms);
                    self.collector = Some(match &self.stream_dir {
                        Some(dir) => Collector::streaming(layout.clone(), info.clone(), dir)
                            .unwrap_or_else(|e| {
                                eprintln!(
                                    "warning: {}: {e}; the merged seconds stay in memory",
                                    dir.display()
                                );
                                Collector::new(layout.clone(), info)
                            }),
                        None => Collector::new(layout.clone(), info),
                    });
                    self.layout = Some(layout);
                }
                return Ok(());
            }
            Line::Other(_) => return Ok(()),
            l => l.t().expect("step, group and scenario lines have a second"),
        };
        if self.layout.is_none() {
            return Err("a second before the header".into());
        }
        self.flush_current(input, t);
        let layout = self.layout.as_ref().expect("checked");
        let worker = WORKER_BASE + input as u64;
        let state = &mut self.inputs[input];
        let (_, snap) = state
            .current
            .get_or_insert_with(|| (t, empty_snapshot(layout, worker)));
        match &line {
            Line::Scenario(l) => {
                let Some(si) = layout.scenarios.iter().position(|s| s.name == l.scenario) else {
                    return Err(format!("scenario {:?} is not in the header", l.scenario));
                };
                let mut d = files::scenario_interval(l, &mut self.dec)?;
                let sc = &layout.scenarios[si];
                d.checks = vec![CheckCounts::default(); sc.checks.len()];
                for c in &l.checks {
                    let found = sc
                        .checks
                        .iter()
                        .position(|(name, step)| *name == c.name && sc.steps[*step] == c.step);
                    if let Some(ci) = found {
                        d.checks[ci].add(&CheckCounts {
                            passes: c.passes,
                            fails: c.fails,
                        });
                    }
                }
                snap.scenarios[si].merge(d);
            }
            Line::Step(l) | Line::Group(l) => {
                let found = layout.scenarios.iter().enumerate().find_map(|(si, s)| {
                    (s.name == l.scenario)
                        .then(|| s.steps.iter().position(|st| *st == l.step).map(|i| (si, i)))
                        .flatten()
                });
                let Some((si, sti)) = found else {
                    return Err(format!(
                        "step {:?} of scenario {:?} is not in the header",
                        l.step, l.scenario
                    ));
                };
                let d = files::step_interval(l, &mut self.dec)?;
                let mut one = empty_snapshot(layout, worker);
                one.steps[si][sti] = Some(d);
                if let Some(c) = self.collector.as_mut() {
                    c.add_steps(t, one);
                }
            }
            Line::Header(_) | Line::Other(_) => {}
        }
        Ok(())
    }

    /// Hands `input`'s second in progress to the collector when `t` is a later second: that
    /// one is complete.
    fn flush_current(&mut self, input: usize, t: u64) {
        let state = &mut self.inputs[input];
        if state.current.as_ref().is_some_and(|(cur, _)| *cur < t) {
            let (cur, snap) = state.current.take().expect("checked");
            state.complete_before = state.complete_before.max(cur + 1);
            if let Some(c) = self.collector.as_mut() {
                c.add(cur, snap);
            }
        }
        if t != u64::MAX {
            // No line of a second between: those seconds are complete (and empty) too.
            state.complete_before = state.complete_before.max(t);
        }
    }
}

fn empty_snapshot(layout: &Layout, worker: u64) -> Snapshot {
    Snapshot {
        worker,
        failing: Vec::new(),
        steps: layout
            .scenarios
            .iter()
            .map(|s| vec![None::<StepInterval>; s.steps.len()])
            .collect(),
        scenarios: vec![ScenarioInterval::default(); layout.scenarios.len()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RequestRecord, WorkerMetrics};

    /// Two runs recorded by hand, written as files, streamed in pieces cut anywhere: the live
    /// merge ends with the totals and percentiles of `merge` over the same files.
    #[test]
    fn streamed_pieces_merge_to_what_merge_of_the_files_says() {
        let layout = Layout::new([("s", ["a", "b"])]).with_check(0, "ok", 1);
        let root = std::env::temp_dir().join(format!("onrush-live-merge-{}", std::process::id()));
        let mut dirs = Vec::new();
        for run in 0..2u64 {
            let dir = root.join(format!("run{run}"));
            let mut c =
                Collector::streaming(layout.clone(), RunInfo::new("p", 1_767_225_600_000), &dir)
                    .unwrap();
            let mut w = WorkerMetrics::new(&layout);
            for t in 0..5u64 {
                for k in 0..(10 + run * 7 + t) {
                    let r = RequestRecord {
                        latency_us: 1_000 + k * 37 + run * 500,
                        ..Default::default()
                    };
                    w.record_request(0, (k % 2) as usize, &r);
                    w.record_check(0, 0, k % 3 != 0);
                }
                w.record_iteration(0);
                c.add(t, w.take_snapshot());
                c.close_second(t);
            }
            c.finish();
            c.write_results(&dir).unwrap();
            dirs.push(dir);
        }
        let merged = crate::merge(&dirs, &root.join("merged")).unwrap();

        let mut live = LiveMerge::new(2);
        let files: Vec<Vec<u8>> = dirs
            .iter()
            .map(|d| std::fs::read(d.join(crate::INTERVALS_FILE)).unwrap())
            .collect();
        let mut seconds = Vec::new();
        // Pieces of 97 and 131 bytes: cut inside lines, and the two streams out of step.
        let (mut at0, mut at1) = (0, 0);
        while at0 < files[0].len() || at1 < files[1].len() {
            let end0 = (at0 + 97).min(files[0].len());
            live.push(0, &files[0][at0..end0]).unwrap();
            at0 = end0;
            let end1 = (at1 + 131).min(files[1].len());
            live.push(1, &files[1][at1..end1]).unwrap();
            at1 = end1;
            live.close_ready();
            seconds.extend(live.closed_seconds().iter().map(|s| s.second));
        }
        live.end(0);
        live.end(1);
        live.close_ready();
        seconds.extend(live.closed_seconds().iter().map(|s| s.second));
        assert_eq!(
            seconds,
            [0, 1, 2, 3, 4],
            "every second closed once, in order"
        );
        let summary = live.collector().unwrap().summary();
        assert_eq!(summary.totals.requests, merged.totals.requests);
        assert_eq!(summary.totals.requests, 60 + 95);
        assert_eq!(summary.scenarios[0].iterations, 10);
        assert_eq!(summary.steps[1].latency_ms, merged.steps[1].latency_ms);
        assert_eq!(
            summary.scenarios[0].latency_ms,
            merged.scenarios[0].latency_ms
        );
        assert_eq!(summary.checks, merged.checks, "checks are placed by name");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_silent_input_is_waited_for_only_so_long() {
        let header = r#"{"kind":"header","onrush_results":2,"plan":"p","start_unix_ms":0,"layout":[{"scenario":"s","steps":["a"]}]}"#;
        let step = |t: u64| {
            format!(
                r#"{{"kind":"step","t":{t},"scenario":"s","step":"a","requests":1,"failures":0}}"#
            )
        };
        let mut live = LiveMerge::new(2);
        live.push(1, format!("{header}\n").as_bytes()).unwrap();
        live.push(
            0,
            format!("{header}\n{}\n{}\n", step(0), step(1)).as_bytes(),
        )
        .unwrap();
        assert_eq!(live.close_ready(), 0, "input 1 may still send second 0");
        for t in 2..=4 {
            live.push(0, format!("{}\n", step(t)).as_bytes()).unwrap();
        }
        // Input 0 completed seconds 0..=3; input 1 is more than WAIT_SECONDS behind.
        live.close_ready();
        let closed: Vec<u64> = live.closed_seconds().iter().map(|s| s.second).collect();
        assert_eq!(closed, [0]);
        // What input 1 sends late still counts, in the next open second.
        live.push(1, format!("{}\n", step(0)).as_bytes()).unwrap();
        live.end(0);
        live.end(1);
        live.close_ready();
        assert_eq!(live.collector().unwrap().summary().totals.requests, 6);
        assert!(live.push(0, b"{not json\n").is_err());
    }
}
