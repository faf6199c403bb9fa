//! A table holds about the file's bytes plus a small row index.

use onrush_data::{Format, Table};

/// ~10 MB of CSV rows of a realistic shape, some quoted.
fn generate(target: usize) -> (Vec<u8>, usize) {
    let mut s = Vec::with_capacity(target + 256);
    s.extend_from_slice(b"id,user,email,password,note\n");
    let mut rows = 0;
    while s.len() < target {
        let i = rows;
        let line = if i % 10 == 0 {
            format!("{i},user{i},user{i}@example.com,\"pw,{i}\",\"said \"\"hi\"\"\"\n")
        } else {
            format!("{i},user{i},user{i}@example.com,pw{i},\n")
        };
        s.extend_from_slice(line.as_bytes());
        rows += 1;
    }
    (s, rows)
}

#[test]
fn ten_mb_csv_holds_about_the_file_size() {
    let (bytes, rows) = generate(10 * 1024 * 1024);
    let size = bytes.len();
    let t = Table::from_bytes("big.csv", bytes, Format::csv()).unwrap();
    assert_eq!(t.len(), rows);
    let mem = t.memory_bytes();
    assert!(mem >= size, "{mem} < file size {size}");
    // File bytes + 4 bytes per row (rows are ~40 bytes) + a small constant.
    assert!(
        mem < size + size / 2 + 4096,
        "memory {mem} for a file of {size} bytes"
    );
    assert!(
        mem <= size + rows * 4 + 4096,
        "memory {mem}, file {size}, rows {rows}"
    );
    assert_eq!(
        t.row_strings(rows - 1).len(),
        5,
        "last row splits into all columns"
    );
    assert_eq!(t.row_strings(10)[3], "pw,10");
    assert_eq!(t.row_strings(10)[4], "said \"hi\"");
}

#[test]
fn ten_mb_json_converted_is_compact() {
    let mut s = String::from("[\n");
    let mut rows = 0;
    while s.len() < 10 * 1024 * 1024 {
        if rows > 0 {
            s.push_str(",\n");
        }
        s.push_str(&format!(
            "  {{\"id\": {rows}, \"user\": \"user{rows}\", \"email\": \"user{rows}@example.com\"}}"
        ));
        rows += 1;
    }
    s.push_str("\n]\n");
    let size = s.len();
    let t = Table::from_bytes("big.json", s, Format::Json).unwrap();
    assert_eq!(t.len(), rows);
    // The converted form drops the keys and the JSON punctuation.
    assert!(t.memory_bytes() < size, "{} >= {size}", t.memory_bytes());
    assert_eq!(
        t.row_strings(rows - 1),
        [
            format!("{}", rows - 1),
            format!("user{}", rows - 1),
            format!("user{}@example.com", rows - 1)
        ]
    );
}
