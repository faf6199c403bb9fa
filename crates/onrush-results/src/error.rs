//! Why a result file could not be read: every error names the file, and the line when there
//! is one.

use std::io;
use std::path::{Path, PathBuf};

/// An error reading `intervals.jsonl`, `summary.json` or `generator.jsonl`.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// A line (or, for `summary.json`, the document at `line`) is not what the format says.
    #[error("{}:{line}: {msg}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        msg: String,
    },
    /// The file is of a format version this onrush does not read.
    #[error("{}{}: {}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default(), crate::version::mismatch_message(*found, *supported))]
    Version {
        path: PathBuf,
        /// The line holding the version (1 in `intervals.jsonl`), `None` for `summary.json`.
        line: Option<usize>,
        found: u32,
        supported: u32,
    },
}

impl ReadError {
    pub(crate) fn parse(path: &Path, line: usize, msg: impl Into<String>) -> ReadError {
        ReadError::Parse {
            path: path.to_path_buf(),
            line,
            msg: msg.into(),
        }
    }

    pub(crate) fn io(path: &Path, source: io::Error) -> ReadError {
        ReadError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The file at fault.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. }
            | ReadError::Parse { path, .. }
            | ReadError::Version { path, .. } => path,
        }
    }

    /// The line at fault, when there is one.
    pub fn line(&self) -> Option<usize> {
        match self {
            ReadError::Io { .. } => None,
            ReadError::Parse { line, .. } => Some(*line),
            ReadError::Version { line, .. } => *line,
        }
    }

    /// What is wrong, without the file and line (for callers with their own error types).
    pub fn message(&self) -> String {
        match self {
            ReadError::Io { source, .. } => source.to_string(),
            ReadError::Parse { msg, .. } => msg.clone(),
            ReadError::Version {
                found, supported, ..
            } => crate::version::mismatch_message(*found, *supported),
        }
    }
}

/// "message (column N)" from a serde_json error, whose own text ends in "at line L column C"
/// (the line is already in the error's place).
pub(crate) fn json_msg(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let core = s.rfind(" at line ").map_or(s.as_str(), |i| &s[..i]);
    if e.column() > 0 {
        format!("{core} (column {})", e.column())
    } else {
        core.to_string()
    }
}
