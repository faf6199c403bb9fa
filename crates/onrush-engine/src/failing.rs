//! A failing request as an example for the results (`failing_exchanges` of summary.json):
//! what the request addressed, what came back, and which check failed on what value.
//!
//! Only called for a request that failed while its worker still has room for the kind
//! ([`WorkerMetrics::wants_failing`]): a successful request never gets here, and the checks are
//! evaluated a second time only to say which one failed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use onrush_extract::Document;
use onrush_metrics::results::exchanges::{shorten, BODY_LIMIT, HEAD_LIMIT};
use onrush_metrics::results::FailingExchange;
use onrush_metrics::{FailureClass, RequestRecord, WorkerMetrics};
use onrush_plan::{CheckKind, RenderContext, VarValue, Vars};
use onrush_protocol::{Protocol, ResponseView, StepSpec};

use crate::prepare::ScenarioRun;

/// A failing request of step `metric`, and who ran it.
pub(crate) struct Failed<'a> {
    pub scenario: usize,
    pub metric: usize,
    pub record: &'a RequestRecord,
    pub vu: u64,
    pub iteration: u64,
}

/// Keeps `failed` as an example when its worker still has room for its step and class.
/// `view` is the response, when there was one.
pub(crate) fn note<P: Protocol>(
    m: &mut WorkerMetrics,
    run: &ScenarioRun<P>,
    step: &P::Step,
    failed: Failed<'_>,
    view: Option<&ResponseView<'_>>,
    vars: &Vars,
) {
    let Some(class) = failed.record.failure else {
        return;
    };
    if !m.wants_failing(failed.scenario, failed.metric, class) {
        return;
    }
    let example = example(run, step, &failed, class, view, vars);
    m.keep_failing(failed.scenario, failed.metric, class, example);
}

fn example<P: Protocol>(
    run: &ScenarioRun<P>,
    step: &P::Step,
    failed: &Failed<'_>,
    class: FailureClass,
    view: Option<&ResponseView<'_>>,
    vars: &Vars,
) -> FailingExchange {
    let r = failed.record;
    let started = SystemTime::now() - Duration::from_micros(r.latency_us);
    let mut e = FailingExchange {
        time_unix_ms: started
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        scenario: run.name.clone(),
        step: run.metric_names[failed.metric].clone(),
        class: class.as_str().to_string(),
        status: r.status,
        vu: failed.vu,
        iteration: failed.iteration,
        latency_ms: r.latency_us as f64 / 1000.0,
        ..Default::default()
    };
    let Some(view) = view else {
        e.body_note = Some("no response".into());
        return e;
    };
    if !view.url.is_empty() {
        e.url = Some(String::from_utf8_lossy(view.url).into_owned());
    }
    e.headers = headers(view);
    e.body_size = view.body_size;
    if view.body.is_empty() && view.body_size > 0 {
        e.body_note = Some("body not kept".into());
    } else {
        let cut = view.body.len().min(BODY_LIMIT);
        e.body = Some(String::from_utf8_lossy(&view.body[..cut]).into_owned());
        if (cut as u64) < view.body_size {
            e.body_note = Some("truncated".into());
        }
    }
    if class == FailureClass::CheckFailed {
        e.reason = reason(run, step, view, r, vars, (failed.vu, failed.iteration));
    }
    e
}

/// Response headers as kept, values of the ones that carry credentials masked, up to
/// [`HEAD_LIMIT`] bytes.
fn headers(view: &ResponseView<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for (n, v) in view.headers {
        let name = String::from_utf8_lossy(&view.head[n.clone()]).into_owned();
        let value = if sensitive(&name) {
            "***".to_string()
        } else {
            String::from_utf8_lossy(&view.head[v.clone()]).into_owned()
        };
        bytes += name.len() + value.len();
        if bytes > HEAD_LIMIT {
            break;
        }
        out.push((name, value));
    }
    out
}

/// A header whose value is a credential: the ones that carry them by definition, and any
/// whose name says so as a variable's name makes it secret (docs/plan.md, "Secrets").
pub(crate) fn sensitive(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(n.as_str(), "cookie" | "set-cookie")
        || [
            "auth",
            "token",
            "secret",
            "password",
            "passwd",
            "key",
            "credential",
        ]
        .iter()
        .any(|w| n.contains(w))
}

/// The first extractor that found nothing, or the first check that failed, with the value it
/// saw.
pub(crate) fn reason<P: Protocol>(
    run: &ScenarioRun<P>,
    step: &P::Step,
    view: &ResponseView<'_>,
    record: &RequestRecord,
    vars: &Vars,
    (vu, iteration): (u64, u64),
) -> Option<String> {
    for x in step.extract() {
        if x.default.is_none() && matches!(vars.get(x.var), VarValue::Unset) {
            return Some(format!("extract `{}` found nothing", x.name));
        }
    }
    let ctx = RenderContext::new(vu, iteration, vars);
    let mut doc = Document::new(view.body);
    let mut scratch = Vec::new();
    let name = |id: usize| run.check_names.get(id).map_or("?", |n| n.as_str());
    let mut scripts = Vec::new();
    for c in step.checks() {
        if matches!(c.kind, CheckKind::Script(_)) {
            // Not run again: a script may count, log or call out. Named below when no other
            // check failed.
            scripts.push(format!("`{}`", name(c.id)));
            continue;
        }
        if crate::checks::check(&c.kind, view, record, &ctx, &mut doc, &mut scratch) {
            continue;
        }
        return Some(format!(
            "check `{}` failed: got {}",
            name(c.id),
            seen(&c.kind, view, record, &mut doc)
        ));
    }
    match scripts.len() {
        0 => None,
        1 => Some(format!("check {} (js) failed", scripts[0])),
        _ => Some(format!(
            "one of the js checks {} failed",
            scripts.join(", ")
        )),
    }
}

/// What a check looked at, quoted for a message.
fn seen(
    kind: &CheckKind,
    view: &ResponseView<'_>,
    record: &RequestRecord,
    doc: &mut Document,
) -> String {
    let quote = |bytes: &[u8]| format!("`{}`", shorten(&String::from_utf8_lossy(bytes), 120));
    let body = || {
        if view.body.is_empty() && view.body_size > 0 {
            "a body that was not kept".to_string()
        } else {
            quote(view.body)
        }
    };
    match kind {
        CheckKind::Status(_) => format!("`{}`", view.status),
        CheckKind::BodyContains(_) | CheckKind::BodyMatches(_) => body(),
        CheckKind::JsonPath { path, .. } => {
            let mut first: Option<Vec<u8>> = None;
            path.each(doc, &mut |v| {
                first = Some(v.to_vec());
                std::ops::ControlFlow::Break(())
            });
            match first {
                Some(v) => quote(&v),
                None => format!("nothing (body {})", body()),
            }
        }
        CheckKind::Header { name, .. } => match view.header(name).next() {
            Some(_) if sensitive(name) => "`***`".to_string(),
            Some(v) => quote(v),
            None => format!("no `{name}` header"),
        },
        CheckKind::DurationBelow(_) => format!("`{:.3} ms`", record.latency_us as f64 / 1000.0),
        CheckKind::BodySize { .. } => format!("`{}` bytes", view.body_size),
        CheckKind::Script(_) => "the script's answer".to_string(),
        CheckKind::BodyHash { .. } => match view.body_hash {
            Some(h) => format!("`{h}`"),
            None => "no digest".to_string(),
        },
    }
}

/// Applies `mask` (the plan's secret values as `***`) to every text of `e`.
pub(crate) fn mask(e: &mut FailingExchange, mask: impl Fn(&str) -> String) {
    for text in [&mut e.scenario, &mut e.step]
        .into_iter()
        .chain(e.reason.as_mut())
        .chain(e.url.as_mut())
        .chain(e.body.as_mut())
    {
        *text = mask(text);
    }
    for (_, value) in &mut e.headers {
        *value = mask(value);
    }
}

#[cfg(test)]
mod tests {
    use onrush_plan::ValueExpect;

    use super::*;

    fn view<'a>(
        head: &'a [u8],
        headers: &'a [(std::ops::Range<usize>, std::ops::Range<usize>)],
        body: &'a [u8],
        size: u64,
    ) -> ResponseView<'a> {
        ResponseView {
            status: 503,
            head,
            headers,
            body,
            body_size: size,
            url: b"/x?y=1",
            ..Default::default()
        }
    }

    #[test]
    fn what_each_kind_of_check_saw() {
        let head = b"content-typetext/plainx-api-keyk123";
        let headers = [(0..12, 12..22), (22..31, 31..35)];
        let v = view(head, &headers, b"busy\nnow", 8);
        let r = RequestRecord {
            latency_us: 1_500,
            ..Default::default()
        };
        let mut doc = Document::new(v.body);
        let header = |name: &str| CheckKind::Header {
            name: name.into(),
            expect: ValueExpect::Exists(true),
        };
        let cases = [
            (CheckKind::Status(vec![200]), "`503`"),
            (CheckKind::BodySize { min: 10, max: 20 }, "`8` bytes"),
            (
                CheckKind::DurationBelow(Duration::from_millis(1)),
                "`1.500 ms`",
            ),
            (header("content-type"), "`text/plain`"),
            (header("x-api-key"), "`***`"),
            (header("etag"), "no `etag` header"),
            (
                CheckKind::BodyContains(onrush_plan::Template::constant("ok")),
                "`busy now`",
            ),
        ];
        for (kind, want) in cases {
            assert_eq!(seen(&kind, &v, &r, &mut doc), want, "{kind:?}");
        }
        // A body the session did not keep is not quoted as empty.
        let unkept = view(head, &headers, b"", 8);
        let contains = CheckKind::BodyContains(onrush_plan::Template::constant("ok"));
        assert_eq!(
            seen(&contains, &unkept, &r, &mut Document::new(b"")),
            "a body that was not kept"
        );
    }

    #[test]
    fn credentials_in_headers_are_masked() {
        let head = b"set-cookiesid=abcx-request-id42";
        let headers = [(0..10, 10..17), (17..29, 29..31)];
        let v = view(head, &headers, b"", 0);
        assert_eq!(
            super::headers(&v),
            [
                ("set-cookie".to_string(), "***".to_string()),
                ("x-request-id".to_string(), "42".to_string())
            ]
        );
        for name in [
            "Authorization",
            "proxy-authorization",
            "X-Auth-Token",
            "cookie",
        ] {
            assert!(sensitive(name), "{name}");
        }
        assert!(!sensitive("content-type"));
    }
}
