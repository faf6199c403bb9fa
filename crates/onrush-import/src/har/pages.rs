//! Which steps go into which `group:`, and the group's name.
//!
//! DevTools' "Save all as HAR" makes one HAR page per navigation, titled with its URL. Other
//! recorders built on Chromium's network events (Playwright's `recordHar`, most proxies' browser
//! modes) make one page per tab, titled with the tab's last title: a whole flow in one page. So
//! inside a page a new group starts at each page the browser showed (a navigation answered with
//! a 2xx HTML document), and a group is named after that document's `<title>`. A navigation
//! answered with a redirect (a form's POST → 303) stays with the page it was submitted from.

use regex::Regex;

use super::model::Entry;

/// A navigation of the tab (not a subresource, not a fetch()).
fn is_navigation(entry: &Entry) -> bool {
    match entry.resource_type.as_deref() {
        Some(kind) => kind == "document",
        // Firefox and older recorders: the Fetch Metadata the browser sent says it.
        None => entry.request.headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("sec-fetch-dest") && v.eq_ignore_ascii_case("document")
        }),
    }
}

/// A navigation answered with a page the browser showed.
pub fn shows_a_page(entry: &Entry) -> bool {
    let r = &entry.response;
    is_navigation(entry)
        && (200..300).contains(&r.status)
        && r.mime.to_ascii_lowercase().contains("html")
}

/// The `<title>` of a shown page, its white space collapsed; None when it has none.
pub fn title(entry: &Entry) -> Option<String> {
    static TITLE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = TITLE.get_or_init(|| {
        Regex::new(r"(?is)<title(?:\s[^>]*)?>(.*?)</title>").expect("a valid regex")
    });
    if !shows_a_page(entry) {
        return None;
    }
    let text = entry.response.text.as_deref()?;
    let raw = re.captures(text)?.get(1)?.as_str();
    let title = raw
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::super::model::{Request, Response};
    use super::*;

    fn entry(kind: Option<&str>, status: u16, mime: &str, text: &str) -> Entry {
        Entry {
            index: 0,
            pageref: Some("page@1".into()),
            started_ms: 0,
            time_ms: 0.0,
            resource_type: kind.map(str::to_string),
            from_cache: None,
            request: Request {
                method: "GET".into(),
                url: "http://h/".into(),
                headers: vec![("Sec-Fetch-Dest".into(), "document".into())],
                body: None,
            },
            response: Response {
                status,
                headers: Vec::new(),
                mime: mime.into(),
                text: Some(text.into()),
            },
        }
    }

    #[test]
    fn a_shown_page_is_named_after_its_title() {
        let html = "<html><head><TITLE lang=en>\n  Orders &amp; payments\n</TITLE></head></html>";
        let page = entry(Some("document"), 200, "text/html; charset=utf-8", html);
        assert_eq!(title(&page).as_deref(), Some("Orders & payments"));
        // Without a resource type, the request's Sec-Fetch-Dest tells a navigation.
        assert!(shows_a_page(&entry(None, 200, "text/html", html)));
        // A redirect, a fetch() of HTML, a page without a title: no name of their own.
        assert!(!shows_a_page(&entry(
            Some("document"),
            303,
            "text/html",
            ""
        )));
        assert_eq!(title(&entry(Some("fetch"), 200, "text/html", html)), None);
        let untitled = entry(Some("document"), 200, "text/html", "<title> </title>");
        assert_eq!(title(&untitled), None);
    }
}
