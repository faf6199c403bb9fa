//! The live page's two needs from a run still going (onrush-live serves them): the page itself,
//! which is the report of the results directory so far ([`render_live_page`]: the same page
//! `report.html` is, so the live view and the report cannot disagree), and the seconds closed
//! since the page was drawn ([`live_chunk`]: the same series, read from `intervals.jsonl` by
//! the same code, from a byte offset so that a poll reads only the new seconds).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use onrush_results::IntervalsReader;
use serde::Serialize;

use crate::data::{series_columns, step_series, Column, StepSeries};
use crate::intervals::read_lines;
use crate::{render_report_with, ReportError, ReportOptions};

/// The live page: the report of `dir` as it is now, marked live (its script then polls the
/// live server for new seconds and for the run's status, and shows the controls).
pub fn render_live_page(dir: &Path) -> Result<String, ReportError> {
    render_report_with(
        dir,
        &ReportOptions {
            live: true,
            ..ReportOptions::default()
        },
    )
}

#[derive(Serialize)]
struct Chunk<'a> {
    /// The second of index 0.
    from: u64,
    seconds: usize,
    series: std::collections::BTreeMap<String, Column<'a>>,
    step_series: Vec<StepSeries<'a>>,
}

/// The per-second series (as the page's embedded data has them) of the seconds from
/// `from_second` on, reading `intervals` from byte `offset` (the start of that second's lines,
/// or any earlier line start), as JSON: `{from, seconds, series, step_series}`.
pub fn live_chunk(intervals: &Path, offset: u64, from_second: u64) -> Result<String, ReportError> {
    let mut file = File::open(intervals).map_err(|e| ReportError::io(intervals, e))?;
    // The header (the first line) says the layout; then the lines from `offset`.
    let mut header = Vec::new();
    BufReader::new(&mut file)
        .read_until(b'\n', &mut header)
        .map_err(|e| ReportError::io(intervals, e))?;
    let offset = offset.max(header.len() as u64);
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| ReportError::io(intervals, e))?;
    let input = BufReader::new(std::io::Cursor::new(header).chain(file));
    let lines = IntervalsReader::new(intervals, input)
        .map_err(|e| ReportError::parse(e.path(), e.line().unwrap_or(1), e.message()))?;
    let series = read_lines(lines, &[], from_second)?;
    let chunk = Chunk {
        from: from_second,
        seconds: series.seconds,
        series: series_columns(&series),
        step_series: step_series(&series),
    };
    Ok(serde_json::to_string(&chunk).expect("a chunk always serialises"))
}
