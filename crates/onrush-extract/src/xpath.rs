//! XPath 1.0 via sxd-xpath over an sxd-document tree, built from XML (sxd's parser) or from
//! HTML and broken XML (the lenient [`crate::html`] tree, converted).

use std::ops::ControlFlow;

use sxd_document::dom;
use sxd_document::Package;
use sxd_xpath::{Context, Value};

use crate::html::{self, Mode, NodeKind, Tree, ROOT};

/// A compiled XPath.
pub struct Compiled(sxd_xpath::XPath);

// SAFETY: `sxd_xpath::XPath` is a `Box<dyn Expression>` whose implementations (all in
// sxd-xpath, the trait is sealed in practice) are plain immutable data: boxed
// sub-expressions, `String`s, `f64`s and owned `QName`s, with no `Rc`, `Cell` or other
// interior mutability; `evaluate` takes `&self` and keeps all evaluation state in the
// `Context`/`Evaluation` passed in. Sharing it between threads is therefore sound; the trait
// object just lacks the auto-trait bounds.
unsafe impl Send for Compiled {}
// SAFETY: as for `Send` above: immutable data, evaluated through `&self` with outside state.
unsafe impl Sync for Compiled {}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("XPath")
    }
}

pub fn compile(expr: &str) -> Result<Compiled, String> {
    // Evaluation has no namespace bindings, and sxd-xpath 0.4 panics ("No namespace for
    // prefix") when a name test such as `//ns:item` meets a node; a prefixed function or
    // variable cannot resolve either. So a prefix is refused here, where the plan loads, instead
    // of crashing the run at the first response (found by fuzzing, see crates/onrush-fuzz).
    if let Some(prefix) = namespace_prefix(expr) {
        return Err(format!(
            "the prefix `{prefix}:` names an XML namespace, and onrush's XPath has no namespace \
             bindings; match the local name instead, e.g. `//*[local-name()='item']`"
        ));
    }
    match sxd_xpath::Factory::new().build(expr) {
        Ok(Some(x)) => Ok(Compiled(x)),
        Ok(None) => Err("the expression is empty".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The first `prefix` of a `prefix:name` in `expr` (outside string literals; `::` of axes is
/// not one).
fn namespace_prefix(expr: &str) -> Option<&str> {
    let bytes = expr.as_bytes();
    let mut quote = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == b':' && bytes.get(i + 1) == Some(&b':') => i += 1,
            None if b == b':' => {
                let before = &expr[..i];
                let start = before
                    .char_indices()
                    .rev()
                    .find(|&(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
                    .map_or(0, |(p, c)| p + c.len_utf8());
                return Some(&expr[start..i]);
            }
            None => {}
        }
        i += 1;
    }
    None
}

fn looks_like_html(body: &[u8]) -> bool {
    let start = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let p = start
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(start.len());
    let head = &start[p..start.len().min(p + 14)];
    let lower = head.to_ascii_lowercase();
    lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html")
}

/// Builds the sxd document for `body`; never fails (garbage gives a document with what could
/// be recovered, possibly empty).
pub fn load(body: &[u8]) -> Package {
    if !looks_like_html(body) {
        let tree = Tree::parse(body, Mode::Xml);
        if max_depth(&tree) < html::MAX_DEPTH {
            if let Ok(s) = std::str::from_utf8(body) {
                if let Ok(p) = sxd_document::parser::parse(s) {
                    return p;
                }
            }
        }
        // Not well-formed: recover what we can with the HTML rules.
    }
    convert(&Tree::parse(body, Mode::Html))
}

fn max_depth(tree: &Tree<'_>) -> usize {
    let mut depth = vec![0u16; tree.nodes.len()];
    let mut max = 0;
    for i in 1..tree.nodes.len() {
        let d = depth[tree.nodes[i].parent as usize] + 1;
        depth[i] = d;
        max = max.max(d as usize);
    }
    max
}

fn convert(tree: &Tree<'_>) -> Package {
    let package = Package::new();
    {
        let doc = package.as_document();
        let mut elems: Vec<Option<dom::Element<'_>>> = vec![None; tree.nodes.len()];
        let mut buf = Vec::new();
        for (i, node) in tree.nodes.iter().enumerate().skip(1) {
            let parent = if node.parent == ROOT {
                None
            } else {
                elems[node.parent as usize]
            };
            match &node.kind {
                NodeKind::Element { name, .. } => {
                    let name = String::from_utf8_lossy(tree.slice(name)).to_ascii_lowercase();
                    let e = doc.create_element(name.as_str());
                    for a in tree.attrs(i as u32) {
                        let an = String::from_utf8_lossy(tree.slice(&a.name)).to_ascii_lowercase();
                        buf.clear();
                        html::decode_into(tree.slice(&a.value), &mut buf);
                        e.set_attribute_value(an.as_str(), &String::from_utf8_lossy(&buf));
                    }
                    match parent {
                        Some(p) => p.append_child(e),
                        None => doc.root().append_child(e),
                    }
                    elems[i] = Some(e);
                }
                NodeKind::Text { text, decode } => {
                    let Some(p) = parent else { continue };
                    buf.clear();
                    if *decode {
                        html::decode_into(tree.slice(text), &mut buf);
                    } else {
                        buf.extend_from_slice(tree.slice(text));
                    }
                    p.append_child(doc.create_text(&String::from_utf8_lossy(&buf)));
                }
                NodeKind::Root => {}
            }
        }
    }
    package
}

fn number_text(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if n.fract() == 0.0 && n.abs() < 1e18 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

pub fn each(x: &Compiled, package: &Package, found: &mut dyn FnMut(&[u8]) -> ControlFlow<()>) {
    let doc = package.as_document();
    let ctx = Context::new();
    let Ok(v) = x.0.evaluate(&ctx, doc.root()) else {
        return;
    };
    match v {
        Value::Nodeset(ns) => {
            for n in ns.document_order() {
                if found(n.string_value().as_bytes()).is_break() {
                    return;
                }
            }
        }
        Value::String(s) => {
            let _ = found(s.as_bytes());
        }
        Value::Number(n) => {
            let _ = found(number_text(n).as_bytes());
        }
        Value::Boolean(b) => {
            let _ = found(if b { b"true" } else { b"false" });
        }
    }
}
