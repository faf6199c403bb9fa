//! JSON arrays of objects: values and errors.

use onrush_data::{DataError, Format, Table};

fn json(text: &str) -> Table {
    Table::from_bytes("t.json", text, Format::Json).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> DataError {
    match Table::from_bytes("t.json", text, Format::Json) {
        Ok(t) => panic!("expected an error, got {t:?}"),
        Err(e) => e,
    }
}

#[test]
fn columns_follow_the_first_object_and_values_are_converted() {
    let t = json(
        r#"[
  {"zeta": "a", "alpha": 1, "mid": true, "n": null, "f": -1.5e3,
   "obj": {"z": 1, "a": [1, 2, {"k": "v w"}]}, "arr": [ "x", "y,\"z\"" ]},
  {"alpha": 2, "zeta": "line\nbreak, \"quoted\"", "mid": false, "n": "", "f": 0,
   "obj": {}, "arr": [], "extra": "ignored"}
]"#,
    );
    assert_eq!(
        t.columns(),
        ["zeta", "alpha", "mid", "n", "f", "obj", "arr"]
    );
    assert_eq!(t.len(), 2);
    assert_eq!(
        t.row_strings(0),
        [
            "a",
            "1",
            "true",
            "",
            "-1.5e3",
            r#"{"z":1,"a":[1,2,{"k":"v w"}]}"#,
            r#"["x","y,\"z\""]"#
        ]
    );
    assert_eq!(
        t.row_strings(1),
        ["line\nbreak, \"quoted\"", "2", "false", "", "0", "{}", "[]"]
    );
}

#[test]
fn string_escapes_and_unicode() {
    let t = json(r#"[{"k": "tab\there \u00e9 😀 \\ \/"}]"#);
    assert_eq!(t.row_strings(0), ["tab\there é 😀 \\ /"]);
    let t = json(r#"[{"名前": "東京"}]"#);
    assert_eq!(t.columns(), ["名前"]);
    assert_eq!(t.row_strings(0), ["東京"]);
}

#[test]
fn single_column_empty_values() {
    let t = json(r#"[{"a": ""}, {"a": null}, {"a": "x"}]"#);
    assert_eq!(t.len(), 3);
    let all: Vec<_> = (0..3).map(|r| t.row_strings(r)).collect();
    assert_eq!(all, [vec![""], vec![""], vec!["x"]]);
}

#[test]
fn missing_key_names_the_row() {
    let e =
        err("[\n {\"id\": 1, \"email\": \"a\"},\n {\"id\": 2, \"email\": \"b\"},\n {\"id\": 3}\n]");
    assert_eq!(e.line, Some(4), "{e}");
    assert!(
        e.message.starts_with(
            "object 3 of the array (data row 3) has no key \"email\"; every object needs the keys \
             of the first object: id, email"
        ),
        "{e}"
    );
    assert!(e.to_string().starts_with("t.json: line 4, column "), "{e}");
}

#[test]
fn not_an_array_of_objects() {
    let e = err(r#"{"id": 1}"#);
    assert_eq!((e.line, e.column), (Some(1), Some(1)), "{e}");
    assert!(
        e.message.contains("expected a JSON array of objects"),
        "{e}"
    );

    let e = err("[\n {\"id\": 1},\n \"two\"\n]");
    assert_eq!(e.line, Some(3), "{e}");
    assert!(
        e.message
            .contains("expected a JSON object as element 2 of the array"),
        "{e}"
    );

    let e = err("[1]");
    assert!(e.message.contains("element 1"), "{e}");
}

#[test]
fn syntax_errors_have_line_and_column() {
    let e = err("[\n {\"id\": 1},\n {\"id\": 2,}\n]");
    assert_eq!((e.line, e.column), (Some(3), Some(11)), "{e}");
    assert!(e.message.contains("valid JSON"), "{e}");

    let e = err("[{\"id\": 1}");
    assert!(e.line.is_some(), "{e}");
    assert!(e.message.contains("EOF"), "{e}");

    let e = err("[{\"id\": 1}] x");
    assert!(e.message.contains("trailing characters"), "{e}");
}

#[test]
fn empty_array_empty_file_empty_first_object_duplicate_keys() {
    let e = err("[]");
    assert!(
        e.message
            .starts_with("no data rows: the JSON array is empty"),
        "{e}"
    );

    let e = err("");
    assert!(e.message.contains("EOF"), "{e}");

    let e = err("[{}]");
    assert!(e.message.starts_with("the first object has no keys"), "{e}");

    let e = err(r#"[{"a": 1, "a": 2}]"#);
    assert!(e.message.contains("the key \"a\" twice"), "{e}");
}
