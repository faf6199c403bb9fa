//! `--samples FILE`: one CSV line per request, for those who post-process raw results (what
//! JMeter's `.jtl` and k6's `--out csv` give). docs/results.md, "Samples".
//!
//! Each worker formats its lines into a buffer of its own and appends whole buffers (64 KiB,
//! and at each per-second snapshot) to the one file, opened `O_APPEND` by every worker: a
//! write of an `O_APPEND` file is one append under the file's lock on Linux's local file
//! systems, so lines never interleave mid-line, nothing is locked or sent between threads per
//! request, and a killed run loses at most its last second. Lines are in time order within a
//! worker's buffer, not across workers. CSV, not JSON lines: no key repeated per request
//! (about half the bytes), and what JMeter's and k6's users load into their tools already.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::record::{Layout, RequestRecord};

/// The header line of a samples file.
pub const SAMPLES_HEADER: &str =
    "timestamp_ms,scenario,step,status,failure,latency_us,bytes_in,bytes_out,vu,iteration\n";

/// A buffer flushed to the file once it holds this much.
const FLUSH_AT: usize = 64 * 1024;

/// Creates (or truncates) `path` and writes the header: once per run, before the workers
/// open it with [`SampleWriter::open`].
pub fn create_samples_file(path: &Path) -> io::Result<()> {
    std::fs::write(path, SAMPLES_HEADER)
}

/// One worker's writer of the samples file.
pub struct SampleWriter {
    path: PathBuf,
    file: Option<File>,
    buf: Vec<u8>,
    /// Per scenario, per step: `scenario,step,` as CSV fields, made once.
    names: Vec<Vec<Box<[u8]>>>,
}

impl SampleWriter {
    /// Opens `path` (made by [`create_samples_file`]) for appending, with the names of
    /// `layout`'s scenarios and steps.
    pub fn open(path: &Path, layout: &Layout) -> io::Result<Self> {
        let file = OpenOptions::new().append(true).open(path)?;
        let names = layout
            .scenarios
            .iter()
            .map(|s| {
                s.steps
                    .iter()
                    .map(|step| {
                        let mut f = Vec::new();
                        csv_field(&mut f, &s.name);
                        f.push(b',');
                        csv_field(&mut f, step);
                        f.push(b',');
                        f.into_boxed_slice()
                    })
                    .collect()
            })
            .collect();
        Ok(SampleWriter {
            path: path.to_path_buf(),
            file: Some(file),
            buf: Vec::with_capacity(FLUSH_AT + 512),
            names,
        })
    }

    /// Appends the line of one request of `step` of `scenario`, run by VU `vu` in its
    /// iteration `iteration`; its time is its start (now less its latency).
    pub fn write(
        &mut self,
        scenario: usize,
        step: usize,
        r: &RequestRecord,
        vu: u64,
        iteration: u64,
    ) {
        let now_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let mut n = itoa::Buffer::new();
        let b = &mut self.buf;
        b.extend_from_slice(
            n.format(now_us.saturating_sub(r.latency_us) / 1000)
                .as_bytes(),
        );
        b.push(b',');
        b.extend_from_slice(&self.names[scenario][step]);
        b.extend_from_slice(n.format(r.status).as_bytes());
        b.push(b',');
        if let Some(class) = r.failure {
            b.extend_from_slice(class.as_str().as_bytes());
        }
        for v in [r.latency_us, r.bytes_in, r.bytes_out, vu, iteration] {
            b.push(b',');
            b.extend_from_slice(n.format(v).as_bytes());
        }
        b.push(b'\n');
        if b.len() >= FLUSH_AT {
            self.flush();
        }
    }

    /// Appends what is buffered to the file (whole lines, one write). A failed write is said
    /// once and ends the writing: the run goes on, its figures are not the samples'.
    pub fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        if let Some(f) = &mut self.file {
            if let Err(e) = f.write_all(&self.buf) {
                eprintln!(
                    "warning: writing samples to {}: {e}; no more samples are written",
                    self.path.display()
                );
                self.file = None;
            }
        }
        self.buf.clear();
    }
}

impl Drop for SampleWriter {
    fn drop(&mut self) {
        self.flush();
    }
}

impl crate::WorkerMetrics {
    /// Writes a line per request to `writer` from now on (`--samples`; see [`sample`](Self::sample)).
    pub fn set_samples(&mut self, writer: SampleWriter) {
        self.samples = Some(Box::new(writer));
    }

    /// The samples line of one request, when samples are on (one test of an `Option` when off).
    #[inline]
    pub fn sample(
        &mut self,
        scenario: usize,
        step: usize,
        r: &RequestRecord,
        vu: u64,
        iteration: u64,
    ) {
        if let Some(s) = &mut self.samples {
            s.write(scenario, step, r, vu, iteration);
        }
    }
}

/// `text` as a CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
fn csv_field(out: &mut Vec<u8>, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        out.extend_from_slice(text.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FailureClass, WorkerMetrics};

    #[test]
    fn workers_append_whole_lines_with_names_quoted() {
        let dir = std::env::temp_dir().join(format!("onrush-samples-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.csv");
        create_samples_file(&path).unwrap();
        let layout = Layout::new([("shop, main", ["say \"hi\""])]);
        let mut workers: Vec<WorkerMetrics> = (0..2)
            .map(|_| {
                let mut m = WorkerMetrics::new(&layout);
                m.set_samples(SampleWriter::open(&path, &layout).unwrap());
                m
            })
            .collect();
        let r = RequestRecord {
            latency_us: 1500,
            status: 500,
            bytes_in: 10,
            bytes_out: 20,
            failure: Some(FailureClass::UnexpectedStatus),
            ..Default::default()
        };
        for i in 0..3000 {
            workers[i % 2].sample(0, 0, &r, 7, i as u64);
        }
        let _ = workers[0].take_snapshot(); // flushes
        drop(workers);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(SAMPLES_HEADER.trim_end()));
        let rest: Vec<&str> = lines.collect();
        assert_eq!(rest.len(), 3000);
        let fields: Vec<&str> = rest[0].splitn(2, ',').collect();
        assert!(fields[0].parse::<u64>().unwrap() > 1_700_000_000_000);
        assert!(
            fields[1].starts_with(
                "\"shop, main\",\"say \"\"hi\"\"\",500,unexpected_status,1500,10,20,7,"
            ),
            "{}",
            rest[0]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
