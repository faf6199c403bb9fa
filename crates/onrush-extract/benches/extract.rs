//! Extractions per second for each extractor kind on the sample documents and on larger
//! generated ones (50 KB HTML, 10 KB JSON). One iteration = what a worker does per response
//! for one extraction: wrap the body in a new `Document` (so any parse is included) and take
//! the first (or, where named, every) match.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use onrush_extract::{select, Document, Extractor, Kind, Occurrence};
use onrush_server::samples::{HTML, JSON, XML};

#[path = "../tests/docs.rs"]
mod docs;

fn kinds_html(token: &str) -> Vec<(String, Kind)> {
    vec![
        (
            format!("boundary/{token}"),
            Kind::Boundary {
                left: format!("name=\"{token}\" value=\""),
                right: "\"".into(),
            },
        ),
        (
            format!("regex/{token}"),
            Kind::Regex {
                pattern: format!("name=\"{token}\" value=\"([^\"]+)\""),
                group: 1,
            },
        ),
        (
            format!("css/{token}"),
            Kind::Css {
                selector: format!("input[name={token}]"),
                attribute: Some("value".into()),
            },
        ),
        (
            format!("xpath/{token}"),
            Kind::XPath(format!("//input[@name='{token}']/@value")),
        ),
    ]
}

fn run(c: &mut Criterion, group: &str, body: &[u8], kinds: Vec<(String, Kind, Occurrence)>) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    for (name, kind, occ) in kinds {
        let ex = Extractor::new(kind).unwrap();
        let mut out = Vec::with_capacity(512);
        // sanity: every benchmarked extraction finds something
        assert!(
            select(&ex, &mut Document::new(body), occ, &mut || 0, &mut out) > 0,
            "{group}/{name}"
        );
        g.bench_function(BenchmarkId::from_parameter(&name), |b| {
            b.iter(|| {
                out.clear();
                let mut doc = Document::new(std::hint::black_box(body));
                select(&ex, &mut doc, occ, &mut || 0, &mut out)
            })
        });
    }
    g.finish();
}

fn first(v: Vec<(String, Kind)>) -> Vec<(String, Kind, Occurrence)> {
    v.into_iter()
        .map(|(n, k)| (n, k, Occurrence::Nth(1)))
        .collect()
}

fn bench(c: &mut Criterion) {
    let big_html = docs::big_html(50_000);
    let big_json = docs::big_json(10_000);

    let mut k = first(kinds_html("csrf_token"));
    k.push((
        "css/h1-text".into(),
        Kind::Css {
            selector: "h1".into(),
            attribute: None,
        },
        Occurrence::Nth(1),
    ));
    run(c, "html-983B", HTML.as_bytes(), k);

    let mut k = first(kinds_html("csrf_token"));
    k.extend(first(kinds_html("footer_token")));
    k.push((
        "css/all-rows".into(),
        Kind::Css {
            selector: "tr.row td:first-child".into(),
            attribute: None,
        },
        Occurrence::All,
    ));
    run(c, "html-50KB", big_html.as_bytes(), k);

    let jp = |n: &str, p: &str, o| (n.to_string(), Kind::JsonPath(p.into()), o);
    let json_kinds = || {
        vec![
            jp("lazy/$.token", "$.token", Occurrence::Nth(1)),
            jp("lazy/$.user.name", "$.user.name", Occurrence::Nth(1)),
            jp("lazy/$.next_page", "$.next_page", Occurrence::Nth(1)),
            jp(
                "lazy/$.items[3].name",
                "$.items[3].name",
                Occurrence::Nth(1),
            ),
            jp("lazy/$.items[*].id-all", "$.items[*].id", Occurrence::All),
            jp("full/$..id-first", "$..id", Occurrence::Nth(1)),
            jp(
                "full/filter",
                "$.items[?@.id == 3].name",
                Occurrence::Nth(1),
            ),
        ]
    };
    run(c, "json-sample", JSON.as_bytes(), json_kinds());
    run(c, "json-10KB", big_json.as_bytes(), json_kinds());

    run(
        c,
        "xml-sample",
        XML.as_bytes(),
        vec![
            (
                "xpath/order-id".into(),
                Kind::XPath("/order/@id".into()),
                Occurrence::Nth(1),
            ),
            (
                "regex/order-id".into(),
                Kind::Regex {
                    pattern: "<order id=\"([^\"]+)\"".into(),
                    group: 1,
                },
                Occurrence::Nth(1),
            ),
        ],
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
