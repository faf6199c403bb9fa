//! A small, lenient HTML/XML tokenizer and flat tree builder.
//!
//! Never fails: anything that is not markup is text, unclosed tags close at the end of the
//! document, stray end tags are ignored. Nodes are stored in document (pre-order) order in one
//! `Vec`, so the descendants of node `i` are exactly `i + 1 .. nodes[i].end`; names and values
//! are byte ranges into the body (nothing is copied), entity decoding happens on output.
//! Nesting deeper than [`MAX_DEPTH`] is flattened (deeper elements become siblings), so nothing
//! that walks the tree can recurse without bound.

use std::borrow::Cow;
use std::ops::Range;

use memchr::{memchr, memmem};

/// Deepest element nesting kept; deeper start tags are attached to the element at this depth.
pub const MAX_DEPTH: usize = 256;

/// Root node index.
pub const ROOT: u32 = 0;
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Case-insensitive names, void elements, raw-text elements, implied end tags.
    Html,
    /// Case-sensitive names, CDATA sections, `/>` honoured, no HTML rules.
    Xml,
}

#[derive(Debug, Clone)]
pub enum NodeKind {
    Root,
    Element {
        name: Range<u32>,
        attrs: Range<u32>,
    },
    /// `decode`: entities must be decoded on output (false for script/style and CDATA).
    Text {
        text: Range<u32>,
        decode: bool,
    },
}

#[derive(Debug, Clone)]
pub struct Node {
    pub kind: NodeKind,
    pub parent: u32,
    pub prev_sibling: u32,
    pub next_sibling: u32,
    pub first_child: u32,
    last_child: u32,
    /// One past the last descendant.
    pub end: u32,
}

#[derive(Debug, Clone)]
pub struct Attr {
    pub name: Range<u32>,
    /// Raw value (quotes removed, entities not decoded); empty for a bare attribute.
    pub value: Range<u32>,
}

#[derive(Debug)]
pub struct Tree<'a> {
    pub body: &'a [u8],
    pub mode: Mode,
    pub nodes: Vec<Node>,
    pub attrs: Vec<Attr>,
}

const VOID: &[&[u8]] = &[
    b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta", b"param",
    b"source", b"track", b"wbr",
];

/// Start tags that close an open `<p>`.
const CLOSES_P: &[&[u8]] = &[
    b"p",
    b"div",
    b"ul",
    b"ol",
    b"dl",
    b"table",
    b"form",
    b"h1",
    b"h2",
    b"h3",
    b"h4",
    b"h5",
    b"h6",
    b"section",
    b"article",
    b"header",
    b"footer",
    b"nav",
    b"pre",
    b"blockquote",
    b"hr",
    b"aside",
    b"main",
    b"figure",
    b"fieldset",
    b"address",
];

fn is_in(name: &[u8], set: &[&[u8]]) -> bool {
    set.iter().any(|s| s.eq_ignore_ascii_case(name))
}

fn r(range: Range<usize>) -> Range<u32> {
    range.start as u32..range.end as u32
}

impl<'a> Tree<'a> {
    pub fn slice(&self, range: &Range<u32>) -> &'a [u8] {
        &self.body[range.start as usize..range.end as usize]
    }

    pub fn name_eq(&self, range: &Range<u32>, name: &[u8]) -> bool {
        let n = self.slice(range);
        match self.mode {
            Mode::Html => n.eq_ignore_ascii_case(name),
            Mode::Xml => n == name,
        }
    }

    pub fn element_name(&self, node: u32) -> Option<&'a [u8]> {
        match &self.nodes[node as usize].kind {
            NodeKind::Element { name, .. } => Some(self.slice(name)),
            _ => None,
        }
    }

    pub fn is_element(&self, node: u32) -> bool {
        matches!(self.nodes[node as usize].kind, NodeKind::Element { .. })
    }

    pub fn attrs(&self, node: u32) -> &[Attr] {
        match &self.nodes[node as usize].kind {
            NodeKind::Element { attrs, .. } => {
                &self.attrs[attrs.start as usize..attrs.end as usize]
            }
            _ => &[],
        }
    }

    /// Raw (undecoded) value of the first attribute called `name`.
    pub fn attr_raw(&self, node: u32, name: &[u8]) -> Option<&'a [u8]> {
        self.attrs(node)
            .iter()
            .find(|a| self.name_eq(&a.name, name))
            .map(|a| self.slice(&a.value))
    }

    pub fn prev_element(&self, node: u32) -> Option<u32> {
        let mut n = self.nodes[node as usize].prev_sibling;
        while n != NONE {
            if self.is_element(n) {
                return Some(n);
            }
            n = self.nodes[n as usize].prev_sibling;
        }
        None
    }

    pub fn next_element(&self, node: u32) -> Option<u32> {
        let mut n = self.nodes[node as usize].next_sibling;
        while n != NONE {
            if self.is_element(n) {
                return Some(n);
            }
            n = self.nodes[n as usize].next_sibling;
        }
        None
    }

    pub fn parent(&self, node: u32) -> Option<u32> {
        let p = self.nodes[node as usize].parent;
        (p != NONE).then_some(p)
    }

    /// Appends the decoded text content (all descendant text, in order) of `node` to `out`.
    pub fn text_content(&self, node: u32, out: &mut Vec<u8>) {
        let n = &self.nodes[node as usize];
        for d in &self.nodes[node as usize..n.end as usize] {
            if let NodeKind::Text { text, decode } = &d.kind {
                let raw = self.slice(text);
                if *decode {
                    decode_into(raw, out);
                } else {
                    out.extend_from_slice(raw);
                }
            }
        }
    }

    /// Builds the tree; never fails.
    pub fn parse(body: &'a [u8], mode: Mode) -> Tree<'a> {
        let mut b = Builder {
            tree: Tree {
                body,
                mode,
                nodes: Vec::with_capacity(body.len() / 24 + 4),
                attrs: Vec::with_capacity(body.len() / 48 + 4),
            },
            stack: Vec::with_capacity(32),
        };
        b.tree.nodes.push(Node {
            kind: NodeKind::Root,
            parent: NONE,
            prev_sibling: NONE,
            next_sibling: NONE,
            first_child: NONE,
            last_child: NONE,
            end: 0,
        });
        b.stack.push(ROOT);
        b.run();
        let len = b.tree.nodes.len() as u32;
        while let Some(n) = b.stack.pop() {
            b.tree.nodes[n as usize].end = len;
        }
        b.tree
    }
}

/// Decodes HTML character references in `raw` (invalid UTF-8 is replaced) and appends to `out`.
pub fn decode_into(raw: &[u8], out: &mut Vec<u8>) {
    if memchr(b'&', raw).is_none() {
        out.extend_from_slice(raw);
        return;
    }
    match String::from_utf8_lossy(raw) {
        Cow::Borrowed(s) => {
            html_escape::decode_html_entities_to_vec(s, out);
        }
        Cow::Owned(s) => {
            html_escape::decode_html_entities_to_vec(&s, out);
        }
    }
}

struct Builder<'a> {
    tree: Tree<'a>,
    stack: Vec<u32>,
}

fn is_name_end(c: u8) -> bool {
    c.is_ascii_whitespace() || c == b'>' || c == b'/'
}

impl<'a> Builder<'a> {
    fn top(&self) -> u32 {
        *self.stack.last().unwrap_or(&ROOT)
    }

    fn append(&mut self, kind: NodeKind) -> u32 {
        let idx = self.tree.nodes.len() as u32;
        let parent = self.top();
        let prev = self.tree.nodes[parent as usize].last_child;
        self.tree.nodes.push(Node {
            kind,
            parent,
            prev_sibling: prev,
            next_sibling: NONE,
            first_child: NONE,
            last_child: NONE,
            end: idx + 1,
        });
        if prev == NONE {
            self.tree.nodes[parent as usize].first_child = idx;
        } else {
            self.tree.nodes[prev as usize].next_sibling = idx;
        }
        self.tree.nodes[parent as usize].last_child = idx;
        idx
    }

    fn text(&mut self, range: Range<usize>, decode: bool) {
        if range.start < range.end {
            self.append(NodeKind::Text {
                text: r(range),
                decode,
            });
        }
    }

    fn pop(&mut self) {
        if self.stack.len() > 1 {
            let n = self.stack.pop().unwrap_or(ROOT);
            self.tree.nodes[n as usize].end = self.tree.nodes.len() as u32;
        }
    }

    fn top_is(&self, name: &[u8]) -> bool {
        let t = self.top();
        t != ROOT
            && self
                .tree
                .element_name(t)
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
    }

    /// Position in the stack of the nearest open `name`, searching no further than `stop_at`.
    fn find_open(&self, name: &[u8], stop_at: &[&[u8]]) -> Option<usize> {
        for (i, &n) in self.stack.iter().enumerate().rev() {
            if n == ROOT {
                return None;
            }
            let en = self.tree.element_name(n).unwrap_or(b"");
            let eq = match self.tree.mode {
                Mode::Html => en.eq_ignore_ascii_case(name),
                Mode::Xml => en == name,
            };
            if eq {
                return Some(i);
            }
            if is_in(en, stop_at) {
                return None;
            }
        }
        None
    }

    fn close_to(&mut self, pos: usize) {
        while self.stack.len() > pos {
            self.pop();
        }
    }

    fn implied_end_tags(&mut self, name: &[u8]) {
        if is_in(name, CLOSES_P) && self.top_is(b"p") {
            self.pop();
        }
        let (targets, stop): (&[&[u8]], &[&[u8]]) = if name.eq_ignore_ascii_case(b"li") {
            (&[b"li"], &[b"ul", b"ol"])
        } else if name.eq_ignore_ascii_case(b"dt") || name.eq_ignore_ascii_case(b"dd") {
            (&[b"dt", b"dd"], &[b"dl"])
        } else if name.eq_ignore_ascii_case(b"tr") {
            (&[b"tr"], &[b"table", b"thead", b"tbody", b"tfoot"])
        } else if name.eq_ignore_ascii_case(b"td") || name.eq_ignore_ascii_case(b"th") {
            (&[b"td", b"th"], &[b"tr", b"table"])
        } else if name.eq_ignore_ascii_case(b"thead")
            || name.eq_ignore_ascii_case(b"tbody")
            || name.eq_ignore_ascii_case(b"tfoot")
        {
            (&[b"thead", b"tbody", b"tfoot"], &[b"table"])
        } else if name.eq_ignore_ascii_case(b"option") {
            (&[b"option"], &[b"select", b"datalist"])
        } else {
            return;
        };
        for t in targets {
            if let Some(pos) = self.find_open(t, stop) {
                self.close_to(pos);
                return;
            }
        }
    }

    fn run(&mut self) {
        let body = self.tree.body;
        let html = self.tree.mode == Mode::Html;
        let len = body.len();
        let mut i = 0;
        let mut text_start = 0;
        while i < len {
            let Some(off) = memchr(b'<', &body[i..]) else {
                break;
            };
            let lt = i + off;
            let next = body.get(lt + 1).copied().unwrap_or(0);
            if next == b'!' || next == b'?' {
                self.text(text_start..lt, true);
                let rest = &body[lt..];
                let end = if rest.starts_with(b"<!--") {
                    memmem::find(&rest[4..], b"-->").map_or(len, |p| lt + 4 + p + 3)
                } else if rest.starts_with(b"<![CDATA[") {
                    let s = lt + 9;
                    let e = memmem::find(&body[s..], b"]]>").map_or(len, |p| s + p);
                    self.text(s..e, false);
                    (e + 3).min(len)
                } else {
                    memchr(b'>', rest).map_or(len, |p| lt + p + 1)
                };
                i = end;
                text_start = end;
            } else if next == b'/' {
                let s = lt + 2;
                let mut e = s;
                while e < len && !is_name_end(body[e]) {
                    e += 1;
                }
                if e == s {
                    // "</>" or "</ " : not an end tag; treat as text.
                    i = lt + 1;
                    continue;
                }
                self.text(text_start..lt, true);
                let close = memchr(b'>', &body[e..]).map_or(len, |p| e + p + 1);
                let name = &body[s..e];
                if let Some(pos) = self.find_open(name, &[]) {
                    self.close_to(pos);
                }
                i = close;
                text_start = close;
            } else if next.is_ascii_alphabetic() || (!html && (next == b'_' || next >= 0x80)) {
                self.text(text_start..lt, true);
                i = self.start_tag(lt);
                text_start = i;
            } else {
                i = lt + 1;
            }
        }
        self.text(text_start..len, true);
    }

    /// Parses the start tag at `lt`; returns the position after it (and after raw text).
    fn start_tag(&mut self, lt: usize) -> usize {
        let body = self.tree.body;
        let len = body.len();
        let html = self.tree.mode == Mode::Html;
        let s = lt + 1;
        let mut i = s;
        while i < len && !is_name_end(body[i]) {
            i += 1;
        }
        let name = s..i;
        let attr_start = self.tree.attrs.len();
        let mut self_closing = false;
        loop {
            while i < len && body[i].is_ascii_whitespace() {
                i += 1;
            }
            if i >= len {
                break;
            }
            match body[i] {
                b'>' => {
                    i += 1;
                    break;
                }
                b'/' => {
                    if body.get(i + 1) == Some(&b'>') {
                        self_closing = true;
                        i += 2;
                        break;
                    }
                    i += 1;
                    continue;
                }
                _ => {}
            }
            let ns = i;
            i += 1;
            while i < len && !is_name_end(body[i]) && body[i] != b'=' {
                i += 1;
            }
            let aname = ns..i;
            while i < len && body[i].is_ascii_whitespace() {
                i += 1;
            }
            let mut value = i..i;
            if i < len && body[i] == b'=' {
                i += 1;
                while i < len && body[i].is_ascii_whitespace() {
                    i += 1;
                }
                if i < len && (body[i] == b'"' || body[i] == b'\'') {
                    let q = body[i];
                    let vs = i + 1;
                    let ve = memchr(q, &body[vs..]).map_or(len, |p| vs + p);
                    value = vs..ve;
                    i = (ve + 1).min(len);
                } else {
                    let vs = i;
                    while i < len && !body[i].is_ascii_whitespace() && body[i] != b'>' {
                        i += 1;
                    }
                    value = vs..i;
                }
            }
            self.tree.attrs.push(Attr {
                name: r(aname),
                value: r(value),
            });
        }
        let attrs = attr_start as u32..self.tree.attrs.len() as u32;
        let name_bytes = &body[name.clone()];
        if html {
            self.implied_end_tags(name_bytes);
        }
        let idx = self.append(NodeKind::Element {
            name: r(name.clone()),
            attrs,
        });
        let void = html && is_in(name_bytes, VOID);
        if void || self_closing {
            return i;
        }
        if self.stack.len() <= MAX_DEPTH {
            self.stack.push(idx);
        }
        if html {
            let raw = [
                &b"script"[..],
                b"style",
                b"textarea",
                b"title",
                b"xmp",
                b"noscript",
            ];
            if let Some(kind) = raw.iter().find(|k| k.eq_ignore_ascii_case(name_bytes)) {
                let end = find_end_tag(body, i, kind);
                let decode = !(kind == b"script" || kind == b"style" || kind == b"xmp");
                // noscript is parsed as raw text too (scripting enabled, as browsers do).
                self.text(i..end, decode && *kind != b"noscript");
                if self.top() == idx {
                    self.pop();
                }
                let close = if end < len {
                    memchr(b'>', &body[end..]).map_or(len, |p| end + p + 1)
                } else {
                    len
                };
                return close;
            }
        }
        i
    }
}

/// Position of `</name` (case-insensitive) at or after `from`, or the end of the body.
fn find_end_tag(body: &[u8], from: usize, name: &[u8]) -> usize {
    let mut i = from;
    while let Some(p) = memchr(b'<', &body[i..]) {
        let lt = i + p;
        let rest = &body[lt..];
        if rest.len() >= 2 + name.len()
            && rest[1] == b'/'
            && rest[2..2 + name.len()].eq_ignore_ascii_case(name)
            && rest.get(2 + name.len()).is_none_or(|&c| is_name_end(c))
        {
            return lt;
        }
        i = lt + 1;
    }
    body.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_nested_elements_with_implied_ends() {
        let t = Tree::parse(b"<ul><li>a<li>b</ul><p>x<div>y</div>", Mode::Html);
        let names: Vec<_> = (0..t.nodes.len() as u32)
            .filter_map(|n| {
                t.element_name(n)
                    .map(|s| String::from_utf8_lossy(s).into_owned())
            })
            .collect();
        assert_eq!(names, ["ul", "li", "li", "p", "div"]);
        // second li is a sibling of the first, div is not inside p
        assert_eq!(t.element_name(4), Some(&b"li"[..]));
        assert_eq!(t.nodes[4].parent, 1);
        let div = 8;
        assert_eq!(t.element_name(div), Some(&b"div"[..]));
        assert_eq!(t.nodes[div as usize].parent, ROOT);
    }

    #[test]
    fn script_is_raw_text() {
        let t = Tree::parse(
            b"<script>if (a<b) x='</p>'</script><p>&amp;</p>",
            Mode::Html,
        );
        let mut out = Vec::new();
        t.text_content(1, &mut out);
        assert_eq!(out, b"if (a<b) x='</p>'");
        out.clear();
        t.text_content(3, &mut out);
        assert_eq!(out, b"&");
    }
}
