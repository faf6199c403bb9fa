//! onrush extractors: pull values out of HTTP response bodies.
//!
//! An [`Extractor`] is compiled once (when the plan is loaded) from a [`Kind`] and shared by
//! all worker threads. Per response, wrap the body in a [`Document`] (cheap; parses are built
//! lazily and cached, so several extractors on one response parse it once) and call
//! [`Extractor::each`] or [`select`].
//!
//! ```
//! use onrush_extract::{select, Document, Extractor, Kind, Occurrence};
//!
//! let ex = Extractor::new(Kind::JsonPath("$.items[*].id".into())).unwrap();
//! let mut doc = Document::new(br#"{"items": [{"id": 1}, {"id": 2}]}"#);
//! let mut out = Vec::new();
//! let n = select(&ex, &mut doc, Occurrence::Last, &mut || 7, &mut out);
//! assert_eq!((n, &out[0][..]), (1, &b"2"[..]));
//! ```

mod css;
mod html;
mod json;
mod xpath;

use std::fmt;
use std::ops::ControlFlow;

use memchr::memmem::Finder;

/// What to extract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The text between `left` and `right` (JMeter's Boundary extractor), for every
    /// non-overlapping occurrence. An empty `left` means the start of the body (one match at
    /// most), an empty `right` the end of the body.
    Boundary { left: String, right: String },
    /// A `regex` crate pattern over the raw bytes; `group` 0 is the whole match, named
    /// groups are addressed by their index.
    Regex { pattern: String, group: usize },
    /// An RFC 9535 JSONPath query.
    JsonPath(String),
    /// A CSS selector over HTML: the text content of each matching element (entities decoded,
    /// whitespace as in the document) or, with `attribute`, that attribute's decoded value
    /// (elements without it are skipped).
    Css {
        selector: String,
        attribute: Option<String>,
    },
    /// An XPath 1.0 expression over XML or HTML; the string value of each selected node
    /// (`text()`, `@attr`, elements), or the value of a string/number/boolean expression.
    XPath(String),
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Boundary { .. } => "boundary",
            Kind::Regex { .. } => "regex",
            Kind::JsonPath(_) => "JSONPath",
            Kind::Css { .. } => "CSS selector",
            Kind::XPath(_) => "XPath",
        }
    }
}

/// Why an expression does not compile: what is wrong (with the position where known) and a
/// hint how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractError {
    /// "regex", "JSONPath", "CSS selector", "XPath" or "boundary".
    pub kind: &'static str,
    /// The expression as given.
    pub expression: String,
    /// 0-based byte position of the problem in the expression, where known.
    pub position: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl fmt::Display for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} `{}`", self.kind, self.expression)?;
        if let Some(p) = self.position {
            write!(f, " at position {p}")?;
        }
        write!(f, ": {}", self.message.trim_end())?;
        if let Some(p) = self.position {
            if !self.expression.contains('\n') && self.expression.len() < 200 {
                let col = self.expression.get(..p).map_or(p, |s| s.chars().count());
                write!(f, "\n    {}\n    {}^", self.expression, " ".repeat(col))?;
            }
        }
        write!(f, "\nhint: {}", self.hint)
    }
}

impl std::error::Error for ExtractError {}

// One per extractor, compiled once: the size difference (memmem finders) does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Inner {
    Boundary {
        left: Finder<'static>,
        right: Finder<'static>,
    },
    Regex {
        re: regex::bytes::Regex,
        group: usize,
    },
    JsonPath {
        path: serde_json_path::JsonPath,
        simple: Option<Vec<json::Seg>>,
    },
    Css {
        selector: css::Selector,
        attribute: Option<Vec<u8>>,
    },
    XPath(xpath::Compiled),
}

/// A compiled extractor: `Send + Sync`, compile once and share.
#[derive(Debug)]
pub struct Extractor {
    kind: Kind,
    inner: Inner,
}

/// One response body plus the parses built from it on demand (JSON value, HTML tree, XPath
/// document), so several extractors on the same response parse it once.
pub struct Document<'a> {
    body: &'a [u8],
    json: Option<Option<serde_json::Value>>,
    html: Option<html::Tree<'a>>,
    xml: Option<sxd_document::Package>,
}

impl<'a> Document<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        Document {
            body,
            json: None,
            html: None,
            xml: None,
        }
    }

    pub fn body(&self) -> &'a [u8] {
        self.body
    }

    fn json(&mut self) -> Option<&serde_json::Value> {
        let body = self.body;
        self.json
            .get_or_insert_with(|| serde_json::from_slice(body).ok())
            .as_ref()
    }

    fn html(&mut self) -> &html::Tree<'a> {
        let body = self.body;
        self.html
            .get_or_insert_with(|| html::Tree::parse(body, html::Mode::Html))
    }

    fn xml(&mut self) -> &sxd_document::Package {
        let body = self.body;
        self.xml.get_or_insert_with(|| xpath::load(body))
    }
}

impl fmt::Debug for Document<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Document")
            .field("len", &self.body.len())
            .finish_non_exhaustive()
    }
}

const JSONPATH_HINT: &str = "JSONPath (RFC 9535) starts with `$`: members `$.user.name` or \
    `$['user name']` (single or double quotes), indices `$.items[0]` / `$.items[-1]`, wildcard \
    `$.items[*].id`, descendants `$..id`, slices `$.items[0:2]`, filters `$.items[?@.price > 2]`";
const REGEX_HINT: &str = "the pattern uses the Rust regex syntax (no look-around or \
    back-references); escape literal metacharacters like `.` `(` `[` `?` with `\\`, and use \
    `(?s)` to let `.` match newlines";
const XPATH_HINT: &str = "XPath 1.0: e.g. `//input[@name='csrf_token']/@value`, \
    `/order/@id`, `//td[2]/text()`, `string(//title)`; quote string literals, use `@` for \
    attributes and balance brackets and parentheses";

impl Extractor {
    /// Compiles an extractor; errors say what is wrong in the expression and how to fix it.
    pub fn new(kind: Kind) -> Result<Extractor, ExtractError> {
        let err = |position: Option<usize>, message: String, hint: &str| ExtractError {
            kind: kind.name(),
            expression: match &kind {
                Kind::Boundary { left, right } => format!("{left}…{right}"),
                Kind::Regex { pattern, .. } => pattern.clone(),
                Kind::JsonPath(p) | Kind::XPath(p) => p.clone(),
                Kind::Css { selector, .. } => selector.clone(),
            },
            position,
            message,
            hint: hint.to_string(),
        };
        let inner = match &kind {
            Kind::Boundary { left, right } => Inner::Boundary {
                left: Finder::new(left.as_bytes()).into_owned(),
                right: Finder::new(right.as_bytes()).into_owned(),
            },
            Kind::Regex { pattern, group } => {
                let re = regex::bytes::Regex::new(pattern).map_err(|e| {
                    let msg = match &e {
                        regex::Error::Syntax(s) => s.clone(),
                        other => other.to_string(),
                    };
                    err(None, msg, REGEX_HINT)
                })?;
                let groups = re.captures_len() - 1;
                if *group > groups {
                    return Err(err(
                        None,
                        format!("group {group} does not exist: the pattern has {groups} capture group(s)"),
                        "use group 0 for the whole match or 1..=N for a parenthesised group; \
                         named groups count in order of their opening parenthesis",
                    ));
                }
                Inner::Regex { re, group: *group }
            }
            Kind::JsonPath(p) => {
                let path = serde_json_path::JsonPath::parse(p).map_err(|e| {
                    let pos = e.position().saturating_sub(1).min(p.len());
                    let msg = e.to_string();
                    let msg = msg
                        .split_once(", ")
                        .map_or(msg.as_str(), |(_, m)| m)
                        .to_string();
                    err(Some(pos), msg, JSONPATH_HINT)
                })?;
                Inner::JsonPath {
                    path,
                    simple: json::simple_path(p),
                }
            }
            Kind::Css {
                selector,
                attribute,
            } => {
                let sel =
                    css::Selector::parse(selector).map_err(|e| err(Some(e.pos), e.msg, e.hint))?;
                if attribute.as_deref() == Some("") {
                    return Err(err(None, "the attribute name is empty".into(), "give the attribute to read (e.g. `value`, `href`) or none for the text content"));
                }
                Inner::Css {
                    selector: sel,
                    attribute: attribute
                        .as_ref()
                        .map(|a| a.to_ascii_lowercase().into_bytes()),
                }
            }
            Kind::XPath(x) => {
                Inner::XPath(xpath::compile(x).map_err(|m| err(None, m, XPATH_HINT))?)
            }
        };
        Ok(Extractor { kind, inner })
    }

    /// The expression this was compiled from.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// Whether JSONPath queries evaluate lazily over the raw bytes (true for simple paths:
    /// names, non-negative indices and wildcards only) rather than through a parsed value.
    pub fn is_lazy_json(&self) -> bool {
        matches!(
            &self.inner,
            Inner::JsonPath {
                simple: Some(_),
                ..
            }
        )
    }

    /// JSONPath through the parsed value (serde_json_path) even when the path is simple; for
    /// differential tests of the lazy path. Does nothing for other kinds.
    #[doc(hidden)]
    pub fn each_via_value(
        &self,
        doc: &mut Document<'_>,
        found: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) {
        if let Inner::JsonPath { path, .. } = &self.inner {
            if let Some(v) = doc.json() {
                let mut scratch = Vec::new();
                for node in path.query(v).all() {
                    if json::emit_value(node, &mut scratch, found).is_break() {
                        return;
                    }
                }
            }
        }
    }

    /// Calls `found` with each match in document order; `found` returns
    /// `ControlFlow::Break(())` to stop early. Values are unescaped: JSON strings decoded,
    /// JSON numbers/bools/null as their JSON text, objects/arrays as compact JSON text; HTML
    /// entities decoded in CSS/XPath text and attributes. Garbage input gives no matches.
    pub fn each(&self, doc: &mut Document<'_>, found: &mut dyn FnMut(&[u8]) -> ControlFlow<()>) {
        let body = doc.body;
        match &self.inner {
            Inner::Boundary { left, right } => boundary(body, left, right, found),
            Inner::Regex { re, group } => {
                if *group == 0 {
                    for m in re.find_iter(body) {
                        if found(m.as_bytes()).is_break() {
                            return;
                        }
                    }
                } else {
                    let mut locs = re.capture_locations();
                    let mut at = 0;
                    while at <= body.len() {
                        let Some(m) = re.captures_read_at(&mut locs, body, at) else {
                            return;
                        };
                        if let Some((s, e)) = locs.get(*group) {
                            if found(&body[s..e]).is_break() {
                                return;
                            }
                        }
                        at = if m.end() == m.start() {
                            m.end() + 1
                        } else {
                            m.end()
                        };
                    }
                }
            }
            Inner::JsonPath { path, simple } => {
                if let Some(segs) = simple {
                    let mut lazy = json::Lazy {
                        b: body,
                        segs,
                        found,
                        scratch: Vec::new(),
                    };
                    let _ = lazy.run();
                } else if let Some(v) = doc.json() {
                    let mut scratch = Vec::new();
                    for node in path.query(v).all() {
                        if json::emit_value(node, &mut scratch, found).is_break() {
                            return;
                        }
                    }
                }
            }
            Inner::Css {
                selector,
                attribute,
            } => selector.each(doc.html(), attribute.as_deref(), found),
            Inner::XPath(x) => xpath::each(x, doc.xml(), found),
        }
    }
}

fn boundary(
    body: &[u8],
    left: &Finder<'_>,
    right: &Finder<'_>,
    found: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
) {
    let (ll, rl) = (left.needle().len(), right.needle().len());
    let mut pos = 0;
    while pos <= body.len() {
        let start = if ll == 0 {
            if pos > 0 {
                return;
            }
            0
        } else {
            match left.find(&body[pos..]) {
                Some(i) => pos + i + ll,
                None => return,
            }
        };
        let end = if rl == 0 {
            body.len()
        } else {
            match right.find(&body[start..]) {
                Some(i) => start + i,
                None => return,
            }
        };
        if found(&body[start..end]).is_break() {
            return;
        }
        pos = if rl == 0 { start.max(1) } else { end + rl };
        if ll == 0 {
            return;
        }
    }
}

/// Which of the matches to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrence {
    /// The n-th match, 1-based (0 never matches). Stops scanning once found.
    Nth(usize),
    /// The last match.
    Last,
    /// One match chosen uniformly at random (reservoir sampling: matches are not stored).
    Random,
    /// Every match, in document order.
    All,
}

/// Pushes the selected value(s) onto `out` and returns how many were pushed (0 when nothing
/// matched: what to do then is the caller's choice). `rng` is called only for
/// [`Occurrence::Random`], once per match after the first.
pub fn select(
    extractor: &Extractor,
    doc: &mut Document<'_>,
    occurrence: Occurrence,
    rng: &mut impl FnMut() -> u64,
    out: &mut Vec<Vec<u8>>,
) -> usize {
    match occurrence {
        Occurrence::Nth(0) => 0,
        Occurrence::Nth(n) => {
            let mut seen = 0;
            let mut pushed = 0;
            extractor.each(doc, &mut |v| {
                seen += 1;
                if seen == n {
                    out.push(v.to_vec());
                    pushed = 1;
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            pushed
        }
        Occurrence::Last | Occurrence::Random => {
            let random = occurrence == Occurrence::Random;
            let mut keep: Vec<u8> = Vec::new();
            let mut seen: u64 = 0;
            extractor.each(doc, &mut |v| {
                seen += 1;
                if !random || seen == 1 || rng().is_multiple_of(seen) {
                    keep.clear();
                    keep.extend_from_slice(v);
                }
                ControlFlow::Continue(())
            });
            if seen == 0 {
                return 0;
            }
            out.push(keep);
            1
        }
        Occurrence::All => {
            let before = out.len();
            extractor.each(doc, &mut |v| {
                out.push(v.to_vec());
                ControlFlow::Continue(())
            });
            out.len() - before
        }
    }
}

#[cfg(test)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Extractor>();
}
