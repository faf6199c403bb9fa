//! What a step reads in a response: the variables it extracts (`extract:`) and the checks it
//! makes (`check:`).

use std::time::Duration;

use crate::{Shared, Template};

/// One `extract:` entry: where a variable's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Extract {
    /// The variable's slot and name.
    pub var: usize,
    pub name: String,
    pub source: ExtractSource,
    pub occurrence: Occurrence,
    /// Used when nothing is found; without one, nothing found fails the request and check
    /// `check` (named `extract NAME`) counts it.
    pub default: Option<String>,
    pub check: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExtractSource {
    /// boundary, regex, jsonpath, css, xpath over the (decoded) body.
    Body(Shared<onrush_extract::Extractor>),
    /// A response header's value (case-insensitive name); several headers are occurrences.
    Header(String),
    /// The status code.
    Status,
    /// A cookie's value as set by the response (`Set-Cookie`).
    Cookie(String),
    /// The final URL after redirects (path and query).
    Url,
}

/// Which match an extractor keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrence {
    /// 1-based.
    Nth(usize),
    Last,
    Random,
    /// All matches: a list variable (for `foreach`).
    All,
}

/// One `check:` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Index into [`Scenario::checks`](crate::Scenario::checks).
    pub id: usize,
    pub kind: CheckKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CheckKind {
    /// `status: [200, 201]`
    Status(Vec<u16>),
    /// `body_contains: TEXT`
    BodyContains(Template),
    /// `body_matches: REGEX`
    BodyMatches(Shared<regex::bytes::Regex>),
    /// `jsonpath: PATH` with `exists: true|false` or `equals: VALUE`.
    JsonPath {
        path: Shared<onrush_extract::Extractor>,
        expect: ValueExpect,
    },
    /// `header: NAME` with `exists`, `equals`, `contains` or `matches`.
    Header { name: String, expect: ValueExpect },
    /// `duration_below: 500ms`: the request's latency.
    DurationBelow(Duration),
    /// `body_size: { min, max }` in bytes (decoded body).
    BodySize { min: u64, max: u64 },
    /// `body_sha256: HEX` / `body_md5: HEX`: computed while streaming, whatever the size.
    BodyHash {
        algorithm: HashAlgorithm,
        hex: String,
    },
    /// `js: EXPRESSION`: the plan's script function (an inline expression, `res` and `vars` in
    /// scope) is truthy.
    Script(u32),
}

/// True when a step's extractors or checks read the response body (a step that needs none
/// need not keep it).
pub fn reads_body(extract: &[Extract], checks: &[Check]) -> bool {
    extract
        .iter()
        .any(|e| matches!(e.source, ExtractSource::Body(_)))
        || checks.iter().any(|c| c.kind.needs_body())
}

impl CheckKind {
    /// True when the check reads body bytes kept in memory (hashes and sizes stream).
    pub fn needs_body(&self) -> bool {
        matches!(
            self,
            CheckKind::BodyContains(_)
                | CheckKind::BodyMatches(_)
                | CheckKind::JsonPath { .. }
                | CheckKind::Script(_)
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValueExpect {
    Exists(bool),
    Equals(Template),
    Contains(Template),
    Matches(Shared<regex::bytes::Regex>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlgorithm {
    Md5,
    Sha256,
}
