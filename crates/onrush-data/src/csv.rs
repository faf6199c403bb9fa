//! The CSV scanner: one quote-aware record parser used both to validate and index the file at
//! load time and to split one row into fields when it is picked.

use std::path::Path;

use memchr::{memchr, memchr2, memchr_iter};

use crate::error::DataError;
use crate::index::RowIndex;

/// Why one record could not be parsed.
#[derive(Debug)]
pub(crate) enum RecordError {
    /// A quoted field opened on `open_line` is never closed.
    Unterminated { open_line: usize },
    /// Text follows the closing quote of field `field` (1-based) on `line`.
    AfterQuote { line: usize, field: usize },
}

/// Parses one record that starts at `pos`.
///
/// Calls `emit(field_index, value)` for each field when `EMIT` (values unescaped; a field with
/// doubled quotes is unescaped into `scratch`). `line` is the physical line at `pos` and is
/// advanced past every newline consumed. Returns `(fields, next_record_start)`.
///
/// Never panics: every index is checked against `buf.len()`.
#[inline]
pub(crate) fn parse_record<const EMIT: bool>(
    buf: &[u8],
    mut pos: usize,
    delim: u8,
    line: &mut usize,
    scratch: &mut Vec<u8>,
    emit: &mut dyn FnMut(usize, &[u8]),
) -> Result<(usize, usize), RecordError> {
    let len = buf.len();
    let mut field = 0usize;
    loop {
        if pos < len && buf[pos] == b'"' {
            // Quoted field: runs to the next quote that is not doubled.
            let open_line = *line;
            let start = pos + 1;
            let mut p = start;
            let mut escaped = false;
            let end = loop {
                match memchr2(b'"', b'\n', buf.get(p..).unwrap_or(&[])) {
                    None => return Err(RecordError::Unterminated { open_line }),
                    Some(k) => {
                        let q = p + k;
                        if buf[q] == b'\n' {
                            *line += 1;
                            p = q + 1;
                        } else if buf.get(q + 1) == Some(&b'"') {
                            escaped = true;
                            p = q + 2;
                        } else {
                            p = q + 1;
                            break q;
                        }
                    }
                }
            };
            if EMIT {
                let raw = &buf[start..end];
                if escaped {
                    unescape(raw, scratch);
                    emit(field, scratch);
                } else {
                    emit(field, raw);
                }
            }
            field += 1;
            // After the closing quote: a delimiter, the end of the record or the end of file.
            match buf.get(p) {
                None => return Ok((field, len)),
                Some(&c) if c == delim => pos = p + 1,
                Some(b'\n') => {
                    *line += 1;
                    return Ok((field, p + 1));
                }
                Some(b'\r') if buf.get(p + 1) == Some(&b'\n') => {
                    *line += 1;
                    return Ok((field, p + 2));
                }
                Some(b'\r') if p + 1 == len => return Ok((field, len)),
                Some(_) => return Err(RecordError::AfterQuote { line: *line, field }),
            }
        } else {
            // Unquoted field: runs to the next delimiter or newline (a quote inside is literal).
            let rest = buf.get(pos..).unwrap_or(&[]);
            match memchr2(delim, b'\n', rest) {
                Some(k) if rest[k] == delim => {
                    if EMIT {
                        emit(field, &rest[..k]);
                    }
                    field += 1;
                    pos += k + 1;
                }
                Some(k) => {
                    if EMIT {
                        emit(field, strip_cr(&rest[..k]));
                    }
                    *line += 1;
                    return Ok((field + 1, pos + k + 1));
                }
                None => {
                    if EMIT {
                        emit(field, strip_cr(rest));
                    }
                    return Ok((field + 1, len));
                }
            }
        }
    }
}

#[inline]
fn strip_cr(v: &[u8]) -> &[u8] {
    match v.split_last() {
        Some((b'\r', head)) => head,
        _ => v,
    }
}

/// `a""b` → `a"b`, into `out` (cleared first).
fn unescape(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(raw.len());
    let mut rest = raw;
    while let Some(k) = memchr(b'"', rest) {
        out.extend_from_slice(&rest[..=k]);
        // Skip the second quote of the pair (a lone quote cannot occur in a closed field).
        rest = rest.get(k + 2..).unwrap_or(&[]);
    }
    out.extend_from_slice(rest);
}

/// Describes a delimiter byte for messages: `','`, `'\t'`, `';'`.
pub(crate) fn show_delim(d: u8) -> String {
    match d {
        b'\t' => "'\\t' (tab)".to_string(),
        b' ' => "' ' (space)".to_string(),
        _ => format!("'{}'", d as char),
    }
}

/// A parsed CSV file: column names and the start offset of every data row in `buf`.
pub(crate) struct Parsed {
    pub columns: Vec<String>,
    pub rows: RowIndex,
}

/// Validates `buf` (already checked to be UTF-8) and indexes its rows.
pub(crate) fn index(path: &Path, buf: &[u8], delim: u8) -> Result<Parsed, DataError> {
    if delim >= 0x80 || matches!(delim, b'"' | b'\n' | b'\r') {
        return Err(DataError::new(
            path,
            None,
            format!(
                "invalid delimiter byte 0x{delim:02x}: the delimiter must be one ASCII character \
                 other than '\"', CR and LF (e.g. ',', ';' or '\\t')"
            ),
        ));
    }
    let len = buf.len();
    let mut pos = if buf.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut line = 1usize;
    let record_err = |e: RecordError, row_line: usize| -> DataError {
        match e {
            RecordError::Unterminated { open_line } => DataError::at(
                path,
                row_line,
                format!(
                    "unterminated quote: the quoted field that opens on line {open_line} is \
                     never closed; add the closing '\"' (and write a '\"' inside a quoted field \
                     as '\"\"')"
                ),
            ),
            RecordError::AfterQuote { line, field } => DataError::at(
                path,
                row_line,
                format!(
                    "field {field} has text after its closing quote (on line {line}); a quoted \
                     field must end with '\"' right before the delimiter or the end of the line, \
                     and a '\"' inside it must be doubled ('\"\"')"
                ),
            ),
        }
    };

    // Header.
    if buf[pos..].iter().all(|b| b.is_ascii_whitespace()) {
        return Err(DataError::new(
            path,
            None,
            "the file is empty: expected a header row with the column names on line 1 \
             (e.g. `user,password`), then one data row per line",
        ));
    }
    let mut names: Vec<String> = Vec::new();
    let mut scratch = Vec::new();
    let (_, next) = parse_record::<true>(buf, pos, delim, &mut line, &mut scratch, &mut |_, v| {
        names.push(String::from_utf8_lossy(v).into_owned())
    })
    .map_err(|e| record_err(e, 1))?;
    pos = next;
    check_names(path, &names, 1, delim)?;
    let ncols = names.len();

    // Data rows.
    let mut rows = RowIndex::with_capacity_for(len, (len - pos) / 64 + 1);
    while pos < len {
        // Blank lines are skipped.
        if buf[pos] == b'\n' {
            line += 1;
            pos += 1;
            continue;
        }
        if buf[pos] == b'\r' && cr_ends_line(buf.get(pos + 1)) {
            line += 1;
            pos += 2;
            continue;
        }
        let row_line = line;
        let row_start = pos;
        // Fast path: a row without any quote is split by counting delimiters.
        let nl = memchr(b'\n', &buf[pos..]).map(|k| pos + k);
        let row_end = nl.unwrap_or(len);
        let row = &buf[pos..row_end];
        let nfields = if memchr(b'"', row).is_none() {
            if nl.is_some() {
                line += 1;
            }
            pos = nl.map_or(len, |n| n + 1);
            memchr_iter(delim, row).count() + 1
        } else {
            let (n, next) =
                parse_record::<false>(buf, pos, delim, &mut line, &mut scratch, &mut |_, _| {})
                    .map_err(|e| record_err(e, row_line))?;
            pos = next;
            n
        };
        if nfields != ncols {
            return Err(DataError::at(
                path,
                row_line,
                format!(
                    "{nfields} fields but the header has {ncols}; expected {ncols} fields \
                     (quote fields that contain the delimiter)"
                ),
            ));
        }
        rows.push(row_start);
    }
    if rows.is_empty() {
        return Err(DataError::new(
            path,
            None,
            "no data rows: the file has a header but no rows after it; add at least one data row",
        ));
    }
    rows.shrink_to_fit();
    Ok(Parsed {
        columns: names,
        rows,
    })
}

/// Column names must be non-empty and unique.
pub(crate) fn check_names(
    path: &Path,
    names: &[String],
    line: usize,
    delim: u8,
) -> Result<(), DataError> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() {
            return Err(DataError::at(
                path,
                line,
                format!(
                    "column {} of the header has an empty name; give every column a name \
                     (a delimiter {} at the end of the header line makes an empty column)",
                    i + 1,
                    show_delim(delim)
                ),
            ));
        }
        if let Some(first) = seen.insert(n.as_str(), i) {
            return Err(DataError::at(
                path,
                line,
                format!(
                    "duplicate column name \"{n}\" (columns {} and {}); column names must be \
                     unique: rename one of them",
                    first + 1,
                    i + 1
                ),
            ));
        }
    }
    Ok(())
}

/// `\r` followed by `\n` or the end of the file ends a blank line.
fn cr_ends_line(next: Option<&u8>) -> bool {
    matches!(next, None | Some(b'\n'))
}
