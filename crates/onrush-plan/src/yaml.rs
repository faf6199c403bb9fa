//! YAML text → a small node tree that keeps the source position (byte range) of every node.
//!
//! Built on the `granit-parser` event stream (the parser under `serde-saphyr`). Working on our own
//! tree instead of serde structs lets every later check (unknown keys, durations, variables, ...)
//! point at the exact line and column, and keeps scalars as the text the user wrote (`0012` stays
//! `0012`; numbers are parsed where a number is expected).
//!
//! Budget limits guard against hostile input: file size, node count (aliases count as the nodes
//! they expand to, so "billion laughs" stops early), nesting depth and number of documents.

use std::collections::HashMap;
use std::ops::Range;

use granit_parser::{Event, Parser, ScalarStyle};

/// Limits applied while reading a plan file.
pub(crate) const MAX_INPUT_BYTES: usize = 16 * 1024 * 1024;
pub(crate) const MAX_NODES: usize = 250_000;
pub(crate) const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub kind: Kind,
    /// Byte range in the source text.
    pub span: Range<usize>,
    /// Nesting depth of this node's subtree (1 for a scalar).
    depth: usize,
    /// Number of nodes in this subtree.
    count: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Scalar(Scalar),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

#[derive(Debug, Clone)]
pub(crate) struct Scalar {
    pub text: String,
    pub plain: bool,
}

impl Node {
    /// A quoted scalar that is not from the plan's YAML (a template file's text), spanning
    /// `span` of its own source.
    pub fn text_node(text: String, span: Range<usize>) -> Node {
        Node {
            kind: Kind::Scalar(Scalar { text, plain: false }),
            span,
            depth: 1,
            count: 1,
        }
    }

    pub fn is_null(&self) -> bool {
        match &self.kind {
            Kind::Scalar(s) => {
                s.plain && matches!(s.text.as_str(), "" | "~" | "null" | "Null" | "NULL")
            }
            _ => false,
        }
    }

    /// What this node is, for messages: "a mapping", "a list", "nothing", "a number", "a string".
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Map(_) => "a mapping".into(),
            Kind::Seq(_) => "a list".into(),
            Kind::Scalar(_) if self.is_null() => "nothing (an empty value)".into(),
            Kind::Scalar(s) => format!("{:?}", truncate(&s.text, 60)),
        }
    }

    pub fn as_scalar(&self) -> Option<&Scalar> {
        match &self.kind {
            Kind::Scalar(s) => Some(s),
            _ => None,
        }
    }
}

pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max_chars).collect();
        t.push('…');
        t
    }
}

/// A YAML-level problem: where and what.
#[derive(Debug)]
pub(crate) struct SyntaxError {
    pub offset: usize,
    pub message: String,
    pub hint: Option<String>,
}

fn syntax(offset: usize, message: impl Into<String>, hint: Option<&str>) -> SyntaxError {
    SyntaxError {
        offset,
        message: message.into(),
        hint: hint.map(str::to_string),
    }
}

enum Frame {
    Seq {
        start: usize,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        start: usize,
        anchor: usize,
        entries: Vec<(Node, Node)>,
        key: Option<Node>,
    },
}

/// Parses one YAML document. `Ok(None)` when the text holds no document (empty or only comments).
pub(crate) fn parse(text: &str) -> Result<Option<Node>, SyntaxError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(syntax(
            0,
            format!(
                "the plan file is {} bytes; expected at most {MAX_INPUT_BYTES} bytes",
                text.len()
            ),
            Some("put large request bodies in files and use `body_file:`"),
        ));
    }
    let mut options = granit_parser::Options::default();
    options.set_emit_comments(false);
    options.block_nesting_limit = MAX_DEPTH;
    options.flow_nesting_limit = MAX_DEPTH;
    let parser = Parser::new_from_str_with_options(text, options);

    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut nodes = 0usize;
    let mut documents = 0usize;
    let mut root: Option<Node> = None;

    for item in parser {
        let (event, span) = item.map_err(|e| scan_error(text, &e))?;
        let range = span.byte_range().unwrap_or(0..0);
        let node = match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(syntax(
                        range.start,
                        "a second YAML document (`---`); expected one document per plan file",
                        Some("put all scenarios of a plan in one document, or split the plan into several files"),
                    ));
                }
                continue;
            }
            Event::Scalar(value, style, anchor, _tag) => {
                let node = Node {
                    kind: Kind::Scalar(Scalar {
                        text: value.into_owned(),
                        plain: style == ScalarStyle::Plain,
                    }),
                    span: range,
                    depth: 1,
                    count: 1,
                };
                if anchor != 0 {
                    anchors.insert(anchor, node.clone());
                }
                node
            }
            Event::Alias(id) => {
                let Some(target) = anchors.get(&id) else {
                    return Err(syntax(
                        range.start,
                        "an alias to an anchor that is not complete here",
                        None,
                    ));
                };
                nodes += target.count;
                if nodes > MAX_NODES {
                    return Err(too_many(range.start));
                }
                let mut node = target.clone();
                node.span = range;
                node
            }
            Event::SequenceStart(_, anchor, _) => {
                check_depth(&stack, range.start)?;
                stack.push(Frame::Seq {
                    start: range.start,
                    anchor,
                    items: Vec::new(),
                });
                continue;
            }
            Event::MappingStart(_, anchor, _) => {
                check_depth(&stack, range.start)?;
                stack.push(Frame::Map {
                    start: range.start,
                    anchor,
                    entries: Vec::new(),
                    key: None,
                });
                continue;
            }
            Event::SequenceEnd => {
                let Some(Frame::Seq {
                    start,
                    anchor,
                    items,
                }) = stack.pop()
                else {
                    return Err(syntax(range.start, "unbalanced sequence end", None));
                };
                let end = flow_end(text, &range, "]")
                    .unwrap_or_else(|| items.last().map_or(range.end, |n| n.span.end).max(start));
                let node = collection(Kind::Seq(items), start..end);
                if anchor != 0 {
                    anchors.insert(anchor, node.clone());
                }
                node
            }
            Event::MappingEnd => {
                let Some(Frame::Map {
                    start,
                    anchor,
                    entries,
                    ..
                }) = stack.pop()
                else {
                    return Err(syntax(range.start, "unbalanced mapping end", None));
                };
                let entries = finish_map(entries)?;
                let end = flow_end(text, &range, "}")
                    .unwrap_or_else(|| entries.last().map_or(start, |(_, v)| v.span.end));
                let node = collection(Kind::Map(entries), start..end);
                if anchor != 0 {
                    anchors.insert(anchor, node.clone());
                }
                node
            }
            Event::UnresolvedAlias(name) => {
                return Err(syntax(
                    range.start,
                    format!("alias `*{name}` refers to no anchor"),
                    None,
                ));
            }
            _ => continue,
        };
        nodes += 1;
        if nodes > MAX_NODES {
            return Err(too_many(node.span.start));
        }
        if node.depth > MAX_DEPTH + 1 {
            return Err(syntax(
                node.span.start,
                format!("the YAML is nested too deeply; expected at most {MAX_DEPTH} levels"),
                None,
            ));
        }
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => {
                    if node.as_scalar().is_none() {
                        return Err(syntax(
                            node.span.start,
                            format!(
                                "a mapping key is {}; expected a plain name",
                                node.describe()
                            ),
                            Some("keys in a plan file are names such as `target` or `steps`"),
                        ));
                    }
                    *key = Some(node);
                }
                Some(k) => entries.push((k, node)),
            },
        }
    }
    Ok(root)
}

/// The end of a flow collection (just after its `]` or `}`), when the end event points at one.
fn flow_end(text: &str, range: &Range<usize>, close: &str) -> Option<usize> {
    (text.get(range.clone()) == Some(close)).then_some(range.end)
}

pub(crate) fn collection(kind: Kind, span: Range<usize>) -> Node {
    let (depth, count) = match &kind {
        Kind::Seq(items) => (
            items.iter().map(|n| n.depth).max().unwrap_or(0) + 1,
            items.iter().map(|n| n.count).sum::<usize>() + 1,
        ),
        Kind::Map(entries) => (
            entries.iter().map(|(_, v)| v.depth).max().unwrap_or(0) + 1,
            entries
                .iter()
                .map(|(k, v)| k.count + v.count)
                .sum::<usize>()
                + 1,
        ),
        Kind::Scalar(_) => (1, 1),
    };
    Node {
        kind,
        span,
        depth,
        count,
    }
}

fn check_depth(stack: &[Frame], offset: usize) -> Result<(), SyntaxError> {
    if stack.len() >= MAX_DEPTH {
        return Err(syntax(
            offset,
            format!("the YAML is nested too deeply; expected at most {MAX_DEPTH} levels"),
            None,
        ));
    }
    Ok(())
}

fn too_many(offset: usize) -> SyntaxError {
    syntax(
        offset,
        format!("the plan has more than {MAX_NODES} YAML nodes (counting what aliases expand to); expected a smaller plan"),
        Some("a plan this large is usually generated by mistake; check anchors (`&`) and aliases (`*`)"),
    )
}

/// Rejects duplicate keys and applies YAML merge keys (`<<: *defaults`): merged entries are added
/// where the mapping does not already have the key.
fn finish_map(entries: Vec<(Node, Node)>) -> Result<Vec<(Node, Node)>, SyntaxError> {
    let mut out: Vec<(Node, Node)> = Vec::with_capacity(entries.len());
    let mut merges: Vec<Node> = Vec::new();
    for (k, v) in entries {
        let key = &k.as_scalar().expect("keys are scalars").text;
        if key == "<<" && k.as_scalar().is_some_and(|s| s.plain) {
            merges.push(v);
            continue;
        }
        if out
            .iter()
            .any(|(o, _)| o.as_scalar().map(|s| &s.text) == Some(key))
        {
            return Err(syntax(
                k.span.start,
                format!("duplicate key `{key}`; expected each key once in a mapping"),
                Some("remove one of the two entries"),
            ));
        }
        out.push((k, v));
    }
    for m in merges {
        let sources: Vec<Node> = match m.kind {
            Kind::Map(_) => vec![m],
            Kind::Seq(items) => items,
            Kind::Scalar(_) => {
                return Err(syntax(
                    m.span.start,
                    "`<<` merges a mapping; expected an alias such as `*defaults`",
                    None,
                ))
            }
        };
        for src in sources {
            let Kind::Map(src_entries) = src.kind else {
                return Err(syntax(
                    src.span.start,
                    "`<<` merges a mapping; expected an alias such as `*defaults`",
                    None,
                ));
            };
            for (k, v) in src_entries {
                let key = k.as_scalar().map(|s| s.text.clone());
                if !out
                    .iter()
                    .any(|(o, _)| o.as_scalar().map(|s| s.text.clone()) == key)
                {
                    out.push((k, v));
                }
            }
        }
    }
    Ok(out)
}

fn scan_error(text: &str, e: &granit_parser::ScanError) -> SyntaxError {
    let m = e.marker();
    let offset = m
        .byte_offset()
        .unwrap_or_else(|| offset_of(text, m.line(), m.col()));
    let info = e.info();
    let unclosed = unclosed_bracket(&text[..offset.min(text.len())]);
    let at = offset.min(text.len());
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_text = text[line_start..].split('\n').next().unwrap_or("");
    let hint = if info.contains("unknown anchor") {
        "an alias (`*name`) must come after its anchor (`&name`) in the same file: define the \
         anchor first, or check the spelling of both"
            .to_string()
    } else if info.contains("recursion limit") {
        format!(
            "the YAML is nested more than {MAX_DEPTH} levels deep; a plan needs far fewer: look for \
             a runaway `[` or `{{`, or a generated file"
        )
    } else if info.contains("flow") && unquoted_template(line_text) {
        "inside `{ }` or `[ ]`, quote values that contain `${...}`: write `vus: \"${vus}\"`, `get: \"/users/${vu}\"`".to_string()
    } else if info.contains("quoted") {
        "check that every quoted string is closed: an unclosed quote runs on to the next lines"
            .to_string()
    } else if let Some((c, at)) = unclosed.filter(|_| info.contains("flow")) {
        let (line, col) = line_col(text, at);
        format!("the `{c}` at line {line} column {col} is not closed, or its items are not separated by commas")
    } else if info.contains("flow") {
        "check that every `{` and `[` is closed and that items are separated by commas".to_string()
    } else if text
        .lines()
        .any(|l| l.trim_start_matches(' ').starts_with('\t'))
        || info.contains("tab")
    {
        "YAML indentation must use spaces, not tabs".to_string()
    } else {
        "check the indentation: keys of one mapping line up, list items start with `- `".to_string()
    };
    SyntaxError {
        offset,
        message: format!("invalid YAML: {info}; expected well-formed YAML"),
        hint: Some(hint),
    }
}

/// True when `line` has a `${` that is not inside quotes.
fn unquoted_template(line: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if (c == '"' || c == '\'') && matches!(prev, ' ' | '{' | '[' | ',' | ':') => {
                quote = Some(c)
            }
            None if c == '$' && line[i..].starts_with("${") => return true,
            None => {}
        }
        prev = c;
    }
    false
}

/// The last `{` or `[` left open in `text` (outside quotes and comments), and its byte offset.
fn unclosed_bracket(text: &str) -> Option<(char, usize)> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut prev = ' ';
    for (i, c) in text.char_indices() {
        if comment {
            comment = c != '\n';
        } else if let Some(q) = quote {
            if c == q {
                quote = None;
            }
        } else {
            match c {
                '"' | '\'' if matches!(prev, ' ' | '{' | '[' | ',' | ':' | '\n') => quote = Some(c),
                '#' if prev.is_whitespace() => comment = true,
                '{' | '[' => stack.push((c, i)),
                '}' | ']' => {
                    stack.pop();
                }
                _ => {}
            }
        }
        prev = c;
    }
    stack.pop()
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return off + l.char_indices().nth(col).map_or(l.len(), |(b, _)| b);
        }
        off += l.len();
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(n: &Node) -> &[(Node, Node)] {
        match &n.kind {
            Kind::Map(e) => e,
            other => panic!("not a map: {other:?}"),
        }
    }

    #[test]
    fn spans_and_text() {
        let text = "a: { b: 0012, c: [1, 2] }\nd: 'x'\n";
        let root = parse(text).unwrap().unwrap();
        let e = map(&root);
        assert_eq!(&text[e[0].1.span.clone()], "{ b: 0012, c: [1, 2] }");
        let inner = map(&e[0].1);
        assert_eq!(inner[0].1.as_scalar().unwrap().text, "0012");
        assert_eq!(&text[inner[1].1.span.clone()], "[1, 2]");
        assert_eq!(&text[e[1].0.span.clone()], "d");
        let d = e[1].1.as_scalar().unwrap();
        assert!(!d.plain);
        assert_eq!(d.text, "x");
    }

    #[test]
    fn empty_duplicates_and_merges() {
        assert!(parse("").unwrap().is_none());
        assert!(parse("# c\n").unwrap().is_none());
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert!(e.message.contains("duplicate key `a`"), "{e:?}");
        assert_eq!(e.offset, 5);
        let root = parse("base: &b { x: 1, y: 2 }\nm: { <<: *b, y: 3 }\n")
            .unwrap()
            .unwrap();
        let m = map(&map(&root)[1].1);
        let got: Vec<(&str, &str)> = m
            .iter()
            .map(|(k, v)| {
                (
                    k.as_scalar().unwrap().text.as_str(),
                    v.as_scalar().unwrap().text.as_str(),
                )
            })
            .collect();
        assert_eq!(got, [("y", "3"), ("x", "1")]);
    }
}
