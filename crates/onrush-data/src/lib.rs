//! onrush-data: test-data feeders. CSV and JSON files whose rows feed variables to virtual users.
//!
//! * [`load`] / [`Table::from_bytes`]: read a CSV (header row, RFC 4180 quoting, any ASCII
//!   delimiter) or a JSON array of objects into a [`Table`]: **one** immutable copy, shared by
//!   all VUs and worker threads through an `Arc`.
//! * [`Feeder`]: a table plus a [`Mode`] (`Circular`, `Random`, `Unique`, `PerVu`);
//!   [`Feeder::pick`] says which row a VU gets, [`Table::row`] hands out its fields.
//!
//! Memory: a table is the file's bytes in one buffer plus a 4-byte start offset per row (8 bytes
//! per row past 4 GiB). Fields are split lazily when a row is picked: a field without doubled
//! quotes is a slice of the buffer; one with doubled quotes is unescaped into the caller's
//! scratch buffer. A JSON file is converted once, while it is parsed, into the same form.
//!
//! ```
//! use std::sync::Arc;
//! use onrush_data::*;
//!
//! let csv = "user,password\nalice,\"p,1\"\nbob,\"say \"\"hi\"\"\"\n";
//! let table = Arc::new(Table::from_bytes("users.csv", csv, Format::csv()).unwrap());
//! assert_eq!(table.columns(), ["user", "password"]);
//! assert_eq!(table.len(), 2);
//!
//! let feeder = Feeder::new(table, Mode::Unique { on_exhausted: Exhausted::Stop });
//! let mut rng = SplitMix64::new(7); // each VU has its own
//! let mut scratch = Vec::new(); // each VU has its own
//! let mut got = Vec::new();
//! while let Some(row) = feeder.pick(1, &mut || rng.next_u64()) {
//!     feeder.table().row(row, &mut scratch, &mut |col, value| {
//!         got.push(format!("{}={}", feeder.table().columns()[col], String::from_utf8_lossy(value)));
//!     });
//! }
//! assert_eq!(got, ["user=alice", "password=p,1", "user=bob", "password=say \"hi\""]);
//! ```

mod csv;
mod error;
mod feeder;
mod index;
mod json;
pub mod share;

use std::path::{Path, PathBuf};

pub use error::DataError;
pub use feeder::{Exhausted, Feeder, Mode, SplitMix64};

use index::RowIndex;

/// The format of a data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// CSV with a header row; `delimiter` is one ASCII byte other than `"`, CR, LF
    /// (`b','`, `b';'`, `b'\t'`, …).
    Csv { delimiter: u8 },
    /// A JSON array of objects; the keys of the first object are the columns.
    Json,
}

impl Format {
    /// CSV with the default `,` delimiter.
    pub fn csv() -> Format {
        Format::Csv { delimiter: b',' }
    }
}

/// Reads `path` (one read into one buffer) and parses it as `format`.
pub fn load(path: &Path, format: Format) -> Result<Table, DataError> {
    let bytes = std::fs::read(path).map_err(|e| {
        DataError::new(
            path,
            None,
            format!("cannot read the data file: {e}; check the path and its permissions"),
        )
    })?;
    Table::from_bytes(path, bytes, format)
}

/// An immutable data set: column names and rows. `Send + Sync`; share it with `Arc`.
pub struct Table {
    name: PathBuf,
    columns: Vec<String>,
    /// CSV records (the file itself for CSV; the converted rows for JSON).
    buf: Vec<u8>,
    /// Start offset of each data row in `buf`.
    rows: RowIndex,
    delimiter: u8,
}

impl Table {
    /// Parses `bytes` (the whole file) as `format`; `name` is used in errors. For CSV the bytes
    /// are kept as they are (no copy); JSON is converted.
    pub fn from_bytes(
        name: impl AsRef<Path>,
        bytes: impl Into<Vec<u8>>,
        format: Format,
    ) -> Result<Table, DataError> {
        let name = name.as_ref();
        let bytes: Vec<u8> = bytes.into();
        if let Err(e) = std::str::from_utf8(&bytes) {
            let at = e.valid_up_to();
            let line = memchr::memchr_iter(b'\n', &bytes[..at]).count() + 1;
            return Err(DataError::at(
                name,
                line,
                format!("the file is not valid UTF-8 (bad byte at offset {at}); save it as UTF-8"),
            ));
        }
        match format {
            Format::Csv { delimiter } => {
                let parsed = csv::index(name, &bytes, delimiter)?;
                let mut buf = bytes;
                buf.shrink_to_fit();
                Ok(Table {
                    name: name.to_path_buf(),
                    columns: parsed.columns,
                    buf,
                    rows: parsed.rows,
                    delimiter,
                })
            }
            Format::Json => {
                let c = json::convert(name, &bytes)?;
                drop(bytes);
                Ok(Table {
                    name: name.to_path_buf(),
                    columns: c.columns,
                    buf: c.buf,
                    rows: c.rows,
                    delimiter: json::DELIM,
                })
            }
        }
    }

    /// The file this table was read from (or the name given to [`Table::from_bytes`]).
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// Column names, in file order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Index of the column named `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// Number of data rows (the header is not counted). Always ≥ 1 for a loaded table.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Calls `field(column_index, value)` for each field of row `row`, in column order (value
    /// unescaped; uses `scratch` when unescaping is needed). Values are valid UTF-8. Does
    /// nothing if `row >= len()`.
    #[inline]
    pub fn row(&self, row: usize, scratch: &mut Vec<u8>, field: &mut dyn FnMut(usize, &[u8])) {
        let Some(start) = self.rows.get(row) else {
            return;
        };
        let mut line = 0;
        // Rows were validated at load time, so this cannot fail; if it ever did, the fields
        // emitted so far are all the caller gets.
        let _ =
            csv::parse_record::<true>(&self.buf, start, self.delimiter, &mut line, scratch, field);
    }

    /// Row `row` as owned strings (convenience for tests and tools; allocates).
    pub fn row_strings(&self, row: usize) -> Vec<String> {
        let mut out = Vec::with_capacity(self.columns.len());
        let mut scratch = Vec::new();
        self.row(row, &mut scratch, &mut |_, v| {
            out.push(String::from_utf8_lossy(v).into_owned())
        });
        out
    }

    /// Heap bytes held: the data buffer, the row index and the column names.
    pub fn memory_bytes(&self) -> usize {
        self.buf.capacity()
            + self.rows.heap_bytes()
            + self.columns.capacity() * std::mem::size_of::<String>()
            + self.columns.iter().map(String::capacity).sum::<usize>()
            + self.name.as_os_str().len()
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name)
            .field("columns", &self.columns)
            .field("rows", &self.len())
            .field("memory_bytes", &self.memory_bytes())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn table_and_feeder_are_send_sync() {
        assert_send_sync::<Table>();
        assert_send_sync::<Feeder>();
    }
}
