//! Larger test/bench documents built around the onrush-server samples (shared by the tests
//! and the benchmark through `#[path]`).
#![allow(dead_code)]

/// Value of the hidden input added near the end of [`big_html`].
pub const END_TOKEN: &str = "end-9f2c4e6a8b10";

/// ~50 KB HTML: the sample page with product table rows and product links repeated, and a
/// second hidden input (`footer_token` = [`END_TOKEN`]) just before `</body>`.
pub fn big_html(target: usize) -> String {
    let html = onrush_server::samples::HTML;
    let (head, tail) = html.split_at(html.find("    </tbody>").unwrap());
    let mut s = String::with_capacity(target + 1024);
    s.push_str(head);
    let mut i = 4;
    while s.len() + tail.len() + 200 < target {
        s.push_str(&format!(
            "      <tr class=\"row\"><td>{i}</td><td><a class=\"product\" href=\"/html?product={i}\">Product {i} &amp; co</a></td><td>{}.{:02}</td></tr>\n",
            i % 17 + 1,
            (i * 37) % 100
        ));
        i += 1;
    }
    let tail = tail.replace(
        "</body>",
        &format!("  <input type=\"hidden\" name=\"footer_token\" value=\"{END_TOKEN}\">\n</body>"),
    );
    s.push_str(&tail);
    s
}

/// ~10 KB JSON: the sample login response with many more items; `$.next_page` (last member)
/// comes after all of them.
pub fn big_json(target: usize) -> String {
    let json = onrush_server::samples::JSON;
    let at = json.find("\n  ],").unwrap();
    let (head, tail) = json.split_at(at);
    let mut s = String::with_capacity(target + 512);
    s.push_str(head);
    let mut i = 5;
    while s.len() + tail.len() + 120 < target {
        s.push_str(&format!(
            ",\n    {{\"id\": {i}, \"name\": \"Product {i} \\\"special\\\"\", \"price\": {}.{}, \"in_stock\": {}, \"tags\": [\"t{}\", \"x\"]}}",
            i % 9 + 1,
            i % 10,
            i % 3 != 0,
            i % 5
        ));
        i += 1;
    }
    s.push_str(tail);
    s
}
