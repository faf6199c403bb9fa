//! CSV parsing: edge cases and errors (line numbers and message text).

use onrush_data::{DataError, Format, Table};

fn csv(text: &str) -> Table {
    Table::from_bytes("t.csv", text, Format::csv()).unwrap_or_else(|e| panic!("{e}"))
}

fn csv_d(text: &str, delimiter: u8) -> Table {
    Table::from_bytes("t.csv", text, Format::Csv { delimiter }).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> DataError {
    match Table::from_bytes("t.csv", text, Format::csv()) {
        Ok(t) => panic!("expected an error, got {t:?}"),
        Err(e) => e,
    }
}

fn all_rows(t: &Table) -> Vec<Vec<String>> {
    (0..t.len()).map(|r| t.row_strings(r)).collect()
}

fn rows(list: &[&[&str]]) -> Vec<Vec<String>> {
    list.iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect()
}

#[test]
fn plain_rows_with_and_without_trailing_newline() {
    for text in ["a,b\n1,2\n3,4\n", "a,b\n1,2\n3,4"] {
        let t = csv(text);
        assert_eq!(t.columns(), ["a", "b"]);
        assert_eq!(t.len(), 2);
        assert_eq!(all_rows(&t), rows(&[&["1", "2"], &["3", "4"]]));
    }
}

#[test]
fn crlf_line_endings() {
    let t = csv("a,b\r\n1,2\r\n\"x\",\"y\"\r\n5,6");
    assert_eq!(t.columns(), ["a", "b"]);
    assert_eq!(all_rows(&t), rows(&[&["1", "2"], &["x", "y"], &["5", "6"]]));
}

#[test]
fn quoted_fields_doubled_quotes_embedded_delimiters_and_newlines() {
    let text = "id,text,n\n\
                1,\"hello, world\",x\n\
                2,\"say \"\"hi\"\"\",y\n\
                3,\"two\nlines\",z\n\
                4,\"crlf\r\ninside\",w\r\n\
                5,\"\",\"\"\"\"\n";
    let t = csv(text);
    assert_eq!(
        all_rows(&t),
        rows(&[
            &["1", "hello, world", "x"],
            &["2", "say \"hi\"", "y"],
            &["3", "two\nlines", "z"],
            &["4", "crlf\r\ninside", "w"],
            &["5", "", "\""],
        ])
    );
}

#[test]
fn unescaped_value_uses_scratch_and_plain_value_borrows_buffer() {
    let t = csv("a,b\n\"x\"\"y\",plain\n");
    let mut scratch = Vec::new();
    let mut seen = Vec::new();
    t.row(0, &mut scratch, &mut |c, v| seen.push((c, v.to_vec())));
    assert_eq!(seen, vec![(0, b"x\"y".to_vec()), (1, b"plain".to_vec())]);
    assert_eq!(scratch, b"x\"y");
}

#[test]
fn quote_inside_unquoted_field_is_literal() {
    let t = csv("a,b\nab\"c,d\n");
    assert_eq!(all_rows(&t), rows(&[&["ab\"c", "d"]]));
}

#[test]
fn semicolon_and_tab_delimiters() {
    let t = csv_d("a;b;c\n1;\"x;y\";3\n", b';');
    assert_eq!(t.columns(), ["a", "b", "c"]);
    assert_eq!(all_rows(&t), rows(&[&["1", "x;y", "3"]]));

    let t = csv_d("a\tb\n1,5\t\"t\tq\"\n", b'\t');
    assert_eq!(t.columns(), ["a", "b"]);
    assert_eq!(all_rows(&t), rows(&[&["1,5", "t\tq"]]));
}

#[test]
fn empty_fields() {
    let t = csv("a,b,c\n,,\n1,,\n,,3\n\"\",x,\n");
    assert_eq!(
        all_rows(&t),
        rows(&[
            &["", "", ""],
            &["1", "", ""],
            &["", "", "3"],
            &["", "x", ""]
        ])
    );
}

#[test]
fn utf8_values_and_bom() {
    let t = csv("\u{feff}名前,ville\nΣωκράτης,Zürich\n\"😀, ok\",東京\n");
    assert_eq!(t.columns(), ["名前", "ville"]);
    assert_eq!(
        all_rows(&t),
        rows(&[&["Σωκράτης", "Zürich"], &["😀, ok", "東京"]])
    );
}

#[test]
fn blank_lines_are_skipped() {
    let t = csv("a,b\n\n1,2\n\r\n3,4\n\n\n");
    assert_eq!(all_rows(&t), rows(&[&["1", "2"], &["3", "4"]]));
}

#[test]
fn quoted_header_and_single_column() {
    let t = csv("\"first, name\"\nx\n\"\"\ny");
    assert_eq!(t.columns(), ["first, name"]);
    assert_eq!(all_rows(&t), rows(&[&["x"], &[""], &["y"]]));
}

#[test]
fn row_out_of_range_does_nothing() {
    let t = csv("a\n1\n");
    let mut called = false;
    t.row(1, &mut Vec::new(), &mut |_, _| called = true);
    t.row(usize::MAX, &mut Vec::new(), &mut |_, _| called = true);
    assert!(!called);
}

#[test]
fn wrong_field_count_names_the_line() {
    let mut text = String::from("a,b,c\n");
    for i in 2..17 {
        text.push_str(&format!("{i},x,y\n"));
    }
    text.push_str("17,x,y,z\n18,x,y\n");
    let e = err(&text);
    assert_eq!(e.line, Some(17));
    assert_eq!(
        e.to_string(),
        "t.csv: line 17: 4 fields but the header has 3; expected 3 fields (quote fields that \
         contain the delimiter)"
    );

    let e = err("a,b,c\n1,2,3\n1,2\n");
    assert_eq!(e.line, Some(3));
    assert!(
        e.to_string()
            .contains("line 3: 2 fields but the header has 3"),
        "{e}"
    );
}

#[test]
fn line_numbers_count_newlines_inside_quotes() {
    // The row on line 4 (after a record spanning lines 2-3) has too few fields.
    let e = err("a,b\n\"x\ny\",1\nonly\n");
    assert_eq!(e.line, Some(4), "{e}");
    // Quoted (slow path) bad row.
    let e = err("a,b\n1,2\n\"q\",2,3\n");
    assert_eq!(e.line, Some(3), "{e}");
    assert!(
        e.message.starts_with("3 fields but the header has 2"),
        "{e}"
    );
    // CRLF counts as one line.
    let e = err("a,b\r\n1,2\r\n1\r\n");
    assert_eq!(e.line, Some(3), "{e}");
}

#[test]
fn unterminated_quote_names_the_opening_line() {
    let e = err("a,b\n1,2\n3,\"open\nmore\nstill\n");
    assert_eq!(e.line, Some(3));
    assert!(
        e.to_string().starts_with(
            "t.csv: line 3: unterminated quote: the quoted field that opens on line 3 is never closed"
        ),
        "{e}"
    );
    // The quote opens on a later physical line of the same row.
    let e = err("a,b\n\"x\ny\",\"open\n");
    assert_eq!(e.line, Some(2));
    assert!(e.message.contains("opens on line 3"), "{e}");
    // In the header.
    let e = err("\"a,b\n1,2\n");
    assert_eq!(e.line, Some(1));
    assert!(e.message.contains("unterminated quote"), "{e}");
}

#[test]
fn text_after_closing_quote() {
    let e = err("a,b\n1,2\n\"x\"y,2\n");
    assert_eq!(e.line, Some(3));
    assert!(
        e.message
            .starts_with("field 1 has text after its closing quote"),
        "{e}"
    );
    assert!(e.message.contains("doubled"), "{e}");
}

#[test]
fn empty_file_and_no_header() {
    for text in ["", "\n", " \r\n\n", "\u{feff}"] {
        let e = err(text);
        assert_eq!(e.line, None);
        assert!(
            e.message
                .starts_with("the file is empty: expected a header row"),
            "{e}"
        );
    }
}

#[test]
fn header_only_is_an_empty_data_set() {
    for text in ["a,b", "a,b\n", "a,b\n\n\r\n"] {
        let e = err(text);
        assert!(e.message.starts_with("no data rows"), "{e}");
    }
}

#[test]
fn duplicate_and_empty_column_names() {
    let e = err("id,name,id\n1,2,3\n");
    assert_eq!(e.line, Some(1));
    assert_eq!(
        e.to_string(),
        "t.csv: line 1: duplicate column name \"id\" (columns 1 and 3); column names must be \
         unique: rename one of them"
    );
    let e = err("a,b,\n1,2,3\n");
    assert_eq!(e.line, Some(1));
    assert!(
        e.message
            .starts_with("column 3 of the header has an empty name"),
        "{e}"
    );
}

#[test]
fn invalid_utf8_and_invalid_delimiter() {
    let e = Table::from_bytes("t.csv", b"a,b\n1,2\n\xff,3\n".to_vec(), Format::csv()).unwrap_err();
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("not valid UTF-8"), "{e}");

    for d in [b'"', b'\n', b'\r', 0xC3] {
        let e = Table::from_bytes("t.csv", "a\n1\n", Format::Csv { delimiter: d }).unwrap_err();
        assert!(e.message.starts_with("invalid delimiter"), "{e}");
    }
}

#[test]
fn load_reads_a_file_and_reports_a_missing_one() {
    let dir = std::env::temp_dir().join(format!(
        "onrush-data-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("users.csv");
    std::fs::write(&p, "user;pass\nu1;p1\nu2;\"p;2\"\n").unwrap();
    let t = onrush_data::load(&p, Format::Csv { delimiter: b';' }).unwrap();
    assert_eq!(all_rows(&t), rows(&[&["u1", "p1"], &["u2", "p;2"]]));
    assert_eq!(t.name(), p.as_path());

    let missing = dir.join("missing.csv");
    let e = onrush_data::load(&missing, Format::csv()).unwrap_err();
    assert_eq!(e.path, missing);
    assert!(e.message.starts_with("cannot read the data file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Arbitrary bytes never panic: every input is either a table or an error, and every row of
/// a table splits into exactly `columns().len()` fields.
#[test]
fn never_panics_on_arbitrary_input() {
    let alphabet: &[u8] = b"ab,;\"\r\n \t";
    let mut x: u64 = 0x1234_5678_9ABC_DEF0;
    let mut ok = 0;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 24) as usize;
        let mut s = Vec::with_capacity(len);
        let mut y = x;
        for _ in 0..len {
            y = y
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s.push(alphabet[(y >> 59) as usize % alphabet.len()]);
        }
        for fmt in [Format::csv(), Format::Csv { delimiter: b';' }, Format::Json] {
            if let Ok(t) = Table::from_bytes("fuzz", s.clone(), fmt) {
                ok += 1;
                for r in 0..t.len() {
                    let mut n = 0;
                    t.row(r, &mut Vec::new(), &mut |c, _| {
                        assert_eq!(c, n);
                        n += 1;
                    });
                    assert_eq!(
                        n,
                        t.columns().len(),
                        "{:?} row {r}",
                        String::from_utf8_lossy(&s)
                    );
                }
            }
        }
    }
    assert!(ok > 100, "only {ok} inputs parsed");
}
