//! [`DataError`]: what is wrong with a data file, where, and how to fix it.

use std::fmt;
use std::path::{Path, PathBuf};

/// A data file that cannot be used: the file, the place in it and a message that says what is
/// wrong and how to fix it.
///
/// `Display` gives `PATH: line L: MESSAGE` (`PATH: line L, column C: MESSAGE` for JSON syntax
/// errors, `PATH: MESSAGE` when no line applies), e.g.
/// `users.csv: line 17: 4 fields but the header has 3; expected 3 fields (quote fields that
/// contain the delimiter)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    /// The file (or the name given to [`crate::Table::from_bytes`]).
    pub path: PathBuf,
    /// 1-based physical line where the bad row (or the JSON error) starts, when one applies.
    pub line: Option<usize>,
    /// 1-based column (JSON syntax errors only, from serde_json).
    pub column: Option<usize>,
    /// What is wrong and how to fix it (without the path and line).
    pub message: String,
}

impl DataError {
    pub(crate) fn new(path: &Path, line: Option<usize>, message: impl Into<String>) -> DataError {
        DataError {
            path: path.to_path_buf(),
            line,
            column: None,
            message: message.into(),
        }
    }

    pub(crate) fn at(path: &Path, line: usize, message: impl Into<String>) -> DataError {
        DataError::new(path, Some(line), message)
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path.display())?;
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: ")?,
            (Some(l), None) => write!(f, "line {l}: ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for DataError {}
