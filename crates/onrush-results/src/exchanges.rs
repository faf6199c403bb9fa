//! `failing_exchanges` of `summary.json`: the first few failing requests of each step and
//! failure class, with what the response said, so that "check failed on 1,991 of 1,991
//! requests" comes with the response that failed it.
//!
//! Bounded: [`EXAMPLES_PER_KIND`] per (scenario, step, class) for a run (also a merged or
//! distributed one), each holding at most [`HEAD_LIMIT`] bytes of response headers and
//! [`BODY_LIMIT`] of body.

use serde::{Deserialize, Serialize};

/// Failing exchanges kept per (scenario, step, failure class) for a run.
pub const EXAMPLES_PER_KIND: usize = 3;
/// Bytes of the response body kept in an example (the start of it).
pub const BODY_LIMIT: usize = 2048;
/// Bytes of response headers kept in an example (names and values; the later ones dropped).
pub const HEAD_LIMIT: usize = 2048;

/// One failing request, as the worker that ran it saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailingExchange {
    /// When the request started, unix milliseconds.
    pub time_unix_ms: u64,
    pub scenario: String,
    pub step: String,
    /// The failure class (`check_failed`, `unexpected_status`, `refused`, ...).
    pub class: String,
    /// The response's status; 0 without a response.
    pub status: u16,
    pub vu: u64,
    pub iteration: u64,
    pub latency_ms: f64,
    /// What failed, in words: the first failing check with its expression and the value it
    /// saw (``check `jsonpath $.ok equals true` failed: got `false` ``), or an extractor that
    /// found nothing; absent when the class alone says it (a refused connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What was addressed (an HTTP request's path and query, a TCP target), when the
    /// protocol kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Response headers as `[name, value]`, secrets masked; up to [`HEAD_LIMIT`] bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The start of the (decoded) response body, up to [`BODY_LIMIT`] bytes, as UTF-8 (other
    /// bytes as U+FFFD); absent when there was no response or the session did not keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The response body's size in all.
    #[serde(default)]
    pub body_size: u64,
    /// Why `body` is absent or short: `"body not kept"` (no check or extractor of the step
    /// reads it, so the protocol did not keep it), `"truncated"`, `"no response"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_note: Option<String>,
}

impl FailingExchange {
    /// The one-line form the printed summary shows: the reason, else the status and body start.
    pub fn short(&self) -> String {
        let mut text = match (&self.reason, self.status) {
            (Some(r), _) => r.clone(),
            (None, 0) => "no response".to_string(),
            (None, s) => format!("status {s}"),
        };
        if let Some(url) = &self.url {
            text = format!("{url}: {text}");
        }
        if self.reason.is_none() {
            match (&self.body, &self.body_note) {
                (Some(body), _) => text.push_str(&format!("; body `{}`", shorten(body, 80))),
                // Says why no body shows (a step no check reads the body of), with its size.
                (None, Some(note)) if self.status != 0 => {
                    text.push_str(&format!("; {note} ({} bytes)", self.body_size))
                }
                _ => {}
            }
        }
        text
    }

    fn kind(&self) -> (&str, &str, &str) {
        (&self.scenario, &self.step, &self.class)
    }
}

/// `text` cut to `max` characters, with `…` when it was longer; line breaks as spaces.
pub fn shorten(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// Keeps the earliest [`EXAMPLES_PER_KIND`] of each (scenario, step, class) of `examples`,
/// ordered by kind then time: what a run keeps of every worker's, and a merge of every
/// input's (a distributed run's agents).
pub fn keep_first(mut examples: Vec<FailingExchange>) -> Vec<FailingExchange> {
    examples.sort_by(|a, b| {
        a.kind()
            .cmp(&b.kind())
            .then(a.time_unix_ms.cmp(&b.time_unix_ms))
    });
    let mut out: Vec<FailingExchange> = Vec::with_capacity(examples.len());
    let mut run = 0;
    for e in examples {
        match out.last() {
            Some(last) if last.kind() == e.kind() => run += 1,
            _ => run = 1,
        }
        if run <= EXAMPLES_PER_KIND {
            out.push(e);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(step: &str, class: &str, t: u64) -> FailingExchange {
        FailingExchange {
            time_unix_ms: t,
            scenario: "s".into(),
            step: step.into(),
            class: class.into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_earliest_three_of_each_kind_are_kept() {
        let mut all = Vec::new();
        for t in [50, 10, 40, 20, 30] {
            all.push(ex("a", "check_failed", t));
        }
        all.push(ex("a", "timeout", 99));
        all.push(ex("b", "check_failed", 1));
        let kept = keep_first(all);
        let got: Vec<(&str, &str, u64)> = kept
            .iter()
            .map(|e| (e.step.as_str(), e.class.as_str(), e.time_unix_ms))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "check_failed", 10),
                ("a", "check_failed", 20),
                ("a", "check_failed", 30),
                ("a", "timeout", 99),
                ("b", "check_failed", 1),
            ]
        );
    }

    #[test]
    fn the_short_form_leads_with_the_reason() {
        let mut e = ex("a", "check_failed", 1);
        e.reason = Some("check `status 200` failed: got `404`".into());
        e.url = Some("/x".into());
        assert_eq!(e.short(), "/x: check `status 200` failed: got `404`");
        e.reason = None;
        e.status = 503;
        e.body = Some("busy\nnow".into());
        assert_eq!(e.short(), "/x: status 503; body `busy now`");
        e.body = None;
        e.body_note = Some("body not kept".into());
        e.body_size = 24;
        assert_eq!(e.short(), "/x: status 503; body not kept (24 bytes)");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }
}
