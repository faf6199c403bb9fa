//! `generator.jsonl` (onrush watching itself, one line per second) and the verdict it leads
//! to, `summary.json` "generator". Written by the engine's monitor; the field names and order
//! here are the file's.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{json_msg, ReadError};
use crate::reader::LineSource;

/// File name of the generator's own per-second figures.
pub const GENERATOR_FILE: &str = "generator.jsonl";

/// One line of `generator.jsonl`: one second of the generator's own figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorLine {
    pub t: u64,
    /// CPU of the whole process, % of one core; null when the interval was too short to tell
    /// (the last, partial second).
    pub cpu_percent: Option<f64>,
    /// CPU of each worker thread, % of one core.
    pub worker_cpu_percent: Vec<Option<f64>>,
    pub rss_mb: f64,
    pub open_fds: u64,
    pub connections_opened: u64,
    pub schedule_lag_p50_ms: Option<f64>,
    pub schedule_lag_p99_ms: Option<f64>,
    pub schedule_lag_max_ms: Option<f64>,
    pub dropped_iterations: u64,
    pub sockets_to_targets: u64,
    pub time_wait: u64,
    /// Sockets towards the targets as a share of the local ports available for them.
    pub port_usage_percent: f64,
}

impl GeneratorLine {
    /// The line as written to `generator.jsonl` (without the line break).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a generator line always serialises")
    }
}

/// `summary.json` "generator": did the load generator keep up?
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorVerdict {
    /// `healthy` or `saturated`.
    pub verdict: String,
    /// One sentence: when it started, why, what to do.
    pub message: String,
    /// Second (from the start) the first cause appeared.
    pub saturated_from_s: Option<u64>,
    pub causes: Vec<SaturationCause>,
    pub cpu_percent_max: f64,
    pub worker_cpu_percent_max: f64,
    pub rss_mb_max: f64,
    /// The process's peak resident memory over the whole run (VmHWM), not a per-second sample.
    pub rss_mb_peak: f64,
    pub schedule_lag_p99_ms_max: Option<f64>,
    pub open_fds_max: u64,
    pub sockets_to_targets_max: u64,
    pub time_wait_max: u64,
}

impl GeneratorVerdict {
    pub fn healthy(&self) -> bool {
        self.verdict.eq_ignore_ascii_case("healthy")
    }
}

/// One of `generator.causes[]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SaturationCause {
    /// `cpu`, `schedule_lag`, `ports` or `open_files`.
    pub cause: String,
    /// Second (from the start) the cause was first seen.
    pub first_s: u64,
    pub detail: String,
    pub fix: String,
}

/// Writes `generator.jsonl` as the run goes: each line reaches the file (one `write`) when
/// it is written, so a run that is killed leaves every second it had closed.
pub struct GeneratorWriter {
    path: PathBuf,
    file: File,
    line: Vec<u8>,
}

impl GeneratorWriter {
    /// Creates (or empties) `dir/generator.jsonl`, creating `dir` when missing.
    pub fn create(dir: &Path) -> io::Result<GeneratorWriter> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(GENERATOR_FILE);
        Ok(GeneratorWriter {
            file: File::create(&path)?,
            path,
            line: Vec::new(),
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line.
    pub fn write(&mut self, line: &GeneratorLine) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, line)?;
        self.line.push(b'\n');
        self.file.write_all(&self.line)
    }
}

/// Streaming reader of a `generator.jsonl` (no header: the file has none); errors name the
/// file and line. A last line cut short (no line break, does not parse: the run was killed
/// while writing it) is skipped, as in `intervals.jsonl`.
pub struct GeneratorReader<R = BufReader<File>> {
    src: LineSource<R>,
    cut_line: Option<usize>,
}

impl GeneratorReader {
    /// Opens `path` (a `generator.jsonl`).
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let file = File::open(path).map_err(|e| ReadError::io(path, e))?;
        Ok(GeneratorReader::new(path, BufReader::new(file)))
    }
}

impl<R: BufRead> GeneratorReader<R> {
    /// Reads lines from `input`; `path` names the file in errors.
    pub fn new(path: impl Into<PathBuf>, input: R) -> Self {
        GeneratorReader {
            src: LineSource::new(path.into(), input),
            cut_line: None,
        }
    }

    /// Number of the last line when it was cut short and skipped.
    pub fn cut_line(&self) -> Option<usize> {
        self.cut_line
    }

    /// The next line; `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<GeneratorLine>, ReadError> {
        if !self.src.advance()? {
            return Ok(None);
        }
        match serde_json::from_str(self.src.text()) {
            Ok(line) => Ok(Some(line)),
            Err(_) if !self.src.terminated() => {
                self.cut_line = Some(self.src.line_no());
                Ok(None)
            }
            Err(e) => Err(self.src.error(json_msg(&e))),
        }
    }
}

impl<R: BufRead> Iterator for GeneratorReader<R> {
    type Item = Result<GeneratorLine, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_line().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips_with_the_documented_field_order() {
        let line = GeneratorLine {
            t: 3,
            cpu_percent: Some(99.0),
            worker_cpu_percent: vec![Some(99.0), None],
            rss_mb: 14.2,
            open_fds: 61,
            connections_opened: 0,
            schedule_lag_p50_ms: Some(210.4),
            schedule_lag_p99_ms: Some(402.1),
            schedule_lag_max_ms: None,
            dropped_iterations: 0,
            sockets_to_targets: 50,
            time_wait: 0,
            port_usage_percent: 0.2,
        };
        let text = line.to_json();
        assert_eq!(
            text,
            r#"{"t":3,"cpu_percent":99.0,"worker_cpu_percent":[99.0,null],"rss_mb":14.2,"open_fds":61,"connections_opened":0,"schedule_lag_p50_ms":210.4,"schedule_lag_p99_ms":402.1,"schedule_lag_max_ms":null,"dropped_iterations":0,"sockets_to_targets":50,"time_wait":0,"port_usage_percent":0.2}"#
        );
        let file = format!("{text}\n\n{text}\n{{\"t\":\n");
        let mut r = GeneratorReader::new("g/generator.jsonl", file.as_bytes());
        assert_eq!(r.next().unwrap().unwrap(), line);
        assert_eq!(r.next().unwrap().unwrap(), line);
        let e = r.next().unwrap().unwrap_err().to_string();
        assert!(
            e.starts_with("g/generator.jsonl:4: EOF while parsing"),
            "{e}"
        );
        // The same line without its line break is a write cut short by a kill: skipped.
        let cut = format!("{text}\n{}", &text[..20]);
        let mut r = GeneratorReader::new("g/generator.jsonl", cut.as_bytes());
        assert_eq!(r.next().unwrap().unwrap(), line);
        assert!(r.next().is_none());
        assert_eq!(r.cut_line(), Some(2));
    }

    #[test]
    fn the_writer_puts_each_line_on_disk_as_it_is_written() {
        let dir = std::env::temp_dir().join(format!("onrush-gen-writer-{}", std::process::id()));
        let mut w = GeneratorWriter::create(&dir).unwrap();
        let line = GeneratorLine {
            t: 0,
            ..Default::default()
        };
        w.write(&line).unwrap();
        // Read while the writer is still open: nothing is held back in a buffer.
        let lines: Vec<GeneratorLine> = GeneratorReader::open(w.path())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(lines, [line]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
