//! `--debug[=N]`: the first N exchanges of each step printed on stderr in full as they happen
//! (what was sent, the status, every header, the body up to [`DEBUG_BODY_LIMIT`]), whatever
//! their outcome; what k6's `--http-debug=full` and JMeter's View Results Tree show.
//!
//! Off, a request pays one relaxed atomic load ([`wanted`]). On, sessions keep whole responses
//! ([`onrush_protocol::debug`]) and a request takes a lock to count its step's printed
//! exchanges: a debugging run, not one to measure.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use onrush_metrics::RequestRecord;
use onrush_plan::Vars;
use onrush_protocol::{Protocol, ResponseView, Session};

use crate::failing::sensitive;
use crate::prepare::ScenarioRun;

/// Bytes of a request's or a response's body printed; the rest is counted.
pub const DEBUG_BODY_LIMIT: usize = 4096;

static ON: AtomicBool = AtomicBool::new(false);

type Mask = Box<dyn Fn(&str) -> String + Send + Sync>;

struct Debug {
    per_step: u32,
    mask: Mask,
    /// Exchanges printed per (scenario index, metric index).
    printed: HashMap<(usize, usize), u32>,
}

static STATE: Mutex<Option<Debug>> = Mutex::new(None);

/// Prints the first `per_step` exchanges of each step of the runs that follow (`--debug`),
/// each text passed through `mask` (the plan's secret values as `***`); credentials in
/// headers (`Authorization`, `Cookie`, any name with `token`, `key`...) are masked too.
/// Sessions made from now on keep whole exchanges. `per_step` 0 turns it off.
pub fn debug_exchanges(per_step: u32, mask: impl Fn(&str) -> String + Send + Sync + 'static) {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    *state = (per_step > 0).then(|| Debug {
        per_step,
        mask: Box::new(mask),
        printed: HashMap::new(),
    });
    ON.store(per_step > 0, Ordering::Relaxed);
    onrush_protocol::debug::set(per_step > 0);
}

/// Whether `--debug` is on (the only cost per request when it is off).
#[inline]
pub(crate) fn wanted() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Who made a request, and what became of it.
pub(crate) struct Shown<'a> {
    pub scenario: usize,
    pub metric: usize,
    pub record: &'a RequestRecord,
    pub responded: bool,
    pub vu: u64,
    pub iteration: u64,
}

/// Prints the exchange `shown` of `session` when its step has not had its share yet.
pub(crate) fn show<P: Protocol>(
    run: &ScenarioRun<P>,
    step: &P::Step,
    session: &P::Session,
    shown: Shown<'_>,
    vars: &Vars,
) {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(debug) = state.as_mut() else {
        return;
    };
    let count = debug
        .printed
        .entry((shown.scenario, shown.metric))
        .or_insert(0);
    if *count >= debug.per_step {
        return;
    }
    *count += 1;
    let nth = *count;
    let view = shown.responded.then(|| session.response());
    let text = format(
        run,
        step,
        session.request(),
        view.as_ref(),
        &shown,
        vars,
        nth,
    );
    let text = (debug.mask)(&text);
    drop(state);
    // One write, so that exchanges of several workers do not interleave.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

fn format<P: Protocol>(
    run: &ScenarioRun<P>,
    step: &P::Step,
    request: Option<onrush_protocol::RequestView<'_>>,
    view: Option<&ResponseView<'_>>,
    shown: &Shown<'_>,
    vars: &Vars,
    nth: u32,
) -> String {
    let r = shown.record;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "── debug: scenario `{}`, step `{}`, exchange {nth} (VU {}, iteration {}) ──",
        run.name, run.metric_names[shown.metric], shown.vu, shown.iteration
    );
    match &request {
        Some(req) => {
            let _ = writeln!(
                out,
                "> {} {}",
                req.method,
                String::from_utf8_lossy(req.target)
            );
            for line in String::from_utf8_lossy(req.headers).lines() {
                let (name, value) = line.split_once(':').unwrap_or((line, ""));
                let value = if sensitive(name) { " ***" } else { value };
                let _ = writeln!(out, "> {name}:{value}");
            }
            match req.body_note {
                Some(note) => {
                    let _ = writeln!(out, ">\n> ({note})");
                }
                None if !req.body.is_empty() => {
                    out.push_str(">\n");
                    body(&mut out, "> ", req.body, req.body.len() as u64);
                }
                None => {}
            }
        }
        None => {
            if let Some(url) = view.map(|v| v.url).filter(|u| !u.is_empty()) {
                let _ = writeln!(out, "> {}", String::from_utf8_lossy(url));
            }
        }
    }
    let latency = r.latency_us as f64 / 1000.0;
    match view {
        Some(v) => {
            // Protocols without a status (TCP, UDP, Thrift) leave it 0.
            let _ = match v.status {
                0 => writeln!(out, "< reply ({latency:.3} ms)"),
                status => writeln!(out, "< {status} ({latency:.3} ms)"),
            };
            for (n, val) in v.headers {
                let name = String::from_utf8_lossy(&v.head[n.clone()]);
                let value = if sensitive(&name) {
                    "***".into()
                } else {
                    String::from_utf8_lossy(&v.head[val.clone()])
                };
                let _ = writeln!(out, "< {name}: {value}");
            }
            if v.body.is_empty() && v.body_size > 0 {
                let _ = writeln!(out, "<\n< ({} bytes, not kept)", v.body_size);
            } else if v.body_size > 0 {
                out.push_str("<\n");
                body(&mut out, "< ", v.body, v.body_size);
            }
        }
        None => {
            let _ = writeln!(out, "< no response ({latency:.3} ms)");
        }
    }
    match r.failure {
        None => out.push_str("= ok\n"),
        Some(class) => {
            let reason = view.and_then(|v| {
                crate::failing::reason(run, step, v, r, vars, (shown.vu, shown.iteration))
            });
            let _ = match reason {
                Some(reason) => writeln!(out, "= failed: {} ({reason})", class.as_str()),
                None => writeln!(out, "= failed: {}", class.as_str()),
            };
        }
    }
    out.push('\n');
    out
}

/// `bytes` (of `size` in all) as lines prefixed with `prefix`, up to [`DEBUG_BODY_LIMIT`].
fn body(out: &mut String, prefix: &str, bytes: &[u8], size: u64) {
    let cut = bytes.len().min(DEBUG_BODY_LIMIT);
    for line in String::from_utf8_lossy(&bytes[..cut]).lines() {
        let _ = writeln!(out, "{prefix}{line}");
    }
    if size > cut as u64 {
        let _ = writeln!(out, "{prefix}… {} more bytes", size - cut as u64);
    }
}
