//! The extractors over hostile bodies: `extract_body` runs a fixed set of expressions of
//! every kind over the input as a response body; `extract_expr` compiles the input's first
//! line as an expression (of the kind the first byte picks) and runs it over the rest.

use onrush_extract::{select, Document, Extractor, Kind, Occurrence};

/// Expressions as plans write them; compiled once per process.
fn fixed() -> &'static [Extractor] {
    static FIXED: std::sync::OnceLock<Vec<Extractor>> = std::sync::OnceLock::new();
    FIXED.get_or_init(|| {
        let s = String::from;
        [
            Kind::JsonPath(s("$.a")),
            Kind::JsonPath(s("$..id")),
            Kind::JsonPath(s("$.items[*].name")),
            Kind::JsonPath(s("$[?@.n > 1].n")),
            Kind::JsonPath(s("$.*[-1:]")),
            Kind::Css {
                selector: s("a"),
                attribute: Some(s("href")),
            },
            Kind::Css {
                selector: s("div.c > p:first-child, #id"),
                attribute: None,
            },
            Kind::Css {
                selector: s("input[name=csrf]"),
                attribute: Some(s("value")),
            },
            Kind::XPath(s("//a/@href")),
            Kind::XPath(s("//item[2]/text()")),
            Kind::XPath(s("count(//*)")),
            Kind::XPath(s("string(/*)")),
            Kind::Regex {
                pattern: s(r#"id="([^"]+)""#),
                group: 1,
            },
            Kind::Regex {
                pattern: s(r"(?i)token[=:]\s*(\w+)"),
                group: 1,
            },
            Kind::Boundary {
                left: s("<b>"),
                right: s("</b>"),
            },
            Kind::Boundary {
                left: s(""),
                right: s(","),
            },
            Kind::Boundary {
                left: s("x"),
                right: s(""),
            },
        ]
        .into_iter()
        .map(|k| Extractor::new(k).expect("the fixed expressions compile"))
        .collect()
    })
}

pub fn run_body(body: &[u8]) {
    let mut doc = Document::new(body);
    for extractor in fixed() {
        extract_all(extractor, &mut doc);
    }
}

pub fn run_expr(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let (expr, body) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let expr = String::from_utf8_lossy(expr).into_owned();
    let kind = match which % 6 {
        0 => Kind::JsonPath(expr),
        1 => Kind::Css {
            selector: expr,
            attribute: None,
        },
        2 => Kind::Css {
            selector: expr,
            attribute: Some("href".into()),
        },
        3 => Kind::XPath(expr),
        4 => Kind::Regex {
            pattern: expr,
            group: usize::from(which >> 4),
        },
        _ => {
            let (left, right) = expr.split_once('|').unwrap_or((&expr, ""));
            Kind::Boundary {
                left: left.into(),
                right: right.into(),
            }
        }
    };
    let Ok(extractor) = Extractor::new(kind) else {
        return;
    };
    extract_all(&extractor, &mut Document::new(body));
}

/// Every occurrence mode; values found are checked against what the body could give.
fn extract_all(extractor: &Extractor, doc: &mut Document<'_>) {
    let body_len = doc.body().len();
    let mut n = 0u64;
    let mut rng = move || {
        n += 1;
        n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    };
    let mut all = Vec::new();
    let count = select(extractor, doc, Occurrence::All, &mut rng, &mut all);
    assert_eq!(count, all.len());
    for occurrence in [
        Occurrence::Nth(1),
        Occurrence::Nth(2),
        Occurrence::Last,
        Occurrence::Random,
    ] {
        let mut one = Vec::new();
        let got = select(extractor, doc, occurrence, &mut rng, &mut one);
        assert!(got <= 1 && got == one.len());
        // Nth(1) and Last are the first and last of All.
        match occurrence {
            Occurrence::Nth(1) => assert_eq!(one.first(), all.first()),
            Occurrence::Last => assert_eq!(one.first(), all.last()),
            _ => assert_eq!(
                got,
                usize::from(
                    !all.is_empty() && (occurrence != Occurrence::Nth(2) || all.len() >= 2)
                )
            ),
        }
    }
    if let Kind::Boundary { .. } | Kind::Regex { .. } = extractor.kind() {
        // Text extractors return parts of the body.
        for v in &all {
            assert!(v.len() <= body_len);
        }
    }
}

pub const BODY_DICT: &[&[u8]] = &[
    b"{\"a\":",
    b"\"id\":",
    b"\"items\":[",
    b"{\"name\":\"x\"}",
    b"\"n\":2",
    b"[",
    b"]",
    b"{",
    b"}",
    b"\\u0000",
    b"\\ud800",
    b"1e999",
    b"-0",
    b"<a href=\"/x\">",
    b"</a>",
    b"<div class=\"c\">",
    b"<p>",
    b"</p>",
    b"<input name=csrf value=\"t\">",
    b"<item>",
    b"</item>",
    b"<?xml version=\"1.0\"?>",
    b"<!DOCTYPE x [<!ENTITY e \"&e;&e;\">]>",
    b"&amp;",
    b"&#x10FFFF;",
    b"&#0;",
    b"<![CDATA[",
    b"]]>",
    b"<!--",
    b"-->",
    b"id=\"",
    b"token: ",
    b"<b>",
    b"</b>",
    b",",
    b"x",
];

pub const EXPR_DICT: &[&[u8]] = &[
    b"$",
    b".",
    b"..",
    b"[*]",
    b"[?@.a]",
    b"[-1:]",
    b"['a']",
    b"length(@)",
    b"match(@, 'a.*')",
    b"search(",
    b"count(",
    b"value(",
    b"//",
    b"@",
    b"text()",
    b"node()",
    b"::",
    b"[1]",
    b"ancestor::",
    b"*",
    b"#id",
    b".c",
    b" > ",
    b" + ",
    b" ~ ",
    b":nth-child(2n+1)",
    b":not(",
    b"[href^=x]",
    b"(?i)",
    b"(?P<n>",
    b"\\p{L}",
    b"{99999}",
    b"+",
    b"?",
    b"|",
    b"\n",
];
