//! `intervals.jsonl` written as the run goes (`Collector::streaming`): readable mid-run and
//! after a kill, the same file in the end as the in-memory collector's; a killed run's summary
//! rebuilt from it; merge refusing to write over an input.

use crate::common;

use std::fs;
use std::time::Duration;

use common::{layout_ab, synthetic_info, synthetic_run, synthetic_run_into, temp_dir};
use onrush_metrics::{
    merge, rebuild_summary, Collector, Layout, MergeError, RequestRecord, RunInfo, WorkerMetrics,
};
use onrush_results::IntervalsReader;

#[test]
fn the_streamed_file_is_the_in_memory_one_once_finished() {
    let layout = layout_ab();
    let mem_dir = temp_dir("stream-mem");
    let (mut mem, _) = synthetic_run(&layout, 2, 14, 5);
    mem.set_duration(Duration::from_millis(13_400));
    mem.write_results(&mem_dir).unwrap();

    let dir = temp_dir("stream-file");
    let streaming = Collector::streaming(layout.clone(), synthetic_info(), &dir).unwrap();
    let (mut c, _) = synthetic_run_into(streaming, &layout, 2, 14, 5);
    c.set_duration(Duration::from_millis(13_400));
    c.write_results(&dir).unwrap();
    for file in ["intervals.jsonl", "summary.json"] {
        assert_eq!(
            fs::read(dir.join(file)).unwrap(),
            fs::read(mem_dir.join(file)).unwrap(),
            "{file}"
        );
    }
    // No scratch file is left beside them.
    let names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// A streaming collector for one step, with `seconds` seconds of 10 requests closed.
fn killed_after(dir: &std::path::Path, seconds: u64) -> Collector {
    let layout = Layout::new([("s", ["x"])]);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::streaming(layout, RunInfo::new("p", 1_000), dir).unwrap();
    for t in 0..seconds {
        for i in 0..10 {
            let rec = RequestRecord {
                latency_us: 1_000 + i,
                status: 200,
                ..Default::default()
            };
            w.record_request(0, 0, &rec);
        }
        c.add(t, w.take_snapshot());
        c.close_second(t);
    }
    c
}

#[test]
fn every_closed_second_is_on_disk_while_the_run_goes() {
    let dir = temp_dir("stream-live");
    let mut c = killed_after(&dir, 3);
    // A fourth second added but not closed is not on disk yet.
    let layout = c.layout().clone();
    let mut w = WorkerMetrics::new(&layout);
    w.record_request(0, 0, &RequestRecord::default());
    c.add(3, w.take_snapshot());

    let mut reader = IntervalsReader::open_dir(&dir).unwrap();
    assert!(reader.header().unfinished);
    assert_eq!(reader.header().duration_s, 0.0);
    let steps: Vec<u64> = reader
        .by_ref()
        .filter_map(|l| match l.unwrap() {
            onrush_results::Line::Step(s) => Some(s.t),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [0, 1, 2]);

    // What `onrush report` and `merge` see of it: the summary rebuilt from the seconds
    // written, marked interrupted, its length the seconds written.
    let rebuilt = rebuild_summary(&dir).unwrap();
    assert_eq!(rebuilt.totals.requests, 30);
    assert_eq!((rebuilt.run.seconds, rebuilt.run.duration_s), (3, 3.0));
    assert_eq!(rebuilt.totals.rps, 10.0);
    assert_eq!(rebuilt.extra.interrupted, Some(true));

    // Finishing replaces the header and adds the last second.
    c.set_duration(Duration::from_millis(3_500));
    c.write_intervals(&dir).unwrap();
    let reader = IntervalsReader::open_dir(&dir).unwrap();
    assert!(!reader.header().unfinished);
    assert_eq!(reader.header().duration_s, 3.5);
    assert_eq!(rebuild_summary(&dir).unwrap().totals.requests, 31);
    // A second closed after that still reaches the (new) file.
    let mut w = WorkerMetrics::new(&layout);
    w.record_request(0, 0, &RequestRecord::default());
    c.add(4, w.take_snapshot());
    c.close_second(4);
    assert_eq!(rebuild_summary(&dir).unwrap().totals.requests, 32);
}

#[test]
fn a_killed_run_with_a_cut_last_line_rebuilds_and_merges() {
    let dir = temp_dir("stream-killed");
    drop(killed_after(&dir, 4));
    // The kill came in the middle of a write: the last line lost its end.
    let path = dir.join("intervals.jsonl");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, &text[..text.len() - 30]).unwrap();
    let rebuilt = rebuild_summary(&dir).unwrap();
    // The last step line (second 3) is the cut one.
    assert_eq!(rebuilt.totals.requests, 30);
    assert_eq!(rebuilt.run.seconds, 4);
    let out = temp_dir("stream-killed-out");
    let merged = merge(std::slice::from_ref(&dir), &out).unwrap();
    assert_eq!(merged.totals, rebuilt.totals);
    assert!(merged.interrupted());
}

#[test]
fn merge_refuses_to_write_over_an_input() {
    let a = temp_dir("refuse-a");
    let (mut c, _) = synthetic_run(&layout_ab(), 1, 3, 9);
    c.write_results(&a).unwrap();
    let before = fs::read(a.join("summary.json")).unwrap();
    let b = temp_dir("refuse-b");
    c.write_results(&b).unwrap();
    // The same directory, also by another spelling of its name.
    let same = a.join("..").join(a.file_name().unwrap());
    for out in [a.clone(), same] {
        let err = merge(&[b.clone(), a.clone()], &out).unwrap_err();
        assert!(matches!(err, MergeError::OutIsInput { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("this is one of the directories to merge")
                && msg.contains("give another directory to --out"),
            "{msg}"
        );
    }
    assert_eq!(fs::read(a.join("summary.json")).unwrap(), before);
}

#[test]
fn a_start_moved_before_the_first_second_is_in_the_streamed_header() {
    // An open model's warm-up: the run starts 2.5 s after the collector was made. A run killed
    // from then on leaves a header with the real start, and the seconds after it.
    let dir = temp_dir("stream-delayed");
    let layout = Layout::new([("s", ["x"])]);
    let mut c = Collector::streaming(layout.clone(), RunInfo::new("p", 1_000), &dir).unwrap();
    c.delay_start(Duration::from_millis(2_500));
    let reader = IntervalsReader::open_dir(&dir).unwrap();
    assert!(reader.header().unfinished);
    assert_eq!(reader.header().start_unix_ms, 3_500);
    // Once a second is on disk the streamed header stays as it is (the final one is written
    // at the end), and the second is not lost.
    let mut w = WorkerMetrics::new(&layout);
    w.record_request(0, 0, &RequestRecord::default());
    c.add(0, w.take_snapshot());
    c.close_second(0);
    c.delay_start(Duration::from_millis(1_000));
    let mut reader = IntervalsReader::open_dir(&dir).unwrap();
    assert_eq!(reader.header().start_unix_ms, 3_500);
    let seconds = reader
        .by_ref()
        .filter(|l| matches!(l, Ok(onrush_results::Line::Step(_))))
        .count();
    assert_eq!(seconds, 1);
}
