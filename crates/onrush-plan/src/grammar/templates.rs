//! Templates a grammar builds from pieces (a URL's path after the target's base path, an
//! `Authorization` header from a user and a password), files compiled as templates, and where
//! a step's target is: what a request-like protocol needs beyond [`Value::template`].

use super::{Mapping, Value};
use crate::error::PlanError;
use crate::Template;

pub use crate::compile::Part as TemplatePart;
pub use crate::compile::{split_url, UrlError};

/// A template made of `parts` (as [`Value::template_parts`] gives them, changed by the
/// grammar); `source` is what errors and `Debug` show of it.
pub fn template_of(parts: Vec<TemplatePart>, source: &str) -> Template {
    crate::compile::to_template(parts, source)
}

impl Mapping<'_> {
    /// The base path of the plan's `target:` (`/api` of `http://host/api`, empty without
    /// one), or `None` when the plan has no `target:` (a step must then give a full URL).
    pub fn target_base(&self) -> Option<String> {
        (!self.cx.no_target).then(|| self.cx.step_base.borrow().clone())
    }
}

impl Value<'_> {
    /// The value as template pieces: literal text, `${vu}`/`${iteration}`, runtime variables
    /// and functions, the plan's variables already expanded. [`template_of`] makes them a
    /// template again.
    pub fn template_parts(&self) -> Result<Vec<TemplatePart>, PlanError> {
        self.cx.expand(self.node, &self.path)
    }

    /// A file of the plan (the value is its path, relative to the plan) whose text is
    /// compiled as a template (`body_template: order.json`): errors in it name the file and
    /// its line; a file that is not UTF-8 is an error saying so.
    pub fn template_file(&self) -> Result<Template, PlanError> {
        self.cx.template_file(self.node, &self.path)
    }

    /// A mapping of names to templates, in file order (`form:`, `query:`); a null value is
    /// the empty text. `what` names one entry in errors ("form field").
    pub fn named_templates(&self, what: &str) -> Result<Vec<(String, Template)>, PlanError> {
        self.cx.pairs(self.node, &self.path, what)
    }
}
