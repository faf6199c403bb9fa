//! The feeders' data files: the input as a CSV (delimiter from the first byte) or a JSON array
//! of objects, read by `onrush_data::Table::from_bytes`; every row of a table that loads is
//! then handed out as a VU would get it.

use std::sync::Arc;

use onrush_data::{Exhausted, Feeder, Format, Mode, SplitMix64, Table};

pub fn run(data: &[u8]) {
    let Some((&which, file)) = data.split_first() else {
        return;
    };
    let format = match which % 5 {
        0 => Format::Json,
        1 => Format::Csv { delimiter: b';' },
        2 => Format::Csv { delimiter: b'\t' },
        3 => Format::Csv {
            delimiter: which >> 3,
        },
        _ => Format::csv(),
    };
    let Ok(table) = Table::from_bytes("fuzz.csv", file, format) else {
        return;
    };
    let columns = table.columns().len();
    assert!(columns > 0, "a table without columns");
    let mut scratch = Vec::new();
    for row in 0..table.len() {
        let mut next = 0;
        table.row(row, &mut scratch, &mut |col, value| {
            assert!(col < columns, "field {col} of {columns} columns");
            assert_eq!(col, next, "fields in column order");
            next += 1;
            assert!(
                std::str::from_utf8(value).is_ok(),
                "a field that is not UTF-8"
            );
        });
    }
    // What a VU gets: a unique walk ends after every row once.
    let rows = table.len();
    let feeder = Feeder::new(
        Arc::new(table),
        Mode::Unique {
            on_exhausted: Exhausted::Stop,
        },
    );
    let mut rng = SplitMix64::new(u64::from(which));
    let mut picked = 0;
    while let Some(row) = feeder.pick(1, &mut || rng.next_u64()) {
        assert!(row < rows);
        picked += 1;
        assert!(picked <= rows, "a unique feeder gave more rows than it has");
    }
    assert_eq!(picked, rows);
}

pub const DICT: &[&[u8]] = &[
    b",",
    b";",
    b"\t",
    b"\"",
    b"\"\"",
    b"\r\n",
    b"\n",
    b"\r",
    b"\xef\xbb\xbf",
    b"[",
    b"]",
    b"{",
    b"}",
    b"{\"a\":1}",
    b"\"b\":\"x\"",
    b"null",
    b"true",
    b"1e400",
    b"\\u00e9",
    b"\\ud800",
    b"[{\"a\":",
    b"user,password\n",
];
