//! Where the collector's lines of `intervals.jsonl` go.
//!
//! * In memory ([`Collector::new`](crate::Collector::new)): for tests and programs that write
//!   the results once at the end; memory grows with the run.
//! * Into the results directory as each second closes
//!   ([`Collector::streaming`](crate::Collector::streaming), what `onrush run` does): a
//!   second's lines reach the file in one `write` when it closes, so a run that is killed
//!   leaves every second it had closed, and memory does not grow with the run. The header is
//!   written first marked `unfinished` (its `duration_s` is not known yet) and replaced at the
//!   end by the final one; the file is then exactly what the in-memory collector writes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use onrush_results::{Header, Line, INTERVALS_FILE};

/// `header` marked unfinished (no `duration_s` yet), as a line.
fn unfinished_header(header: &Header) -> Vec<u8> {
    let header = Header {
        unfinished: true,
        duration_s: 0.0,
        ..header.clone()
    };
    let mut text = Line::Header(header).to_json().into_bytes();
    text.push(b'\n');
    text
}

pub(crate) enum Spool {
    Memory(Vec<String>),
    File(FileSpool),
}

pub(crate) struct FileSpool {
    /// `DIR/intervals.jsonl`.
    path: PathBuf,
    file: File,
    /// The lines of the second being closed.
    second: Vec<u8>,
    /// The first write that failed; nothing is written after it (a file with a second missing
    /// in the middle would look complete).
    error: Option<io::Error>,
    /// No second has been written yet: the file is its header alone.
    header_only: bool,
}

impl Spool {
    /// A spool appending to `dir/intervals.jsonl` (created, with `dir` when missing), which
    /// starts with `header` marked unfinished.
    pub fn file(dir: &Path, header: &Header) -> io::Result<Spool> {
        fs::create_dir_all(dir)?;
        let path = dir.join(INTERVALS_FILE);
        let mut file = File::create(&path)?;
        file.write_all(&unfinished_header(header))?;
        Ok(Spool::File(FileSpool {
            path,
            file,
            second: Vec::new(),
            error: None,
            header_only: true,
        }))
    }

    /// Writes the unfinished header again, as `header` now says (the run's start moved before
    /// its first second: an open model's warm-up). Only while the file holds its header alone;
    /// later, the final header at the end corrects it.
    pub fn rewrite_header(&mut self, header: &Header) -> io::Result<()> {
        if let Spool::File(f) = self {
            if f.header_only && f.error.is_none() {
                f.file.set_len(0)?;
                f.file.seek(SeekFrom::Start(0))?;
                f.file.write_all(&unfinished_header(header))?;
            }
        }
        Ok(())
    }

    /// Adds a line of the second being closed.
    pub fn push(&mut self, line: &Line) {
        match self {
            Spool::Memory(lines) => lines.push(line.to_json()),
            Spool::File(f) => {
                if f.error.is_none() {
                    serde_json::to_writer(&mut f.second, line).expect("interval lines serialise");
                    f.second.push(b'\n');
                }
            }
        }
    }

    /// The second being closed is complete: its lines go to the file.
    pub fn end_second(&mut self) {
        if let Spool::File(f) = self {
            if f.error.is_none() && !f.second.is_empty() {
                f.header_only = false;
                if let Err(e) = f.file.write_all(&f.second) {
                    f.error = Some(e);
                }
            }
            f.second.clear();
        }
    }

    /// Why the file stopped being written, if it did.
    pub fn error(&self) -> Option<&io::Error> {
        match self {
            Spool::File(f) => f.error.as_ref(),
            Spool::Memory(_) => None,
        }
    }

    /// Writes `dir/intervals.jsonl`: `header`, then every line so far. For a file spool whose
    /// file that is, the header is replaced; lines of seconds closed later are appended to it.
    pub fn write_to(&mut self, dir: &Path, header: &Header) -> io::Result<()> {
        fs::create_dir_all(dir)?;
        let dst = dir.join(INTERVALS_FILE);
        let header = Line::Header(header.clone()).to_json();
        match self {
            Spool::Memory(lines) => atomically(&dst, |w| {
                writeln!(w, "{header}")?;
                for l in lines.iter() {
                    w.write_all(l.as_bytes())?;
                    w.write_all(b"\n")?;
                }
                Ok(())
            }),
            Spool::File(f) => {
                if let Some(e) = &f.error {
                    return Err(io::Error::new(e.kind(), e.to_string()));
                }
                let same = same_file(&dst, &f.file);
                let mut src = BufReader::with_capacity(64 * 1024, File::open(&f.path)?);
                let mut old_header = Vec::new();
                src.read_until(b'\n', &mut old_header)?;
                atomically(&dst, |w| {
                    writeln!(w, "{header}")?;
                    io::copy(&mut src, w).map(drop)
                })?;
                if same {
                    // The rename put a new file in the old one's place: append to it from now.
                    f.file = OpenOptions::new().append(true).open(&f.path)?;
                }
                Ok(())
            }
        }
    }
}

/// Whether `path` is the file `file` has open.
fn same_file(path: &Path, file: &File) -> bool {
    match (fs::metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Writes `path` through a scratch file beside it and a rename: a reader (or a kill) sees the
/// old file or the new one, never a part.
fn atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let scratch = onrush_results::scratch_path(path);
    let result = File::create(&scratch).and_then(|f| {
        let mut w = BufWriter::with_capacity(64 * 1024, f);
        write(&mut w)?;
        w.flush()?;
        drop(w);
        fs::rename(&scratch, path)
    });
    if result.is_err() {
        let _ = fs::remove_file(&scratch);
    }
    result
}
