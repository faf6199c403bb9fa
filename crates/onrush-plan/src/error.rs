//! `PlanError`: what users see when a plan is wrong.
//!
//! Format (Display):
//!
//! ```text
//! plan.yaml:12:18: scenarios[0].load.vus: expected a positive integer, found "abc"
//!    |
//! 12 |     load: { vus: abc, iterations: 25 }
//!    |                  ^^^
//!   hint: write a whole number of virtual users, e.g. `vus: 10`
//! ```

use std::fmt;
use std::ops::Range;

/// An error in a plan file: where (file, line, column, field path), what is wrong and how to fix it.
#[derive(Clone, PartialEq, Eq)]
pub struct PlanError {
    inner: Box<Inner>,
}

#[derive(Clone, PartialEq, Eq)]
struct Inner {
    source: String,
    line: Option<usize>,
    column: Option<usize>,
    field: String,
    message: String,
    hint: Option<String>,
    snippet: Option<String>,
}

impl PlanError {
    /// An error without a position in the file (I/O, `-D` overrides).
    pub fn plain(source: &str, field: &str, message: impl Into<String>) -> Self {
        PlanError {
            inner: Box::new(Inner {
                source: source.to_string(),
                line: None,
                column: None,
                field: field.to_string(),
                message: message.into(),
                hint: None,
                snippet: None,
            }),
        }
    }

    /// An error at a byte range of `text` (a file the plan names, such as an IDL, has its
    /// own source and text).
    pub fn at(
        source: &str,
        text: &str,
        span: Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> Self {
        let (line, column, snippet) = locate(text, span);
        PlanError {
            inner: Box::new(Inner {
                source: source.to_string(),
                line: Some(line),
                column: Some(column),
                field: field.to_string(),
                message: message.into(),
                hint: None,
                snippet: Some(snippet),
            }),
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        let hint = hint.into();
        if !hint.is_empty() {
            self.inner.hint = Some(hint);
        }
        self
    }

    pub(crate) fn with_opt_hint(self, hint: Option<String>) -> Self {
        match hint {
            Some(h) => self.with_hint(h),
            None => self,
        }
    }

    /// 1-based line of the problem, when it has a place in the file.
    pub fn line(&self) -> Option<usize> {
        self.inner.line
    }

    /// 1-based column (in characters) of the problem, when it has a place in the file.
    pub fn column(&self) -> Option<usize> {
        self.inner.column
    }

    /// The file name as given to `load_with_grammars`/`load_str_with_grammars`.
    pub fn source_name(&self) -> &str {
        &self.inner.source
    }

    /// Path of the field in the plan, e.g. `scenarios[1].steps[0].get`; empty for file-level problems.
    pub fn field(&self) -> &str {
        &self.inner.field
    }

    /// What is wrong and what was expected (one line).
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// How to fix it, when there is a known fix.
    pub fn hint(&self) -> Option<&str> {
        self.inner.hint.as_deref()
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        write!(f, "{}", i.source)?;
        if let (Some(l), Some(c)) = (i.line, i.column) {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": ")?;
        if !i.field.is_empty() {
            write!(f, "{}: ", i.field)?;
        }
        write!(f, "{}", i.message)?;
        if let Some(s) = &i.snippet {
            write!(f, "\n{s}")?;
        }
        if let Some(h) = &i.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for PlanError {}

/// Line (1-based), column (1-based, characters) and a source snippet with carets.
fn locate(text: &str, span: Range<usize>) -> (usize, usize, String) {
    let start = floor_char(text, span.start.min(text.len()));
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_no = text[..start].matches('\n').count() + 1;
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line_text = text[line_start..line_end].trim_end_matches('\r');
    let col = text[line_start..start].chars().count() + 1;
    let end = floor_char(text, span.end.clamp(start, line_end.max(start)));
    let width = text[start..end].trim_end().chars().count().max(1);
    let shown: String = line_text
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .take(200)
        .collect();
    let caret_col = (col - 1).min(shown.chars().count());
    let width = width.min(200usize.saturating_sub(caret_col).max(1));
    let gutter = line_no.to_string().len();
    let pad = " ".repeat(gutter);
    let snippet = format!(
        "{pad} |\n{line_no} | {shown}\n{pad} | {}{}",
        " ".repeat(caret_col),
        "^".repeat(width)
    );
    (line_no, col, snippet)
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub use onrush_units::{did_you_mean, one_of};
