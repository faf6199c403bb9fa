//! "Events": what was done to the run while it ran (`events.jsonl`: a pause, a resume, a stop,
//! a load changed through the live page or its API, an agent lost), in a table here and as
//! markers on every chart over time (the page's script draws them from the embedded data).

use std::fmt::Write as _;

use serde::Serialize;

use crate::fmt::{duration, esc};
use crate::input::Run;

/// One marker for the charts.
#[derive(Serialize)]
pub(crate) struct Marker {
    pub t: f64,
    pub kind: String,
    pub label: String,
}

/// The charts' markers.
pub(crate) fn markers(run: &Run) -> Vec<Marker> {
    run.events
        .iter()
        .map(|e| Marker {
            t: e.t,
            kind: e.kind.clone(),
            label: label(e),
        })
        .collect()
}

/// "rate 200/s (browse)", "pause", ...
fn label(e: &onrush_results::Event) -> String {
    let scenario = e.scenario.as_deref().unwrap_or("");
    match (e.rate, e.vus) {
        (Some(r), _) => format!("rate {r}/s ({scenario})"),
        (None, Some(v)) => format!("{v} VUs ({scenario})"),
        _ => e.kind.clone(),
    }
}

pub(crate) fn section(out: &mut String, run: &Run) {
    if run.events.is_empty() {
        return;
    }
    out.push_str(
        r#"<section id="events" class="block"><h2>Events</h2><p class="note">What was done to the run while it ran (from <code>events.jsonl</code>): each is a dashed line on the charts over time.</p><table class="data"><thead><tr><th>at</th><th>event</th><th>change</th><th>asked by</th><th>detail</th></tr></thead><tbody>"#,
    );
    for e in &run.events {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&duration(e.t)),
            esc(&e.kind),
            esc(&if e.kind == "load" {
                label(e)
            } else {
                String::new()
            }),
            esc(&e.by),
            esc(&e.detail),
        );
    }
    out.push_str("</tbody></table></section>\n");
}
