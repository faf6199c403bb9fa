//! The HTTP request step: method, URL, headers, query and body (inline, file, form or
//! multipart), and what it takes from and checks in the response.

use std::path::PathBuf;
use std::time::Duration;

use crate::{Check, Extract, ExtractSource, OnFailure, TargetUrl, Template};

#[derive(Debug, Clone, PartialEq)]
pub struct RequestStep {
    /// Index into [`Scenario::metrics`](crate::Scenario::metrics).
    pub metric: usize,
    /// Upper case: GET POST PUT PATCH DELETE HEAD OPTIONS.
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
}

impl RequestStep {
    /// True when extractors or checks need the response body.
    pub fn needs_body(&self) -> bool {
        self.extract
            .iter()
            .any(|e| matches!(e.source, ExtractSource::Body(_)))
            || self.checks.iter().any(|c| c.kind.needs_body())
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
