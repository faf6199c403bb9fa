//! Extractors and checks applied to one response: variables set, checks counted.

use std::ops::ControlFlow;

use memchr::memmem;
use onrush_extract::{select, Document};
use onrush_metrics::RequestRecord;
use onrush_plan::{
    Check, CheckKind, Extract, ExtractSource, Occurrence, RenderContext, Template, ValueExpect,
    VarValue, Vars,
};
use onrush_protocol::ResponseView;

/// Applies a step's extractors (setting variables) then its checks; `count(check, passed)` is
/// called for every check and every extractor without a default. False when any failed.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    extract: &[Extract],
    checks: &[Check],
    view: &ResponseView,
    record: &RequestRecord,
    vars: &mut Vars,
    (vu, iteration, scenario): (u64, u64, u32),
    scratch: &mut Vec<u8>,
    values: &mut Vec<Vec<u8>>,
    count: &mut dyn FnMut(usize, bool),
) -> bool {
    let mut ok = true;
    let mut doc = Document::new(view.body);
    for e in extract {
        values.clear();
        let found = match &e.source {
            ExtractSource::Body(x) => {
                let rng = &*vars;
                select(
                    x,
                    &mut doc,
                    to_occurrence(e.occurrence),
                    &mut || rng.random(),
                    values,
                )
            }
            ExtractSource::Header(name) => pick(view.header(name), e.occurrence, vars, values),
            ExtractSource::Cookie(name) => {
                let cookies = view
                    .header("set-cookie")
                    .filter_map(|c| cookie_value(c, name));
                pick(cookies, e.occurrence, vars, values)
            }
            ExtractSource::Status => {
                values.push(itoa::Buffer::new().format(view.status).as_bytes().to_vec());
                1
            }
            ExtractSource::Url => {
                values.push(view.url.to_vec());
                1
            }
        };
        if found == 0 {
            match &e.default {
                Some(d) => vars.set(e.var, d.as_bytes()),
                None => {
                    vars.unset(e.var);
                    ok = false;
                }
            }
        } else if e.occurrence == onrush_plan::Occurrence::All {
            vars.set_value(e.var, VarValue::Many(std::mem::take(values)));
        } else {
            vars.set(e.var, &values[0]);
        }
        if let Some(check) = e.check {
            count(check, found > 0);
        }
    }
    let ctx = RenderContext::new(vu, iteration, vars);
    let who = onrush_script::Caller {
        scenario,
        vu,
        iteration,
    };
    for c in checks {
        let passed = match &c.kind {
            CheckKind::Script(func) => script_check(*func, who, vars, view),
            kind => check(kind, view, record, &ctx, &mut doc, scratch),
        };
        ok &= passed;
        count(c.id, passed);
    }
    ok
}

/// A `js:` check; one that throws fails (its failure noted for the request's class).
fn script_check(func: u32, who: onrush_script::Caller, vars: &Vars, view: &ResponseView) -> bool {
    let reply = reply_of(view);
    match onrush_script::worker::with(|e| e.check(func, who, vars, &reply)) {
        Some(Ok(passed)) => passed,
        Some(Err(f)) => {
            onrush_script::worker::note(f);
            false
        }
        None => false,
    }
}

/// A response as the plan's scripts see it.
pub(crate) fn reply_of<'a>(view: &'a ResponseView<'a>) -> onrush_script::Reply<'a> {
    onrush_script::Reply {
        status: view.status,
        headers: view
            .headers
            .iter()
            .map(|(n, v)| (&view.head[n.clone()], &view.head[v.clone()]))
            .collect(),
        body: view.body,
        url: view.url,
    }
}

pub(crate) fn check(
    kind: &CheckKind,
    view: &ResponseView,
    record: &RequestRecord,
    ctx: &RenderContext,
    doc: &mut Document,
    scratch: &mut Vec<u8>,
) -> bool {
    match kind {
        CheckKind::Status(list) => list.contains(&view.status),
        CheckKind::BodyContains(t) => {
            render(t, ctx, scratch) && memmem::find(view.body, scratch).is_some()
        }
        CheckKind::BodyMatches(re) => re.is_match(view.body),
        CheckKind::JsonPath { path, expect } => {
            let mut first: Option<Vec<u8>> = None;
            path.each(doc, &mut |v| {
                first = Some(v.to_vec());
                ControlFlow::Break(())
            });
            expect_value(expect, first.as_deref(), ctx, scratch)
        }
        CheckKind::Header { name, expect } => {
            let value = view.header(name).next();
            expect_value(expect, value, ctx, scratch)
        }
        CheckKind::DurationBelow(d) => (record.latency_us as u128) < d.as_micros(),
        CheckKind::BodySize { min, max } => (*min..=*max).contains(&view.body_size),
        CheckKind::BodyHash { hex, .. } => view.body_hash == Some(hex.as_str()),
        CheckKind::Script(_) => unreachable!("answered by script_check"),
    }
}

fn expect_value(
    expect: &ValueExpect,
    value: Option<&[u8]>,
    ctx: &RenderContext,
    scratch: &mut Vec<u8>,
) -> bool {
    match expect {
        ValueExpect::Exists(want) => value.is_some() == *want,
        ValueExpect::Equals(t) => {
            value.is_some_and(|v| render(t, ctx, scratch) && v == &scratch[..])
        }
        ValueExpect::Contains(t) => {
            value.is_some_and(|v| render(t, ctx, scratch) && memmem::find(v, scratch).is_some())
        }
        ValueExpect::Matches(re) => value.is_some_and(|v| re.is_match(v)),
    }
}

fn render(t: &Template, ctx: &RenderContext, out: &mut Vec<u8>) -> bool {
    out.clear();
    t.render(ctx, out).is_ok()
}

fn to_occurrence(o: Occurrence) -> onrush_extract::Occurrence {
    match o {
        Occurrence::Nth(n) => onrush_extract::Occurrence::Nth(n),
        Occurrence::Last => onrush_extract::Occurrence::Last,
        Occurrence::Random => onrush_extract::Occurrence::Random,
        Occurrence::All => onrush_extract::Occurrence::All,
    }
}

/// Selects from a list of candidate values as `occurrence` says.
fn pick<'v>(
    candidates: impl Iterator<Item = &'v [u8]>,
    occurrence: Occurrence,
    vars: &Vars,
    out: &mut Vec<Vec<u8>>,
) -> usize {
    let all: Vec<&[u8]> = candidates.collect();
    let chosen: Vec<&[u8]> = match occurrence {
        Occurrence::Nth(n) => all.get(n.wrapping_sub(1)).copied().into_iter().collect(),
        Occurrence::Last => all.last().copied().into_iter().collect(),
        Occurrence::Random if !all.is_empty() => {
            vec![all[vars.random_below(all.len() as u64) as usize]]
        }
        Occurrence::Random => Vec::new(),
        Occurrence::All => all,
    };
    out.extend(chosen.iter().map(|v| v.to_vec()));
    chosen.len()
}

/// The value of cookie `name` in one `Set-Cookie` header value.
pub fn cookie_value<'c>(set_cookie: &'c [u8], name: &str) -> Option<&'c [u8]> {
    let pair = set_cookie.split(|b| *b == b';').next()?;
    let eq = memchr::memchr(b'=', pair)?;
    (pair[..eq].trim_ascii() == name.as_bytes()).then(|| pair[eq + 1..].trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::cookie_value;

    #[test]
    fn cookie_values() {
        assert_eq!(
            cookie_value(b"session=abc; Path=/; HttpOnly", "session"),
            Some(&b"abc"[..])
        );
        assert_eq!(cookie_value(b"other=1", "session"), None);
        assert_eq!(cookie_value(b" a = b ", "a"), Some(&b"b"[..]));
    }
}
