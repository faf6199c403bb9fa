//! HAR (browser recordings) → an onrush plan: `onrush import har`.
//!
//! One request step per kept entry, grouped by page (`group:` named after the page's title;
//! [`pages`] splits a HAR page holding several navigations),
//! think times from the recorded gaps, static assets and third-party hosts left out by default,
//! request headers cleaned of what the browser or the connection manages, bodies kept, cookies
//! left to the cookie jar. Values the server sent and the browser sent back (CSRF tokens, ids
//! in paths) become extractors and `${var}`s ([`correlate`]). Everything left out or rewritten
//! is in the [`HarReport`].

mod correlate;
mod filter;
mod model;
mod pages;
mod report;

use std::collections::BTreeMap;

pub use correlate::token_like;
pub use model::HarError;
pub use report::{CorrelationNote, HarReport, SkippedEntry};

use crate::yaml::{self, Y};
use correlate::{Extractor, Outgoing};
use filter::{HeaderFate, Url};

/// Options of `onrush import har`.
#[derive(Debug, Clone)]
pub struct HarOptions {
    /// The HAR file's name, for the plan's header comment.
    pub source_name: String,
    /// Recorded gaps are multiplied by this.
    pub think_scale: f64,
    /// A think time is at most this long (milliseconds).
    pub think_max_ms: u64,
    /// No think times at all.
    pub no_think: bool,
    /// Keep scripts, stylesheets, images, fonts, media.
    pub keep_static: bool,
    /// Keep requests to every host.
    pub keep_third_party: bool,
    /// Hosts kept besides the first page's.
    pub hosts: Vec<String>,
}

impl Default for HarOptions {
    fn default() -> Self {
        HarOptions {
            source_name: "recording.har".into(),
            think_scale: 1.0,
            think_max_ms: 10_000,
            no_think: false,
            keep_static: false,
            keep_third_party: false,
            hosts: Vec::new(),
        }
    }
}

/// Gaps shorter than this are the browser's own scheduling, not a user thinking.
const MIN_THINK_MS: f64 = 100.0;

/// What [`import_har`] produces.
#[derive(Debug, Clone)]
pub struct HarImport {
    pub yaml: String,
    pub report: HarReport,
}

/// A kept entry on its way into a step.
struct Kept<'a> {
    entry: &'a model::Entry,
    url: Url,
    think_ms: u64,
}

/// Converts HAR text into an onrush plan and a report.
pub fn import_har(text: &str, options: &HarOptions) -> Result<HarImport, HarError> {
    let mut har = model::parse(text)?;
    har.entries.sort_by_key(|e| e.started_ms);
    let mut report = HarReport::default();
    let first_host = har
        .entries
        .iter()
        .find_map(|e| Url::parse(&e.request.url))
        .map(|u| u.host)
        .ok_or_else(|| HarError {
            at: None,
            field: "log.entries".into(),
            message: "no http(s) request was recorded; nothing to import".into(),
        })?;
    let mut hosts = vec![first_host];
    hosts.extend(options.hosts.iter().map(|h| h.to_ascii_lowercase()));

    // Keep entries; measure think times from the end of everything the browser did before.
    let mut kept: Vec<Kept> = Vec::new();
    let mut last_end: Option<f64> = None;
    for entry in &har.entries {
        let url = Url::parse(&entry.request.url);
        let all_hosts: Vec<String>;
        let hosts_here = if options.keep_third_party {
            all_hosts = url.iter().map(|u| u.host.clone()).collect();
            &all_hosts
        } else {
            &hosts
        };
        let start = entry.started_ms as f64;
        let gap = last_end.map_or(0.0, |end| start - end);
        last_end =
            Some(last_end.map_or(start + entry.time_ms, |e: f64| e.max(start + entry.time_ms)));
        match (
            filter::skip_reason(entry, url.as_ref(), options.keep_static, hosts_here),
            url,
        ) {
            (None, Some(url)) => {
                let think_ms = if options.no_think || gap < MIN_THINK_MS {
                    0
                } else {
                    ((gap * options.think_scale).round().max(0.0) as u64).min(options.think_max_ms)
                };
                kept.push(Kept {
                    entry,
                    url,
                    think_ms,
                });
            }
            (reason, _) => report.skipped.push(SkippedEntry {
                entry: entry.index,
                request: format!("{} {}", entry.request.method, entry.request.url),
                reason: reason.unwrap_or_default(),
            }),
        }
    }
    if kept.is_empty() {
        return Err(HarError {
            at: None,
            field: "log.entries".into(),
            message: format!(
                "every entry was left out ({} of them: static assets, other hosts, ...); try --keep-static, --keep-third-party or --host",
                report.skipped.len()
            ),
        });
    }
    let target = kept[0].url.origin();

    // Requests as the plan will send them, then correlation over them.
    let mut decompress = false;
    let mut outgoing: Vec<Outgoing> = kept
        .iter()
        .map(|k| {
            let mut headers = Vec::new();
            let mut dropped = Vec::new();
            for (name, value) in &k.entry.request.headers {
                match filter::header_fate(name) {
                    HeaderFate::Keep => headers.push((name.clone(), on_site(name, value, &target))),
                    HeaderFate::Drop(why) => {
                        decompress |= name.eq_ignore_ascii_case("accept-encoding");
                        report.drop_header(name, why);
                        dropped.push((name.clone(), value.clone()));
                    }
                }
            }
            Outgoing {
                path_query: escape(&k.url.path_query),
                headers,
                body: k.entry.request.body.as_ref().map(|b| escape(&b.1)),
                dropped,
            }
        })
        .collect();
    let responses: Vec<&model::Response> = kept.iter().map(|k| &k.entry.response).collect();
    let correlations = correlate::correlate(&mut outgoing, &responses);

    let steps = steps(&har.pages, &kept, &outgoing, &correlations, &target);
    for c in &correlations {
        report.correlations.push(CorrelationNote {
            var: c.var.clone(),
            value: c.value.clone(),
            extracted_from: step_label(&kept[c.source]),
            extractor: c.extractor.describe(),
            used_in: c
                .uses
                .iter()
                .map(|(j, w)| format!("{} ({w})", step_label(&kept[*j])))
                .collect(),
        });
    }
    report.kept = kept.len();
    report.think_steps = kept.iter().filter(|k| k.think_ms > 0).count();

    let mut plan = Y::map();
    let mut vars = Y::map();
    vars.set_c(
        "base_url",
        Y::s(escape(&target)),
        vec!["the recorded site: -D base_url=https://staging.example replays it elsewhere".into()],
    );
    vars.set("vus", Y::Raw("1".into()));
    vars.set("iterations", Y::Raw("1".into()));
    plan.set_c(
        "vars",
        vars,
        vec![
            format!(
                "Imported from {} by `onrush import har`:",
                options.source_name
            ),
            format!(
                "{} of {} entries replayed, {} correlated values, {} think times.",
                kept.len(),
                har.entries.len(),
                correlations.len(),
                report.think_steps
            ),
        ],
    );
    plan.set("target", Y::s("${base_url}"));
    if decompress {
        let mut http = Y::map();
        http.set("decompress", Y::Raw("true".into()));
        plan.set_c(
            "http",
            http,
            vec!["the browser accepted compressed responses: onrush decodes them too".into()],
        );
    }
    let mut scenario = Y::map();
    scenario.set("name", Y::s("recording"));
    let mut load = Y::map();
    load.set("vus", Y::s("${vus}"));
    load.set("iterations", Y::s("${iterations}"));
    scenario.set("load", load);
    scenario.set("steps", Y::Seq(steps));
    plan.set("scenarios", Y::Seq(vec![(scenario, Vec::new())]));
    Ok(HarImport {
        yaml: yaml::write(&plan),
        report,
    })
}

/// `Origin` and `Referer` name the recorded site: replayed elsewhere (`-D base_url=…`) they name
/// that site instead, since servers compare them with their own origin (CSRF defences).
fn on_site(name: &str, value: &str, target: &str) -> String {
    let value = escape(value);
    if !(name.eq_ignore_ascii_case("origin") || name.eq_ignore_ascii_case("referer")) {
        return value;
    }
    match value.strip_prefix(target) {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '?', '#']) => {
            format!("${{base_url}}{rest}")
        }
        _ => value,
    }
}

/// `${` in recorded text is literal, not an onrush template.
fn escape(text: &str) -> String {
    text.replace("${", "$${")
}

fn step_label(k: &Kept) -> String {
    format!(
        "entry {} {} {}",
        k.entry.index,
        k.entry.request.method,
        short_path(&k.url.path_query)
    )
}

fn short_path(path_query: &str) -> &str {
    path_query.split('?').next().unwrap_or(path_query)
}

fn think(ms: u64) -> Y {
    let mut t = Y::map();
    t.set("think", Y::s(format!("{ms}ms")));
    t
}

/// The steps, consecutive entries of one page inside a `group:` named after the page.
fn steps(
    pages: &[model::Page],
    kept: &[Kept],
    outgoing: &[Outgoing],
    correlations: &[correlate::Correlation],
    target: &str,
) -> Vec<(Y, Vec<String>)> {
    let titles: BTreeMap<&str, &str> = pages
        .iter()
        .map(|p| {
            (
                p.id.as_str(),
                if p.title.is_empty() {
                    p.id.as_str()
                } else {
                    p.title.as_str()
                },
            )
        })
        .collect();
    let mut top: Vec<(Y, Vec<String>)> = Vec::new();
    let mut i = 0;
    while i < kept.len() {
        let page = kept[i]
            .entry
            .pageref
            .as_deref()
            .filter(|p| titles.contains_key(p));
        // One page of the HAR may hold several pages the browser showed (see [`pages`]).
        let mut shown = pages::shows_a_page(kept[i].entry);
        let mut end = i + 1;
        while page.is_some() && end < kept.len() && kept[end].entry.pageref.as_deref() == page {
            let next_shows = pages::shows_a_page(kept[end].entry);
            if next_shows && shown {
                break;
            }
            shown |= next_shows;
            end += 1;
        }
        if kept[i].think_ms > 0 {
            top.push((think(kept[i].think_ms), Vec::new()));
        }
        let mut inner: Vec<(Y, Vec<String>)> = Vec::new();
        for j in i..end {
            if j > i && kept[j].think_ms > 0 {
                inner.push((think(kept[j].think_ms), Vec::new()));
            }
            let extracts: Vec<&correlate::Correlation> =
                correlations.iter().filter(|c| c.source == j).collect();
            inner.push(step(&kept[j], &outgoing[j], &extracts, target));
        }
        match page {
            Some(p) => {
                let title = kept[i..end].iter().find_map(|k| pages::title(k.entry));
                let mut group = Y::map();
                group.set("name", Y::s(escape(title.as_deref().unwrap_or(titles[p]))));
                group.set("steps", Y::Seq(inner));
                let mut item = Y::map();
                item.set("group", group);
                top.push((item, vec![format!("page {p}")]));
            }
            None => top.extend(inner),
        }
        i = end;
    }
    top
}

fn step(
    k: &Kept,
    out: &Outgoing,
    extracts: &[&correlate::Correlation],
    target: &str,
) -> (Y, Vec<String>) {
    let method = k.entry.request.method.to_ascii_uppercase();
    let origin = k.url.origin();
    let path = if origin == target {
        out.path_query.clone()
    } else {
        format!("{}{}", escape(&origin), out.path_query)
    };
    let mut s = Y::map();
    // The metric name: the path without its query, correlated values shown as {var}.
    let name = short_path(&out.path_query)
        .replace("$${", "${")
        .replace("${", "{")
        .replace('$', "$$");
    s.set("name", Y::s(format!("{method} {name}")));
    let key = method.to_ascii_lowercase();
    if matches!(
        key.as_str(),
        "get" | "post" | "put" | "patch" | "delete" | "head" | "options"
    ) {
        s.set(&key, Y::s(path));
    } else {
        s.set("method", Y::s(k.entry.request.method.clone()));
        s.set("path", Y::s(path));
    }
    if !out.headers.is_empty() {
        let mut h = Y::map();
        for (n, v) in &out.headers {
            h.set(n, Y::s(v.clone()));
        }
        s.set("headers", h);
    }
    if let Some(body) = &out.body {
        if !body.is_empty() {
            s.set("body", Y::s(body.clone()));
        }
    }
    let status = k.entry.response.status;
    if status >= 400 {
        s.set_c(
            "expect_status",
            Y::Raw(status.to_string()),
            vec![format!(
                "the recording got {status}; without this the replay would count it as failed"
            )],
        );
    }
    if !extracts.is_empty() {
        let mut ex = Y::map();
        for c in extracts {
            let mut e = Y::map();
            match &c.extractor {
                Extractor::JsonPath(p) => e.set("jsonpath", Y::s(p.clone())),
                Extractor::Css(sel, attr, n) => {
                    e.set("css", Y::s(sel.clone()));
                    e.set("attribute", Y::s(*attr));
                    if *n > 1 {
                        e.set("occurrence", Y::Raw(n.to_string()));
                    }
                }
                Extractor::Header(h) => e.set("header", Y::s(h.clone())),
            }
            ex.set_c(&c.var, e, vec![format!("recorded: {}", c.value)]);
        }
        s.set("extract", ex);
    }
    let comment = format!(
        "HAR entry {}: {} {} -> {}",
        k.entry.index, method, k.entry.request.url, status
    );
    (s, vec![comment])
}

#[cfg(test)]
mod tests;
