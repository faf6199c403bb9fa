//! A step of a protocol onrush-plan does not hold → [`Step::Custom`]: the common keys here,
//! the rest by the protocol's [`StepGrammar`](crate::StepGrammar).

use super::steps::Build;
use super::Ctx;
use crate::error::PlanError;
use crate::grammar::{Mapping, StepGrammar, COMMON_KEYS};
use crate::yaml::{Kind, Node};
use crate::{CustomStep, Step};

impl Ctx<'_> {
    /// The grammar that `node`'s keys name, if a step of a registered protocol.
    pub(super) fn custom_grammar(&self, keys: &[String]) -> Option<&dyn StepGrammar> {
        keys.iter().find_map(|k| self.grammars.get(k))
    }

    pub(super) fn custom(
        &self,
        grammar: &dyn StepGrammar,
        node: &Node,
        path: &str,
        base: &str,
        m: &mut Build,
    ) -> Result<Step, PlanError> {
        let key = grammar.key();
        let allowed: Vec<&str> = std::iter::once(key)
            .chain(grammar.aliases().iter().copied())
            .chain(grammar.keys().iter().copied())
            .chain(COMMON_KEYS)
            .collect();
        if let Kind::Map(entries) = &node.kind {
            for (k, _) in entries {
                let text = k.as_scalar().map_or("", |s| s.text.as_str());
                if allowed.contains(&text) {
                    continue;
                }
                if let Some((message, hint)) = grammar.explain_unknown(text) {
                    return Err(self
                        .err(k, &format!("{path}.{text}"), message)
                        .with_hint(hint));
                }
            }
        }
        let step = Mapping::new(self, self.map(node, path, &allowed)?);
        self.step_base.replace(base.to_string());
        let f = step.fields();
        let timeout = self.step_timeout(f)?;
        let name = match f.get("name") {
            Some(n) => Some(self.string(n, &f.child("name"))?),
            None => None,
        };
        let compiled = grammar.compile(&step).map_err(|e| {
            if e.hint().is_none() {
                e.with_hint(format!("e.g. `- {}`", grammar.example()))
            } else {
                e
            }
        })?;
        let metric = m.id(name.unwrap_or(compiled.name));
        let outcome = self.step_outcome(f, metric, m)?;
        let mut step = CustomStep::new(grammar.protocol(), metric, timeout, outcome, compiled.spec);
        if let Some(n) = f.get("before") {
            if !grammar.supports_before() {
                let key = f.key("before").expect("present");
                return Err(self
                    .err(key, &f.child("before"), format!("`{}` steps take no `before:` hook yet", grammar.key()))
                    .with_hint("compute the value in a template instead: `${myFunction(arg)}` calls an exported function; `before:` works on HTTP steps"));
            }
            step.before = Some(self.script_export(n, &f.child("before"))?);
        }
        if let Some(n) = f.get("after") {
            step.after = Some(self.script_export(n, &f.child("after"))?);
        }
        Ok(Step::Custom(step))
    }
}
