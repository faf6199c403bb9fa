//! An HTTP request step as the plan wrote it: what its grammar (grammar.rs) makes of
//! `- { post: /orders, headers: {...}, body: ... }`, and the step the session runs (the
//! request with what every step has: metric, timeout, extractors, checks, `on_failure`).

use std::path::PathBuf;
use std::time::Duration;

use onrush_plan::{Check, CustomStep, Extract, OnFailure, TargetUrl, Template};

/// The request part of a step, as its grammar compiled it.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    /// Upper case: GET POST PUT PATCH DELETE HEAD OPTIONS, or any token (`method: PURGE`).
    pub method: String,
    /// Some when the step gives an absolute URL (host not templated).
    pub target: Option<TargetUrl>,
    /// Origin-form path + query, always starts with '/', base_path already prefixed.
    pub path: Template,
    pub headers: Vec<(String, Template)>,
    pub body: Body,
    /// None: status >= 400 is a failure.
    pub expect_status: Option<Vec<u16>>,
    /// `query: { name: value }`: appended to the path, URL-encoded.
    pub query: Vec<(String, Template)>,
}

/// A request step: the request and what the plan's step adds to every protocol's.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestStep {
    /// Index into [`Scenario::metrics`](onrush_plan::Scenario::metrics).
    pub metric: usize,
    /// Upper case: GET POST PUT PATCH DELETE HEAD OPTIONS, or any token.
    pub method: String,
    /// Some when the step gives an absolute URL (host not templated).
    pub target: Option<TargetUrl>,
    /// Origin-form path + query, always starts with '/', base_path already prefixed.
    pub path: Template,
    pub headers: Vec<(String, Template)>,
    pub body: Body,
    /// Overrides `http.timeout`.
    pub timeout: Option<Duration>,
    /// None: status >= 400 is a failure.
    pub expect_status: Option<Vec<u16>>,
    /// `query: { name: value }`: appended to the path, URL-encoded.
    pub query: Vec<(String, Template)>,
    /// `extract:`: variables set from the response, in plan order.
    pub extract: Vec<Extract>,
    /// `check:`: response checks, in plan order.
    pub checks: Vec<Check>,
    /// `on_failure`: what the VU does when this request fails (a check failed included).
    pub on_failure: OnFailure,
    /// `before:`: the plan's script function that may change the rendered request.
    pub before: Option<u32>,
    /// `after:`: the plan's script function that reads the reply (the body is then kept).
    pub after: Option<u32>,
}

impl RequestStep {
    /// The request step of a plan's step, when it is one (an HTTP step's grammar made it).
    pub fn of(step: &onrush_plan::Step) -> Option<RequestStep> {
        let onrush_plan::Step::Custom(custom) = step else {
            return None;
        };
        let request = custom.spec::<HttpRequest>()?;
        Some(RequestStep::new(custom, request))
    }

    /// The step of `request` with `custom`'s metric, timeout, extractors and checks.
    pub fn new(custom: &CustomStep, request: &HttpRequest) -> RequestStep {
        let HttpRequest {
            method,
            target,
            path,
            headers,
            body,
            expect_status,
            query,
        } = request.clone();
        RequestStep {
            metric: custom.metric,
            method,
            target,
            path,
            headers,
            body,
            timeout: custom.timeout,
            expect_status,
            query,
            extract: custom.extract.clone(),
            checks: custom.checks.clone(),
            on_failure: custom.on_failure,
            before: custom.before,
            after: custom.after,
        }
    }

    /// True when extractors or checks need the response body.
    pub fn needs_body(&self) -> bool {
        self.after.is_some() || onrush_plan::reads_body(&self.extract, &self.checks)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    None,
    /// `body:` or `body_template: FILE` (the file's text compiled as a template).
    Inline(Template),
    /// Resolved against the plan's directory, checked to exist at load.
    File(PathBuf),
    /// `form: { name: value }`: `application/x-www-form-urlencoded`.
    Form(Vec<(String, Template)>),
    /// `multipart: { name: value | { file, filename, content_type } }`: `multipart/form-data`,
    /// files streamed from disk.
    Multipart(Vec<MultipartField>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum MultipartField {
    Text {
        name: String,
        value: Template,
    },
    File {
        name: String,
        /// Resolved against the plan's directory, checked to exist at load.
        path: PathBuf,
        filename: String,
        content_type: String,
    },
}
