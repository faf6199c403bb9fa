//! What each route of the live server answers (server.rs reads the request and writes this).

use onrush_engine::{RunState, SteerError, Steerable};
use serde::Serialize;
use serde_json::Value;

use crate::server::{query_param, Request, Response};
use crate::state::{ScenarioFigures, StepStatus};
use crate::Shared;

const ROUTES: &str = "GET /, GET /api/status, GET /api/seconds?from=T, POST /api/stop, \
                      POST /api/pause, POST /api/resume, POST /api/scenarios/NAME/load";

pub(crate) fn route(shared: &Shared, req: &Request<'_>) -> Response {
    match (req.method, req.path) {
        ("GET" | "HEAD", "/") => page(shared),
        ("GET" | "HEAD", "/report.html") => final_report(shared),
        ("GET" | "HEAD", "/api/status") => Response::json(200, status_json(shared, req)),
        ("GET" | "HEAD", "/api/seconds") => seconds(shared, req),
        ("POST", path) if path.starts_with("/api/") => control(shared, req, path),
        (_, "/" | "/api/status" | "/api/seconds" | "/report.html") => {
            Response::error(405, "this route takes GET")
        }
        _ => Response::error(404, &format!("no such route; the routes: {ROUTES}")),
    }
}

/// The live page, or once the run has ended, its report.
fn page(shared: &Shared) -> Response {
    if let Some(r) = shared.report_html() {
        return r;
    }
    if shared.state.lock().last_second.is_none() {
        // Nothing closed yet: the report of an empty directory says little.
        return Response::html(STARTING.to_string());
    }
    match onrush_report::render_live_page(&shared.dir) {
        Ok(html) => Response::html(html),
        Err(e) => Response::error(503, &format!("the page cannot be drawn yet: {e}")),
    }
}

const STARTING: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"refresh\" content=\"1\"><title>onrush: starting</title></head><body>\
<p id=\"onrush-starting\">The run is starting: this page reloads until its first second closes.</p>\
</body></html>";

fn final_report(shared: &Shared) -> Response {
    shared
        .report_html()
        .unwrap_or_else(|| Response::error(404, "the report is written when the run ends"))
}

fn seconds(shared: &Shared, req: &Request<'_>) -> Response {
    let Some(from) = query_param(req.query, "from").and_then(|v| v.parse::<u64>().ok()) else {
        return Response::error(400, "give the first second wanted: /api/seconds?from=T");
    };
    let found = shared.state.lock().offset_of(from);
    let Some((first, offset)) = found else {
        // Nothing closed from there yet.
        return Response::json(
            200,
            format!("{{\"from\":{from},\"seconds\":0,\"series\":{{}},\"step_series\":[]}}"),
        );
    };
    match onrush_report::live_chunk(
        &shared.dir.join(onrush_results::INTERVALS_FILE),
        offset,
        first,
    ) {
        Ok(json) => Response::json(200, json),
        Err(e) => Response::error(503, &e.to_string()),
    }
}

#[derive(Serialize)]
struct ScenarioStatus<'a> {
    name: &'a str,
    /// `rate` (open model), `vus` (closed over a duration) or `fixed` (iterations).
    steer: &'static str,
    /// The rate or VUs set live, if any.
    rate_set: Option<f64>,
    vus_set: Option<u32>,
    iterations: u64,
    iterations_last_second: u64,
    dropped_iterations: u64,
    active_vus: u64,
}

#[derive(Serialize)]
struct Status<'a> {
    plan: &'a str,
    state: &'static str,
    /// Seconds since the start (whole seconds closed).
    elapsed_s: u64,
    planned_s: Option<f64>,
    /// The last second closed (`null` before the first).
    second: Option<u64>,
    requests: u64,
    failures: u64,
    /// Requests and failures of the last closed second.
    rate: u64,
    failures_last_second: u64,
    connections_opened: u64,
    bytes_in: u64,
    bytes_out: u64,
    failures_by_class: &'a std::collections::BTreeMap<String, u64>,
    scenarios: Vec<ScenarioStatus<'a>>,
    steps: Vec<StepStatus<'a>>,
    events: &'a [onrush_results::Event],
    /// Whether this caller may steer (see docs/live.md, "Security").
    control: bool,
    /// The final report, once written.
    report: Option<&'static str>,
    /// The thresholds judged on the run so far, the generator's health.
    #[serde(flatten)]
    published: onrush_engine::steer::Published,
}

pub(crate) fn status_json(shared: &Shared, req: &Request<'_>) -> String {
    let state = shared.state.lock();
    let steering = &shared.steering;
    let run_state = shared.run_state();
    let scenarios = steering
        .scenarios()
        .enumerate()
        .map(|(i, (name, kind))| {
            let f = state.scenario_figures(name).unwrap_or(ScenarioFigures {
                iterations: 0,
                dropped_iterations: 0,
                active_vus: 0,
                iterations_last_second: 0,
            });
            ScenarioStatus {
                name,
                steer: match kind {
                    Steerable::Rate => "rate",
                    Steerable::Vus => "vus",
                    Steerable::Fixed => "fixed",
                },
                rate_set: steering.rate(i),
                vus_set: steering.vus(i),
                iterations: f.iterations,
                iterations_last_second: f.iterations_last_second,
                dropped_iterations: f.dropped_iterations,
                active_vus: f.active_vus,
            }
        })
        .collect();
    let status = Status {
        plan: &shared.plan,
        state: run_state.as_str(),
        elapsed_s: state.last_second.map_or(0, |s| s + 1),
        planned_s: shared.planned.map(|d| d.as_secs_f64()),
        second: state.last_second,
        requests: state.requests,
        failures: state.failures,
        rate: state.last_requests,
        failures_last_second: state.last_failures,
        connections_opened: state.connections_opened,
        bytes_in: state.bytes_in,
        bytes_out: state.bytes_out,
        failures_by_class: &state.failures_by_class,
        scenarios,
        steps: state.steps.iter().map(|s| s.status()).collect(),
        events: &state.events,
        control: req.may_control && !matches!(run_state, RunState::Finished),
        report: shared.report_html_exists().then_some("/report.html"),
        published: steering.published(),
    };
    serde_json::to_string(&status).expect("a status always serialises")
}

fn control(shared: &Shared, req: &Request<'_>, path: &str) -> Response {
    if req.foreign_origin {
        return Response::error(
            403,
            "a page of another origin cannot steer this run (its Origin is not this server)",
        );
    }
    if !req.may_control {
        return Response::error(
            403,
            "this server is not on a loopback address: steering needs the run's token \
             (`Authorization: Bearer TOKEN` or `?token=TOKEN`; onrush printed it with the URL)",
        );
    }
    let st = &shared.steering;
    let by = "api";
    let done = |changed: bool, what: &str| {
        Response::json(
            200,
            serde_json::json!({ "ok": true, "changed": changed, "state": shared.run_state().as_str(), "detail": what })
                .to_string(),
        )
    };
    let refused = |e: SteerError| {
        let status = match e {
            SteerError::NoScenario { .. } => 404,
            SteerError::Value(_) => 400,
            _ => 409,
        };
        Response::error(status, &e.to_string())
    };
    match path {
        "/api/stop" => done(
            st.stop(by),
            "stopping: requests in flight are cut, results written",
        ),
        "/api/pause" => match st.pause(by) {
            Ok(changed) => done(changed, if changed { "paused" } else { "paused already" }),
            Err(e) => refused(e),
        },
        "/api/resume" => match st.resume(by) {
            Ok(changed) => done(changed, if changed { "resumed" } else { "was not paused" }),
            Err(e) => refused(e),
        },
        _ => {
            let Some(name) = path
                .strip_prefix("/api/scenarios/")
                .and_then(|p| p.strip_suffix("/load"))
            else {
                return Response::error(404, &format!("no such route; the routes: {ROUTES}"));
            };
            let name = percent_decode(name);
            match load_change(req.body) {
                Ok(Change::Rate(r)) => match st.set_rate(&name, r, by) {
                    Ok(()) => done(true, &format!("{name}: rate set to {r}/s")),
                    Err(e) => refused(e),
                },
                Ok(Change::Vus(v)) => match st.set_vus(&name, v, by) {
                    Ok(()) => done(true, &format!("{name}: VUs set to {v}")),
                    Err(e) => refused(e),
                },
                Err(msg) => Response::error(400, &msg),
            }
        }
    }
}

enum Change {
    Rate(f64),
    Vus(u32),
}

/// `{"rate": "200/s"}` (or a number, per second) or `{"vus": 20}`.
fn load_change(body: &[u8]) -> Result<Change, String> {
    const HOW: &str = "send {\"rate\": \"200/s\"} (an open model) or {\"vus\": 20} (a closed one)";
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON ({e}): {HOW}"))?;
    match (v.get("rate"), v.get("vus")) {
        (Some(_), Some(_)) => Err(format!("one change at a time: {HOW}")),
        (Some(Value::String(s)), None) => onrush_units::parse_rate(s)
            .map(Change::Rate)
            .map_err(|e| format!("rate {s:?}: {} ({})", e.message, e.hint)),
        (Some(Value::Number(n)), None) => n
            .as_f64()
            .map(Change::Rate)
            .ok_or_else(|| format!("rate {n}: not a number")),
        (None, Some(Value::Number(n))) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Change::Vus)
            .ok_or_else(|| format!("vus {n}: a whole number of VUs, 0 or more")),
        _ => Err(HOW.to_string()),
    }
}

/// `%20` and friends in a scenario's name.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_changes_are_read_with_the_plan_units_and_wrong_ones_say_how() {
        assert!(matches!(load_change(br#"{"rate": "200/s"}"#), Ok(Change::Rate(r)) if r == 200.0));
        assert!(matches!(load_change(br#"{"rate": "600/m"}"#), Ok(Change::Rate(r)) if r == 10.0));
        assert!(matches!(load_change(br#"{"rate": 50}"#), Ok(Change::Rate(r)) if r == 50.0));
        assert!(matches!(
            load_change(br#"{"vus": 20}"#),
            Ok(Change::Vus(20))
        ));
        for bad in [
            &br#"{"vus": -1}"#[..],
            br#"{"rate": "fast"}"#,
            b"{}",
            b"nope",
            br#"{"rate":1,"vus":2}"#,
        ] {
            let e = load_change(bad).err().unwrap();
            assert!(!e.is_empty(), "{}", String::from_utf8_lossy(bad));
        }
        assert!(load_change(b"nope").err().unwrap().contains("\"vus\": 20"));
    }

    #[test]
    fn scenario_names_are_percent_decoded() {
        assert_eq!(percent_decode("my%20shop"), "my shop");
        assert_eq!(percent_decode("plain"), "plain");
        assert_eq!(percent_decode("odd%2"), "odd%2");
    }
}
