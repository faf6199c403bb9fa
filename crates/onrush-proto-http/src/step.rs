//! A request step compiled once: the plan's step, its target resolved, the header lines that
//! never change preformatted, what of the response to keep decided.

use std::sync::Arc;
use std::time::Duration;

use onrush_http1 as http1;
use onrush_plan::{
    Check, CheckKind, CloseMode, CookieMode, Extract, HashAlgorithm, HttpSettings, HttpVersion,
    OnFailure, RenderContext,
};
use onrush_protocol::StepSpec;

use crate::render::RequestParts;
use crate::request::{Body, MultipartField, RequestStep};
use crate::target::HttpTarget;

/// A request step ready to run: the plan's step, its target resolved, its settings fixed.
pub struct HttpStep {
    pub plan: RequestStep,
    /// Index into the session's connection slots (one slot per distinct target).
    pub target_slot: usize,
    pub target: Arc<HttpTarget>,
    /// Preformatted header lines that never change (constant templates + User-Agent, ...).
    pub(crate) constant_headers: Vec<u8>,
    pub(crate) timeout: Duration,
    /// A multipart body whose parts are all constant, laid out once.
    pub(crate) multipart: Option<http1::Multipart>,
    pub(crate) decompress: bool,
    pub(crate) redirects: u32,
    pub(crate) cookies: bool,
    /// Keep the body (up to `body_limit`) for extractors and body checks.
    pub(crate) keep_body: bool,
    pub(crate) body_limit: usize,
    /// Keep every response header (header extractors and checks). A redirect's `Location` is
    /// kept without it when `redirects` > 0, and `Set-Cookie` always.
    pub(crate) keep_headers: bool,
    pub(crate) hash: Option<HashAlgorithm>,
    /// The request encoded once, when nothing in it can change from one request to the next
    /// (see [`HttpStep::prepare`]).
    pub(crate) prepared: Option<StaticRequest>,
}

/// A request that is the same every time, encoded when its step is compiled.
pub(crate) struct StaticRequest {
    /// Its target (path and query), for what reads the session's (cookies, redirects, checks).
    pub(crate) path: Box<[u8]>,
    pub(crate) request: http1::PreparedRequest,
}

impl HttpStep {
    pub fn new(
        plan: RequestStep,
        target_slot: usize,
        target: Arc<HttpTarget>,
        http: &HttpSettings,
    ) -> Result<Self, String> {
        let has = |name: &str| {
            plan.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let mut constant_headers = Vec::new();
        if !has("user-agent") {
            constant_headers.extend_from_slice(USER_AGENT);
        }
        if http.decompress && !has("accept-encoding") {
            constant_headers.extend_from_slice(b"Accept-Encoding: gzip, deflate, br\r\n");
        }
        if matches!(plan.body, Body::Form(_)) && !has("content-type") {
            constant_headers
                .extend_from_slice(b"Content-Type: application/x-www-form-urlencoded\r\n");
        }
        let vars = onrush_plan::Vars::default();
        let ctx = RenderContext::new(0, 0, &vars);
        let mut value = Vec::new();
        for (name, template) in &plan.headers {
            if template.is_constant() {
                value.clear();
                let _ = template.render(&ctx, &mut value);
                http1::push_header(&mut constant_headers, name.as_bytes(), &value)
                    .map_err(|e| format!("header {name:?}: {e}"))?;
            }
        }
        let multipart = match &plan.body {
            Body::Multipart(fields)
                if fields.iter().all(|f| match f {
                    MultipartField::Text { value, .. } => value.is_constant(),
                    MultipartField::File { .. } => true,
                }) =>
            {
                Some(build_multipart(fields, &ctx).map_err(|e| format!("multipart body: {e}"))?)
            }
            _ => None,
        };
        let hash = plan.checks.iter().find_map(|c| match &c.kind {
            CheckKind::BodyHash { algorithm, .. } => Some(*algorithm),
            _ => None,
        });
        let keep_headers = plan
            .checks
            .iter()
            .any(|c| matches!(c.kind, CheckKind::Header { .. }))
            || plan.extract.iter().any(|e| {
                matches!(
                    e.source,
                    onrush_plan::ExtractSource::Header(_) | onrush_plan::ExtractSource::Cookie(_)
                )
            });
        let timeout = plan.timeout.unwrap_or(http.timeout);
        let mut step = HttpStep {
            keep_body: plan.needs_body(),
            body_limit: http.body_limit.min(usize::MAX as u64) as usize,
            cookies: http.cookies != CookieMode::Off,
            decompress: http.decompress,
            redirects: http.redirects,
            keep_headers,
            hash,
            multipart,
            plan,
            target_slot,
            target,
            constant_headers,
            timeout,
            prepared: None,
        };
        step.prepared = step.prepare(http);
        Ok(step)
    }

    /// The step's request encoded once, when every request of it is the same: no template in
    /// its target, headers or body has a per-request value, and its body is in memory. The
    /// session still sends it the ordinary way when something is added per request (a
    /// `Cookie` header from the jar) or changed (a redirect's next hop). Only for HTTP/1.1
    /// (`version: h1`, or `auto` to a plain http target): HTTP/2 encodes its own way.
    fn prepare(&self, http: &HttpSettings) -> Option<StaticRequest> {
        let plan = &self.plan;
        // A `before:` hook may change any request: it is rendered and handed over each time.
        if plan.before.is_some() {
            return None;
        }
        let h1 = match http.version {
            HttpVersion::H1 => true,
            HttpVersion::Auto => !self.target.tls,
            HttpVersion::H2 => false,
        };
        let constant_body = match &plan.body {
            Body::None => true,
            Body::Inline(template) => template.is_constant(),
            Body::Form(pairs) => pairs.iter().all(|(_, value)| value.is_constant()),
            Body::File(_) | Body::Multipart(_) => false,
        };
        let constant = plan.path.is_constant()
            && plan.query.iter().all(|(_, value)| value.is_constant())
            && plan.headers.iter().all(|(_, value)| value.is_constant())
            && constant_body;
        if !h1 || !constant {
            return None;
        }
        // Rendered as the session renders every request: the same bytes, by the same code.
        let mut parts = RequestParts::default();
        parts.render(self, &RenderContext::default()).ok()?;
        let request = http1::PreparedRequest::new(&http1::Request {
            method: &plan.method,
            target: &parts.path,
            host: &self.target.host_header,
            headers: &parts.headers,
            body: match plan.body {
                Body::None => http1::RequestBody::Empty,
                _ => http1::RequestBody::Bytes(&parts.body),
            },
            close: http.close_mode() == CloseMode::Server,
        })?;
        Some(StaticRequest {
            path: parts.path.into_boxed_slice(),
            request,
        })
    }
}

pub(crate) fn build_multipart(
    fields: &[MultipartField],
    ctx: &RenderContext,
) -> Result<http1::Multipart, String> {
    let mut parts = Vec::with_capacity(fields.len());
    for f in fields {
        parts.push(match f {
            MultipartField::Text { name, value } => http1::Part::Text {
                name: name.clone(),
                value: value
                    .render_to_vec(ctx)
                    .map_err(|u| format!("unset variable {u:?}"))?,
            },
            MultipartField::File {
                name,
                path,
                filename,
                content_type,
            } => http1::Part::File {
                name: name.clone(),
                file_name: filename.clone(),
                content_type: content_type.clone(),
                path: path.clone(),
            },
        });
    }
    http1::Multipart::new(parts).map_err(|e| e.to_string())
}

const USER_AGENT: &[u8] =
    concat!("User-Agent: onrush/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes();

impl StepSpec for HttpStep {
    #[inline]
    fn metric(&self) -> usize {
        self.plan.metric
    }

    #[inline]
    fn extract(&self) -> &[Extract] {
        &self.plan.extract
    }

    #[inline]
    fn checks(&self) -> &[Check] {
        &self.plan.checks
    }

    #[inline]
    fn on_failure(&self) -> OnFailure {
        self.plan.on_failure
    }
}
