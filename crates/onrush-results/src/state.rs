//! How a results directory was left. `onrush run` writes `intervals.jsonl` and
//! `generator.jsonl` as it goes and `summary.json` at the end, so a run that was killed
//! (SIGKILL, a crash, a second Ctrl-C) leaves its seconds without a summary, and its header
//! still marked `unfinished`, maybe with a last line cut short. The commands that read a
//! directory (report, merge, export) print these notes before reading it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::ReadError;
use crate::lines::Line;
use crate::reader::IntervalsReader;
use crate::{INTERVALS_FILE, SUMMARY_FILE};

/// What [`inspect_dir`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirState {
    pub dir: PathBuf,
    pub has_summary: bool,
    pub has_intervals: bool,
    /// The header of `intervals.jsonl` still says the run is going: it was killed, or it is
    /// still running.
    pub unfinished: bool,
    /// Number of the last line of `intervals.jsonl` when it is cut short (readers skip it).
    pub cut_line: Option<usize>,
}

impl DirState {
    /// One sentence per thing a reader of the directory should know, naming the file; empty
    /// for the directory of a run that ended normally. About the summary, see
    /// [`summary_note`](Self::summary_note).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.unfinished {
            notes.push(format!(
                "{}: the run did not finish (it was killed, or is still running): its figures \
                 cover the seconds it wrote",
                self.dir.display()
            ));
        }
        if let Some(line) = self.cut_line {
            notes.push(format!(
                "{}:{line}: the last line is cut short (the run was killed while writing it): \
                 skipped",
                self.dir.join(INTERVALS_FILE).display()
            ));
        }
        notes
    }

    /// For a command that reads the summary: that there is none, so it is rebuilt from
    /// `intervals.jsonl`.
    pub fn summary_note(&self) -> Option<String> {
        (self.has_intervals && !self.has_summary).then(|| {
            format!(
                "{}: no summary.json: the summary is rebuilt from intervals.jsonl (without what \
                 only the end of a run writes: the generator's verdict, the thresholds)",
                self.dir.display()
            )
        })
    }
}

/// Looks at `dir` without reading it through: whether `summary.json` and `intervals.jsonl`
/// exist, the header's `unfinished` mark, and whether the last line is cut short (the file is
/// scanned for line breaks, its lines are not parsed). A directory without `intervals.jsonl`
/// is no error here: the command reading it says what is missing.
pub fn inspect_dir(dir: &Path) -> Result<DirState, ReadError> {
    let path = dir.join(INTERVALS_FILE);
    let mut state = DirState {
        dir: dir.to_path_buf(),
        has_summary: dir.join(SUMMARY_FILE).is_file(),
        has_intervals: path.is_file(),
        ..DirState::default()
    };
    if !state.has_intervals {
        return Ok(state);
    }
    state.unfinished = IntervalsReader::open(&path)?.header().unfinished;
    state.cut_line = cut_last_line(&path).map_err(|e| ReadError::io(&path, e))?;
    Ok(state)
}

/// The number of the last line of `path` when it has no line break and does not parse as a
/// line: what [`IntervalsReader`] skips.
fn cut_last_line(path: &Path) -> std::io::Result<Option<usize>> {
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let (mut breaks, mut last_break, mut pos) = (0usize, None, 0u64);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        for (i, _) in buf[..n].iter().enumerate().filter(|(_, &b)| b == b'\n') {
            breaks += 1;
            last_break = Some(pos + i as u64);
        }
        pos += n as u64;
    }
    let tail_start = last_break.map_or(0, |b| b + 1);
    if tail_start >= pos {
        return Ok(None);
    }
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(tail_start))?;
    file.read_to_end(&mut tail)?;
    let text = String::from_utf8_lossy(&tail);
    if text.trim().is_empty() || serde_json::from_str::<Line>(text.trim_end_matches('\r')).is_ok() {
        return Ok(None);
    }
    Ok(Some(breaks + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::{Header, LayoutScenario, ScenarioLine};

    fn write_dir(name: &str, header: Header, tail: &str, summary: bool) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("onrush-state-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let second = Line::Scenario(ScenarioLine {
            scenario: "s".into(),
            ..Default::default()
        });
        let text = format!(
            "{}\n{}\n{tail}",
            Line::Header(header).to_json(),
            second.to_json()
        );
        std::fs::write(dir.join(INTERVALS_FILE), text).unwrap();
        if summary {
            std::fs::write(dir.join(SUMMARY_FILE), "{}").unwrap();
        }
        dir
    }

    fn header(unfinished: bool) -> Header {
        let layout = vec![LayoutScenario {
            scenario: "s".into(),
            ..Default::default()
        }];
        Header {
            unfinished,
            ..Header::new("p", 0, 0.0, layout, None)
        }
    }

    #[test]
    fn a_killed_run_is_unfinished_without_summary_and_its_cut_line_found() {
        let dir = write_dir("killed", header(true), r#"{"kind":"step","t":1,"sc"#, false);
        let state = inspect_dir(&dir).unwrap();
        assert!(state.unfinished && !state.has_summary && state.has_intervals);
        assert_eq!(state.cut_line, Some(3));
        let notes = state.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("the run did not finish"), "{notes:?}");
        let summary = state.summary_note().unwrap();
        assert!(
            summary.contains("no summary.json: the summary is rebuilt"),
            "{summary}"
        );
        assert!(
            notes[1].ends_with(
                "intervals.jsonl:3: the last line is cut short (the run was killed while \
                 writing it): skipped"
            ),
            "{notes:?}"
        );
        // The reader skips the very line the note names.
        let mut reader = IntervalsReader::open_dir(&dir).unwrap();
        assert_eq!(reader.by_ref().count(), 1);
        assert_eq!(reader.cut_line(), state.cut_line);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_finished_run_has_no_notes() {
        let dir = write_dir("finished", header(false), "", true);
        let state = inspect_dir(&dir).unwrap();
        assert_eq!(state.cut_line, None);
        assert!(state.notes().is_empty(), "{:?}", state.notes());
        assert_eq!(state.summary_note(), None);
        // A complete last line without its line break is not cut.
        let dir2 = write_dir("nolf", header(false), r#"{"kind":"scenario","t":1}"#, true);
        assert_eq!(inspect_dir(&dir2).unwrap().cut_line, None);
        // No intervals.jsonl: nothing to say here (the reading command reports it).
        std::fs::remove_file(dir2.join(INTERVALS_FILE)).unwrap();
        assert!(inspect_dir(&dir2).unwrap().notes().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&dir2).unwrap();
    }
}
