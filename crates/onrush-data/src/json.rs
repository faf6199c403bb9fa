//! JSON arrays of objects, converted once (streaming, one object at a time) into the same
//! representation as a CSV file: one byte buffer of `,`-separated, RFC 4180-quoted records and
//! the start offset of each.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::DataError;
use crate::index::RowIndex;

/// The delimiter of the converted buffer.
pub(crate) const DELIM: u8 = b',';

pub(crate) struct Converted {
    pub columns: Vec<String>,
    pub buf: Vec<u8>,
    pub rows: RowIndex,
}

struct State {
    columns: Vec<String>,
    lookup: HashMap<String, usize>,
    buf: Vec<u8>,
    rows: RowIndex,
    tmp: Vec<u8>,
}

pub(crate) fn convert(path: &Path, input: &[u8]) -> Result<Converted, DataError> {
    let mut st = State {
        columns: Vec::new(),
        lookup: HashMap::new(),
        buf: Vec::with_capacity(input.len() / 2),
        rows: RowIndex::with_capacity_for(input.len(), 0),
        tmp: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_slice(input);
    de.deserialize_seq(Top { st: &mut st })
        .and_then(|()| de.end())
        .map_err(|e| json_error(path, &e))?;
    if st.rows.is_empty() {
        return Err(DataError::new(
            path,
            None,
            "no data rows: the JSON array is empty; add at least one object, like \
             [{\"user\": \"a\", \"password\": \"b\"}]",
        ));
    }
    st.buf.shrink_to_fit();
    st.rows.shrink_to_fit();
    Ok(Converted {
        columns: st.columns,
        buf: st.buf,
        rows: st.rows,
    })
}

fn json_error(path: &Path, e: &serde_json::Error) -> DataError {
    let (line, column) = (e.line(), e.column());
    let mut msg = e.to_string();
    let suffix = format!(" at line {line} column {column}");
    if let Some(stripped) = msg.strip_suffix(&suffix) {
        msg = stripped.to_string();
    }
    if e.is_syntax() || e.is_eof() {
        msg.push_str(
            "; the file must be valid JSON: one array of objects, like \
             [{\"user\": \"a\", \"password\": \"b\"}]",
        );
    }
    DataError {
        path: path.to_path_buf(),
        line: (line > 0).then_some(line),
        column: (line > 0).then_some(column.max(1)),
        message: msg,
    }
}

struct Top<'a> {
    st: &'a mut State,
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of objects, like [{\"user\": \"a\", \"password\": \"b\"}]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let n = self.st.rows.len() + 1;
            if seq
                .next_element_seed(RowSeed {
                    st: &mut *self.st,
                    n,
                })?
                .is_none()
            {
                return Ok(());
            }
        }
    }
}

/// One object of the array: `n` is its 1-based position.
struct RowSeed<'a> {
    st: &'a mut State,
    n: usize,
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "a JSON object as element {} of the array (the file must be an array of objects)",
            self.n
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.st;
        if self.n == 1 {
            // The first object names the columns, in its order.
            let mut vals: Vec<&'de RawValue> = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                let v: &'de RawValue = map.next_value()?;
                if st.lookup.contains_key(&key) {
                    return Err(de::Error::custom(format!(
                        "the first object has the key \"{key}\" twice; keys (the column names) \
                         must be unique"
                    )));
                }
                st.lookup.insert(key.clone(), st.columns.len());
                st.columns.push(key);
                vals.push(v);
            }
            if st.columns.is_empty() {
                return Err(de::Error::custom(
                    "the first object has no keys; its keys are the column names, so it needs \
                     at least one, like {\"user\": \"a\"}",
                ));
            }
            write_row(st, vals.iter().map(|v| Some(*v)))
        } else {
            let mut vals: Vec<Option<&'de RawValue>> = vec![None; st.columns.len()];
            while let Some(col) = map.next_key_seed(KeySeed { lookup: &st.lookup })? {
                match col {
                    Some(i) => vals[i] = Some(map.next_value()?),
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            if let Some(i) = vals.iter().position(Option::is_none) {
                return Err(de::Error::custom(format!(
                    "object {n} of the array (data row {n}) has no key \"{key}\"; every object \
                     needs the keys of the first object: {all}",
                    n = self.n,
                    key = st.columns[i],
                    all = st.columns.join(", ")
                )));
            }
            write_row(st, vals.into_iter())
        }
    }
}

/// A key of a later object → its column index, or `None` for a key the first object lacks.
struct KeySeed<'a> {
    lookup: &'a HashMap<String, usize>,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(self.lookup.get(v).copied())
    }
}

fn write_row<'de, E: de::Error>(
    st: &mut State,
    vals: impl Iterator<Item = Option<&'de RawValue>>,
) -> Result<(), E> {
    st.rows.push(st.buf.len());
    for (i, v) in vals.enumerate() {
        if i > 0 {
            st.buf.push(DELIM);
        }
        if let Some(v) = v {
            write_value(v.get().trim(), &mut st.buf, &mut st.tmp)?;
        }
    }
    st.buf.push(b'\n');
    Ok(())
}

/// Strings as is, `null` as empty, numbers/bools as their JSON text, objects/arrays as compact
/// JSON text; written as one CSV field.
fn write_value<E: de::Error>(raw: &str, out: &mut Vec<u8>, tmp: &mut Vec<u8>) -> Result<(), E> {
    match raw.as_bytes().first() {
        Some(b'"') => {
            if raw.contains('\\') {
                let s: String = serde_json::from_str(raw).map_err(E::custom)?;
                write_field(s.as_bytes(), out);
            } else {
                write_field(raw.as_bytes().get(1..raw.len() - 1).unwrap_or(&[]), out);
            }
        }
        Some(b'n') => {}
        Some(b'{' | b'[') => {
            compact(raw.as_bytes(), tmp);
            write_field(tmp, out);
        }
        _ => write_field(raw.as_bytes(), out),
    }
    Ok(())
}

/// One RFC 4180 field: quoted (inner quotes doubled) when it holds `,`, `"`, CR or LF.
fn write_field(v: &[u8], out: &mut Vec<u8>) {
    if v.iter().any(|&b| matches!(b, DELIM | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        for &b in v {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(v);
    }
}

/// Valid JSON text without the whitespace outside strings.
fn compact(json: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut in_str = false;
    let mut esc = false;
    for &b in json {
        if in_str {
            out.push(b);
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
        } else if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            out.push(b);
            in_str = b == b'"';
        }
    }
}
