//! Rendering a request step's templates into reused buffers: per request in a session, and
//! once, when a step is compiled, for a request that never changes ([`crate::step`]).

use crate::request::Body;
use onrush_http1 as http1;
use onrush_plan::{RenderContext, Unset};

use crate::step::HttpStep;

/// A request's target (path and query), header lines and body, rendered.
#[derive(Default)]
pub(crate) struct RequestParts {
    // Sized by the first request's render, then reused: no capacity reserved up front for the
    // VUs of a run (tens of thousands) that render short paths.
    pub(crate) path: Vec<u8>,
    pub(crate) headers: Vec<u8>,
    pub(crate) body: Vec<u8>,
    pub(crate) scratch: Vec<u8>,
    /// The method a `before:` hook changed the step's to, if it did.
    pub(crate) method: Option<String>,
}

/// Why a request could not be rendered.
pub(crate) enum RenderError {
    Unset(Unset),
    Header,
    /// The step's `before:` hook failed (its class: script_error, _timeout or _failed).
    Script(onrush_protocol::FailureClass),
}

impl From<Unset> for RenderError {
    fn from(u: Unset) -> Self {
        RenderError::Unset(u)
    }
}

impl RequestParts {
    /// Renders the per-request parts of `step` into the buffers.
    pub(crate) fn render(
        &mut self,
        step: &HttpStep,
        ctx: &RenderContext,
    ) -> Result<(), RenderError> {
        self.method = None;
        self.path.clear();
        step.plan.path.render(ctx, &mut self.path)?;
        for (name, value) in &step.plan.query {
            self.path.push(if self.path.contains(&b'?') {
                b'&'
            } else {
                b'?'
            });
            http1::percent_encode_component(name.as_bytes(), &mut self.path);
            self.path.push(b'=');
            self.scratch.clear();
            value.render(ctx, &mut self.scratch)?;
            http1::percent_encode_component(&self.scratch, &mut self.path);
        }
        self.headers.clear();
        self.headers.extend_from_slice(&step.constant_headers);
        for (name, template) in &step.plan.headers {
            if !template.is_constant() {
                self.scratch.clear();
                template.render(ctx, &mut self.scratch)?;
                http1::push_header(&mut self.headers, name.as_bytes(), &self.scratch)
                    .map_err(|_| RenderError::Header)?;
            }
        }
        self.body.clear();
        match &step.plan.body {
            Body::Inline(template) => template.render(ctx, &mut self.body)?,
            Body::Form(pairs) => {
                for (i, (name, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        self.body.push(b'&');
                    }
                    self.scratch.clear();
                    value.render(ctx, &mut self.scratch)?;
                    http1::form_urlencode(
                        std::iter::once((name.as_bytes(), &self.scratch[..])),
                        &mut self.body,
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }
}
