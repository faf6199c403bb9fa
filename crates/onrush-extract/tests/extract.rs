use std::ops::ControlFlow;

use onrush_extract::{select, Document, ExtractError, Extractor, Kind, Occurrence};
use onrush_server::samples::{HTML, JSON, XML};
use onrush_server::{CSRF_TOKEN, JSON_TOKEN, JSON_USER_ID, JSON_USER_NAME, XML_ORDER_ID};

#[path = "docs.rs"]
mod docs;

fn all(ex: &Extractor, body: &[u8]) -> Vec<String> {
    let mut doc = Document::new(body);
    let mut v = Vec::new();
    ex.each(&mut doc, &mut |m| {
        v.push(String::from_utf8_lossy(m).into_owned());
        ControlFlow::Continue(())
    });
    v
}

fn ex(kind: Kind) -> Extractor {
    Extractor::new(kind).unwrap_or_else(|e| panic!("{e}"))
}

fn boundary(l: &str, r: &str) -> Kind {
    Kind::Boundary {
        left: l.into(),
        right: r.into(),
    }
}
fn regex(p: &str, group: usize) -> Kind {
    Kind::Regex {
        pattern: p.into(),
        group,
    }
}
fn css(s: &str, attr: Option<&str>) -> Kind {
    Kind::Css {
        selector: s.into(),
        attribute: attr.map(Into::into),
    }
}
fn jp(p: &str) -> Kind {
    Kind::JsonPath(p.into())
}
fn xp(p: &str) -> Kind {
    Kind::XPath(p.into())
}

fn err(kind: Kind) -> ExtractError {
    match Extractor::new(kind) {
        Ok(e) => panic!("expected an error for {:?}", e.kind()),
        Err(e) => e,
    }
}

#[test]
fn csrf_token_from_html_with_every_html_kind() {
    let kinds = [
        boundary(r#"name="csrf_token" value=""#, "\""),
        regex(r#"name="csrf_token" value="([^"]+)""#, 1),
        css("input[name=csrf_token]", Some("value")),
        xp("//input[@name='csrf_token']/@value"),
    ];
    for k in kinds {
        assert_eq!(all(&ex(k.clone()), HTML.as_bytes()), [CSRF_TOKEN], "{k:?}");
    }
}

#[test]
fn json_values_via_jsonpath() {
    let body = JSON.as_bytes();
    assert_eq!(all(&ex(jp("$.token")), body), [JSON_TOKEN]);
    assert_eq!(all(&ex(jp("$.user.id")), body), [JSON_USER_ID.to_string()]);
    assert_eq!(all(&ex(jp("$.user.name")), body), [JSON_USER_NAME]);
    assert_eq!(all(&ex(jp("$['user']['name']")), body), [JSON_USER_NAME]);
    assert_eq!(all(&ex(jp("$.items[*].id")), body), ["1", "2", "3", "4"]);
    assert_eq!(all(&ex(jp("$.items[1].price")), body), ["3.2"]);
    assert_eq!(all(&ex(jp("$.items[3].price")), body), ["4.0"]);
    assert_eq!(
        all(&ex(jp("$.user.roles")), body),
        [r#"["admin","tester"]"#]
    );
    assert_eq!(all(&ex(jp("$.items[2].in_stock")), body), ["false"]);
    // Full RFC 9535 through the fallback.
    assert_eq!(
        all(&ex(jp("$.items[?@.in_stock == false].name")), body),
        ["Croissant"]
    );
    assert_eq!(all(&ex(jp("$..roles[-1]")), body), ["tester"]);
    assert_eq!(
        all(&ex(jp("$.items[1:3].name")), body),
        ["Cappuccino", "Croissant"]
    );
    assert!(ex(jp("$.user.name")).is_lazy_json());
    assert!(!ex(jp("$..name")).is_lazy_json());
}

#[test]
fn an_xpath_with_a_namespace_prefix_is_refused_at_compile_instead_of_crashing_the_run() {
    // sxd-xpath panics evaluating `//it:em` over any document: there are no namespace
    // bindings. It must be an error when the plan loads.
    for expr in [
        "//it:em[2]/text()",
        "//a/@xlink:href",
        "count(//ns:*)",
        "//a[$p:v]",
    ] {
        let e = err(xp(expr)).to_string();
        assert!(e.contains("names an XML namespace"), "{expr}: {e}");
    }
    assert!(err(xp("//it:em")).to_string().contains("`it:`"));
    // Non-ASCII before the colon (a mutation of the above made the first check cut a char).
    assert!(err(xp("//i\u{fffd}:em"))
        .to_string()
        .contains("names an XML namespace"));
    assert!(err(xp("//\u{e9}t\u{e9}:em"))
        .to_string()
        .contains("`\u{e9}t\u{e9}:`"));
    // Colons that are not prefixes: axes, literals.
    let ok = ex(xp(
        "//child::item[@id='a:b'][. != \"c:d\"]/descendant-or-self::text()",
    ));
    assert_eq!(all(&ok, b"<r><item id='a:b'>x</item></r>"), ["x"]);
    let local = ex(xp("//*[local-name()='em']"));
    assert_eq!(all(&local, b"<r xmlns:it='u'><it:em>1</it:em></r>"), ["1"]);
}

#[test]
fn xml_order_id_via_xpath() {
    let body = XML.as_bytes();
    assert_eq!(all(&ex(xp("/order/@id")), body), [XML_ORDER_ID]);
    assert_eq!(all(&ex(xp("//item[@id='3']/name")), body), ["Croissant"]);
    assert_eq!(all(&ex(xp("//price/text()")), body), ["2.50", "1.90"]);
    assert_eq!(all(&ex(xp("count(//item)")), body), ["2"]);
    assert_eq!(all(&ex(xp("/order/customer/name")), body), [JSON_USER_NAME]);
}

#[test]
fn xpath_over_html() {
    let body = HTML.as_bytes();
    assert_eq!(
        all(&ex(xp("//td[2]/text()")), body),
        ["Espresso", "Cappuccino", "Croissant"]
    );
    assert_eq!(all(&ex(xp("//h1")), body), ["Sign in"]);
    assert_eq!(all(&ex(xp("count(//a)")), body), ["4"]);
    assert_eq!(
        all(&ex(xp("//a[@class='product']/@href")), body),
        ["/html?product=1", "/html?product=2"]
    );
    assert_eq!(
        all(
            &ex(xp("//p")),
            b"<html><body><p>a &amp; b<p>c &lt; d</body>"
        ),
        ["a & b", "c < d"]
    );
}

#[test]
fn css_selectors_on_the_sample() {
    let body = HTML.as_bytes();
    assert_eq!(all(&ex(css("h1", None)), body), ["Sign in"]);
    assert_eq!(all(&ex(css("#heading", None)), body), ["Sign in"]);
    assert_eq!(
        all(&ex(css("a.product", Some("href"))), body),
        ["/html?product=1", "/html?product=2"]
    );
    assert_eq!(
        all(&ex(css("#products td:nth-child(2)", None)), body),
        ["Espresso", "Cappuccino", "Croissant"]
    );
    assert_eq!(
        all(
            &ex(css("table > tbody > tr:last-child > td:first-child", None)),
            body
        ),
        ["3"]
    );
    assert_eq!(
        all(
            &ex(css("form#login > input[type=hidden]", Some("name"))),
            body
        ),
        ["csrf_token"]
    );
    assert_eq!(
        all(&ex(css("nav a:not(.product)", None)), body),
        ["Session (JSON)", "Order (XML)"]
    );
    assert_eq!(all(&ex(css("label", None)), body), ["User ", "Password "]);
    assert_eq!(
        all(&ex(css("a[href^='/html'], h1", None)), body),
        ["Sign in", "Espresso", "Cappuccino"]
    );
    assert_eq!(all(&ex(css("th + th", None)), body), ["name", "price"]);
    assert_eq!(
        all(&ex(css("tr:nth-child(odd) td:first-child", None)), body),
        ["1", "3"]
    );
    assert_eq!(
        all(&ex(css("input", Some("placeholder"))), body),
        Vec::<String>::new()
    );
    assert_eq!(
        all(&ex(css("title", None)), body),
        ["onrush sample shop - Sign in"]
    );
    // entities decoded in text and attributes; whitespace as in the document
    let doc = b"<div title=\"a &amp; b\">x &lt;<b>y</b>\n z&#33;</div>";
    assert_eq!(all(&ex(css("div", None)), doc), ["x <y\n z!"]);
    assert_eq!(all(&ex(css("div", Some("title"))), doc), ["a & b"]);
}

#[test]
fn boundary_and_regex_details() {
    let body = b"<b>1</b><b>2</b><b>3</b>";
    assert_eq!(all(&ex(boundary("<b>", "</b>")), body), ["1", "2", "3"]);
    assert_eq!(all(&ex(boundary("", "<b>")), body), [""]);
    assert_eq!(all(&ex(boundary("", "</b>")), body), ["<b>1"]);
    assert_eq!(
        all(&ex(boundary("</b><b>", "")), body),
        ["2</b><b>3</b>", "3</b>"]
    );
    assert_eq!(
        all(&ex(boundary("<i>", "</i>")), body),
        Vec::<String>::new()
    );
    assert_eq!(all(&ex(regex(r"<b>(\d)</b>", 1)), body), ["1", "2", "3"]);
    assert_eq!(
        all(&ex(regex(r"<b>(?<n>\d)</b>", 0)), body),
        ["<b>1</b>", "<b>2</b>", "<b>3</b>"]
    );
    assert_eq!(all(&ex(regex(r"x*", 0)), b"ab").len(), 3);
    // regex over invalid UTF-8
    assert_eq!(
        all(&ex(regex(r"(?-u)id=(\w+)", 1)), b"\xff\xfeid=abc\xff"),
        ["abc"]
    );
}

#[test]
fn occurrences() {
    let e = ex(jp("$.items[*].name"));
    let body = JSON.as_bytes();
    let run = |occ: Occurrence, rng: &mut dyn FnMut() -> u64| {
        let mut out = Vec::new();
        let mut doc = Document::new(body);
        let n = select(&e, &mut doc, occ, &mut || rng(), &mut out);
        assert_eq!(n, out.len());
        out.into_iter()
            .map(|v| String::from_utf8(v).unwrap())
            .collect::<Vec<_>>()
    };
    let mut zero = || 0u64;
    assert_eq!(run(Occurrence::Nth(1), &mut zero), ["Espresso"]);
    assert_eq!(run(Occurrence::Nth(3), &mut zero), ["Croissant"]);
    assert_eq!(run(Occurrence::Nth(5), &mut zero), Vec::<String>::new());
    assert_eq!(run(Occurrence::Nth(0), &mut zero), Vec::<String>::new());
    assert_eq!(run(Occurrence::Last, &mut zero), ["Orange juice"]);
    assert_eq!(
        run(Occurrence::All, &mut zero),
        ["Espresso", "Cappuccino", "Croissant", "Orange juice"]
    );
    // rng() % k == 0 always: the reservoir keeps replacing, ending on the last match
    assert_eq!(run(Occurrence::Random, &mut zero), ["Orange juice"]);
    // rng() % k never 0: keeps the first
    let mut never = || 1u64 << 62 | 1; // odd and not divisible by 2, 3 or 4? (2^62+1) % 3 == 2
    assert_eq!(run(Occurrence::Random, &mut never), ["Espresso"]);
    // a real generator hits every item over many draws
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut xorshift = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        seen.extend(run(Occurrence::Random, &mut xorshift));
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    // Nth stops the scan: the callback is not called after the match
    let mut calls = 0;
    let mut doc = Document::new(body);
    e.each(&mut doc, &mut |_| {
        calls += 1;
        ControlFlow::Break(())
    });
    assert_eq!(calls, 1);
    // no match: nothing pushed for any occurrence
    let none = ex(css("video", None));
    for occ in [
        Occurrence::Nth(1),
        Occurrence::Last,
        Occurrence::Random,
        Occurrence::All,
    ] {
        let mut out = vec![b"keep".to_vec()];
        assert_eq!(
            select(
                &none,
                &mut Document::new(HTML.as_bytes()),
                occ,
                &mut || 0,
                &mut out
            ),
            0
        );
        assert_eq!(out, [b"keep".to_vec()]);
    }
}

#[test]
fn one_document_serves_several_extractors() {
    let mut doc = Document::new(HTML.as_bytes());
    let a = ex(css("h1", None));
    let b = ex(xp("//h1"));
    let c = ex(css("#heading", None));
    for e in [&a, &b, &c, &a] {
        let mut got = Vec::new();
        e.each(&mut doc, &mut |m| {
            got.push(m.to_vec());
            ControlFlow::Continue(())
        });
        assert_eq!(got, [b"Sign in".to_vec()]);
    }
}

#[test]
fn error_messages_say_where_and_how() {
    let e = err(regex("name=(\"[^\"]+\"", 1));
    let s = e.to_string();
    assert!(s.contains("unclosed group") && s.contains("hint:"), "{s}");
    let e = err(regex("a(b)", 2));
    assert!(
        e.to_string()
            .contains("group 2 does not exist: the pattern has 1 capture group"),
        "{e}"
    );

    let e = err(jp("$.user[name"));
    assert_eq!(e.kind, "JSONPath");
    assert!(e.position.is_some(), "{e}");
    let s = e.to_string();
    assert!(
        s.contains("at position") && s.contains("hint: JSONPath (RFC 9535)") && s.contains('^'),
        "{s}"
    );
    let e = err(jp("user.name"));
    assert_eq!(e.position, Some(0), "{e}");

    let e = err(css("input[name=csrf_token", Some("value")));
    assert!(
        e.to_string().contains("at position 21") && e.to_string().contains("expected ']'"),
        "{e}"
    );
    let e = err(css("a:hover", None));
    let s = e.to_string();
    assert!(
        s.contains("unsupported pseudo-class ':hover'")
            && s.contains("at position 2")
            && s.contains("supported:"),
        "{s}"
    );
    let e = err(css("div >", None));
    assert!(e.to_string().contains("end of the selector"), "{e}");
    let e = err(css("li:nth-child(2x+1)", None));
    assert!(e.to_string().contains("bad an+b argument"), "{e}");
    assert!(err(css("", None)).to_string().contains("empty selector"));

    let e = err(xp("//input[@name='csrf_token'/@value"));
    assert!(e.to_string().contains("hint: XPath 1.0"), "{e}");
    assert!(err(xp("")).to_string().contains("empty"));
    assert!(err(xp("//a[")).to_string().contains("invalid XPath"));
}

#[test]
fn extractor_is_shared_between_threads() {
    let e = std::sync::Arc::new(ex(xp("/order/@id")));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let e = e.clone();
            std::thread::spawn(move || all(&e, XML.as_bytes()))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), [XML_ORDER_ID]);
    }
}

fn every_kind() -> Vec<Extractor> {
    [
        boundary(r#"name="csrf_token" value=""#, "\""),
        boundary("", "<"),
        regex(r#"value="([^"]*)""#, 1),
        regex(r"\d+", 0),
        css("input[name=csrf_token]", Some("value")),
        css("table td:nth-child(2)", None),
        css("*", None),
        jp("$.token"),
        jp("$.user.name"),
        jp("$.items[*].id"),
        jp("$.items[2]"),
        jp("$.*"),
        jp("$..id"),
        jp("$.items[?@.price > 2].name"),
        xp("//input[@name='csrf_token']/@value"),
        xp("/order/@id"),
        xp("//*"),
        xp("string(/)"),
    ]
    .into_iter()
    .map(ex)
    .collect()
}

fn run_all(exs: &[Extractor], body: &[u8]) -> usize {
    let mut n = 0;
    let mut doc = Document::new(body);
    for e in exs {
        e.each(&mut doc, &mut |_| {
            n += 1;
            ControlFlow::Continue(())
        });
    }
    n
}

#[test]
fn truncations_of_every_sample_do_not_panic() {
    let exs = every_kind();
    for sample in [HTML, JSON, XML] {
        let b = sample.as_bytes();
        for cut in 0..=b.len() {
            run_all(&exs, &b[..cut]);
            run_all(&exs, &b[cut..]);
        }
    }
    // truncated JSON finds nothing through the full parse
    let cut = &JSON.as_bytes()[..JSON.len() / 2];
    assert_eq!(all(&ex(jp("$..id")), cut), Vec::<String>::new());
}

#[test]
fn garbage_and_deep_nesting_do_not_panic() {
    let exs = every_kind();
    let deep = 200_000;
    let inputs: Vec<Vec<u8>> = vec![
        b"[".repeat(deep),
        b"{\"a\":".repeat(deep),
        [b"[".repeat(deep), b"]".repeat(deep)].concat(),
        b"<a>".repeat(deep),
        b"<div><p>".repeat(deep / 2),
        [b"<a>".repeat(deep), b"</a>".repeat(deep)].concat(),
        b"<".repeat(1000),
        b"<a b=\"".to_vec(),
        b"<!--".to_vec(),
        b"<![CDATA[x".to_vec(),
        b"\"\\".to_vec(),
        b"{\"token\": \"\\ud800\"}".to_vec(),
        b"{\"token\": \"\xff\xfe\"}".to_vec(),
        b"\xff\xfe\xfd<input name=csrf_token value=\xff>".to_vec(),
        vec![0u8; 1000],
    ];
    for i in &inputs {
        run_all(&exs, i);
    }
    // pseudo-random bytes drawn from a JSON/HTML-ish alphabet
    let alphabet = b"{}[]<>/\"'=:,.!-?& abc1\\\n";
    let mut state = 12345u64;
    for len in [1usize, 5, 17, 64, 300] {
        for _ in 0..300 {
            let doc: Vec<u8> = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    alphabet[(state >> 33) as usize % alphabet.len()]
                })
                .collect();
            run_all(&exs, &doc);
        }
    }
}

#[test]
fn big_documents() {
    let html = docs::big_html(50_000);
    assert!((45_000..55_000).contains(&html.len()));
    let b = html.as_bytes();
    assert_eq!(
        all(&ex(css("input[name=csrf_token]", Some("value"))), b),
        [CSRF_TOKEN]
    );
    assert_eq!(
        all(&ex(css("input[name=footer_token]", Some("value"))), b),
        [docs::END_TOKEN]
    );
    assert_eq!(
        all(&ex(boundary("name=\"footer_token\" value=\"", "\"")), b),
        [docs::END_TOKEN]
    );
    assert_eq!(
        all(&ex(xp("//input[@name='footer_token']/@value")), b),
        [docs::END_TOKEN]
    );
    let rows = all(&ex(css("tr.row td:first-child", None)), b);
    assert!(rows.len() > 300 && rows[0] == "4", "{}", rows.len());
    let json = docs::big_json(10_000);
    assert!((9_000..11_000).contains(&json.len()));
    let j = json.as_bytes();
    assert_eq!(all(&ex(jp("$.next_page")), j), ["/json?page=2"]);
    assert_eq!(
        all(&ex(jp("$.items[4].name")), j),
        ["Product 5 \"special\""]
    );
    let ids = all(&ex(jp("$.items[*].id")), j);
    assert!(ids.len() > 50);
    assert_eq!(ids, all(&ex(jp("$..items[*].id")), j));
}

// ---- differential test of the lazy JSONPath path against serde_json_path ----

struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.next() as usize % xs.len()]
    }
}

const KEYS: &[&str] = &[
    "a", "b", "c", "id", "name", "items", "x y", "é", "a\\\"q", "\\u0062",
];
const SCALARS: &[&str] = &[
    "1",
    "-0",
    "0",
    "12",
    "-7",
    "1.0",
    "2.50",
    "1e3",
    "-1.5E-2",
    "18446744073709551615",
    "123456789012345678901",
    "true",
    "false",
    "null",
    "\"s\"",
    "\"\"",
    "\"a\\nb\\u00e9\\ud83d\\ude00\"",
    "\"tab\\t\\\"q\\\"\"",
    "\"ü\"",
];

fn gen_value(g: &mut Gen, depth: usize, out: &mut String) {
    let r = g.next() % 10;
    if depth > 3 || r < 4 {
        out.push_str(g.pick(SCALARS));
    } else if r < 7 {
        out.push('[');
        for i in 0..g.next() % 5 {
            if i > 0 {
                out.push_str(if g.next().is_multiple_of(2) {
                    ","
                } else {
                    " ,\n "
                });
            }
            gen_value(g, depth + 1, out);
        }
        out.push(']');
    } else {
        out.push_str("{ ");
        let mut keys: Vec<&str> = Vec::new();
        for _ in 0..g.next() % 5 {
            let k = g.pick(KEYS);
            if keys.contains(&k)
                || (k == "\\u0062" && keys.contains(&"b"))
                || (k == "b" && keys.contains(&"\\u0062"))
            {
                continue; // no duplicate member names
            }
            if !keys.is_empty() {
                out.push_str(", ");
            }
            keys.push(k);
            out.push_str(&format!("\"{k}\" : "));
            gen_value(g, depth + 1, out);
        }
        out.push('}');
    }
}

#[test]
fn lazy_jsonpath_matches_serde_json_path() {
    let mut g = Gen(7);
    let mut docs: Vec<String> = vec![JSON.to_string(), docs::big_json(10_000)];
    for _ in 0..300 {
        let mut s = String::new();
        gen_value(&mut g, 0, &mut s);
        docs.push(s);
    }
    let segs = [
        ".a", ".b", ".c", ".id", ".name", ".items", "['x y']", "[\"é\"]", ".é", "[0]", "[1]",
        "[2]", "[*]", ".*", ".token", ".user", ".roles", ".price", "[3]", "['b']",
    ];
    let mut paths: Vec<String> = vec!["$".into()];
    for _ in 0..400 {
        let mut p = String::from("$");
        for _ in 0..1 + g.next() % 4 {
            p.push_str(segs[g.next() as usize % segs.len()]);
        }
        paths.push(p);
    }
    paths.extend(
        [
            "$.token",
            "$.user.name",
            "$.user.roles[1]",
            "$.items[*].price",
            "$.items[*]",
            "$.*",
            "$.*.*",
        ]
        .map(String::from),
    );
    let mut compared = 0;
    let mut nonempty = 0;
    for p in &paths {
        let e = ex(jp(p));
        assert!(e.is_lazy_json(), "{p} should take the lazy path");
        for d in &docs {
            let lazy = all(&e, d.as_bytes());
            let mut full = Vec::new();
            e.each_via_value(&mut Document::new(d.as_bytes()), &mut |m| {
                full.push(String::from_utf8_lossy(m).into_owned());
                ControlFlow::Continue(())
            });
            assert_eq!(lazy, full, "path {p} on {d}");
            compared += 1;
            nonempty += usize::from(!full.is_empty());
        }
    }
    assert!(
        compared > 100_000 && nonempty > 3_000,
        "{compared} {nonempty}"
    );
}
