//! The end of the walk: the target chosen, variables gathered, URLs made relative, and the
//! plan written.

use std::collections::BTreeMap;

use super::{Conv, Item, URL_MARK};
use crate::template::unset_marker;
use crate::yaml::{self, Y};
use crate::{DataFile, Import};

impl Conv<'_> {
    /// Chooses the target (the most used origin), makes those URLs relative, and writes the plan.
    pub(super) fn finish(mut self, scenarios: Vec<Item>) -> Import {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for o in &self.origins {
            *counts.entry(o).or_default() += 1;
        }
        let target = counts
            .iter()
            .max_by_key(|(o, n)| (**n, std::cmp::Reverse(**o)))
            .map(|(o, _)| o.to_string());
        let mut plan = Y::map();
        let target_comment = match &target {
            Some(_) if counts.len() > 1 => {
                vec![
                    "the origin of most requests; requests to the others keep their absolute URL"
                        .to_string(),
                ]
            }
            Some(_) => Vec::new(),
            None => vec!["no HTTP request names a server: change the target".to_string()],
        };
        let target = target.unwrap_or_else(|| "http://localhost".into());
        plan.set_c("target", Y::s(target.clone()), target_comment);
        if !self.js.functions.is_empty() {
            plan.set_c(
                "scripts",
                Y::Seq(vec![(Y::s(self.opts.script_file_name().to_string()), vec![])]),
                vec!["the JMeter plan's JSR223/BeanShell scripts, converted to JavaScript (keep it beside the plan)".into()],
            );
        }
        // Variables: properties, user-defined ones, then those referenced but set by nothing
        // that converted (a script, a function): given empty, to set with -D.
        let props: Vec<(String, String)> = self
            .tr
            .properties
            .iter()
            .map(|(k, p)| (k.clone(), p.var.clone()))
            .collect();
        let mut inserted = 0;
        for (prop, var) in props {
            if !self.vars.iter().any(|v| v.0 == var) {
                let default = self.tr.properties[&prop].default.clone();
                inserted += 1;
                self.vars.insert(
                    inserted - 1,
                    (
                        var.clone(),
                        default,
                        vec![format!(
                            "JMeter property `{prop}` (${{__P}}): override with -D {var}=..."
                        )],
                    ),
                );
            }
        }
        let mut dropped = Vec::new();
        self.vars.retain(|v| {
            let keep = !self.runtime.contains(&v.0);
            if !keep {
                dropped.push(v.0.clone());
            }
            keep
        });
        for name in dropped {
            self.header.push(format!("`{name}` is a user-defined variable that is also set at run time: onrush keeps it as a runtime variable only (no initial value)"));
        }
        let refs: Vec<String> = self.tr.refs.iter().cloned().collect();
        for r in refs {
            let known = self.vars.iter().any(|v| v.0 == r)
                || self.runtime.contains(&r)
                || r == "vu"
                || r == "iteration";
            if !known {
                // In a server name an empty value would not load: `localhost` until set.
                let in_host = self
                    .origins
                    .iter()
                    .any(|o| o.contains(&format!("${{{r}}}")));
                if in_host {
                    self.vars.push((r.clone(), "localhost".into(), vec![format!("`${{{r}}}` is set by nothing that converted (a script? a plugin?): set it with -D {r}=...")]));
                    continue;
                }
                // Marked, so that the run warns (and `run --strict` refuses) rather than
                // sending every request with an empty value.
                let reason = self.what_sets(&r);
                self.vars.push((
                    r.clone(),
                    unset_marker(&reason),
                    vec![format!(
                        "`${{{r}}}` is {reason}: port it, or pass -D {r}=..."
                    )],
                ));
            }
        }
        self.mark_path_properties();
        for file in std::mem::take(&mut self.tr.files) {
            if !self.data_files.iter().any(|d| d.path == file) {
                self.data_files.push(DataFile {
                    default_path: file.clone(),
                    path: file,
                    columns: Vec::new(),
                });
            }
        }
        if !self.vars.is_empty() {
            let vars = Y::Map(
                self.vars
                    .iter()
                    .map(|(k, v, c)| (k.clone(), Y::s(v.clone()), c.clone()))
                    .collect(),
            );
            plan.set("vars", vars);
        }
        let mut http = Y::map();
        let mut http_notes = Vec::new();
        if self.follow_redirects {
            http.set("redirects", Y::Raw("20".into()));
            http_notes.push("JMeter samplers follow redirects (at most 20); onrush follows them on the same origin only".to_string());
        }
        if self.decompress {
            http.set("decompress", Y::Raw("true".into()));
            http_notes.push("JMeter decodes gzip/deflate bodies; `decompress: true` does too and sends Accept-Encoding itself".to_string());
        }
        if !http.is_empty() {
            plan.set_c("http", http, http_notes);
        }
        for d in &mut self.data_files {
            for (name, value, _) in &self.vars {
                if !value.starts_with("${unset(") {
                    d.default_path = d.default_path.replace(&format!("${{{name}}}"), value);
                }
            }
        }
        for (key, steps) in [
            ("setup", std::mem::take(&mut self.setup_steps)),
            ("teardown", std::mem::take(&mut self.teardown_steps)),
        ] {
            if !steps.is_empty() {
                let mut steps = Y::Seq(steps);
                relativize(&mut steps, &target);
                let mut phase = Y::map();
                phase.set("steps", steps);
                plan.set(key, phase);
            }
        }
        let mut scenarios = Y::Seq(scenarios);
        relativize(&mut scenarios, &target);
        plan.set("scenarios", scenarios);
        let mut text = String::new();
        text.push_str(&format!(
            "# Imported from {} by `onrush import jmx`.\n",
            if self.opts.source_name.is_empty() {
                "a JMeter plan"
            } else {
                &self.opts.source_name
            }
        ));
        text.push_str(
            "# What converted, what is approximated and what is not: see the import report.\n",
        );
        text.push_str(&format!("# Note: {}.\n", super::CONNECTIONS));
        for h in &self.header {
            text.push_str(&format!("# {h}\n"));
        }
        text.push_str(&yaml::write(&plan));
        self.report.entries.sort_by_key(|e| order_key(&e.at));
        // Scripts read the plan's variables through `vars.get` as JMeter's do: their values
        // (those known when the plan is written) go into the module.
        let plan_vars: Vec<(String, String)> = self
            .vars
            .iter()
            .filter(|(_, v, _)| !v.contains("${"))
            .map(|(k, v, _)| (k.clone(), v.clone()))
            .collect();
        let script = self
            .js
            .source(&plan_vars)
            .map(|source| crate::ScriptModule {
                file: self.opts.script_file_name().to_string(),
                source,
            });
        Import {
            yaml: text,
            report: self.report,
            data_files: self.data_files,
            script,
        }
    }
}

impl Conv<'_> {
    /// What sets `var`, which nothing that converted sets: the first script left as a comment
    /// that names it in quotes (`vars.put("token", ...)`), or a guess.
    fn what_sets(&self, var: &str) -> String {
        let quoted = [format!("\"{var}\""), format!("'{var}'")];
        match self
            .scripts
            .iter()
            .find(|(_, text)| quoted.iter().any(|q| text.contains(q.as_str())))
        {
            Some((script, _)) => format!("set by {script}, a script that is not ported"),
            None => "set by nothing that converted (a script? a plugin?)".into(),
        }
    }

    /// A property without a default that names a file or directory: JMeter would use `1`,
    /// which names nothing, so the plan asks for the value (`onrush validate` says `-D`).
    fn mark_path_properties(&mut self) {
        let props: Vec<(String, String)> = self
            .tr
            .properties
            .iter()
            .filter(|(_, p)| !p.has_default && self.tr.path_properties.contains(&p.var))
            .map(|(name, p)| (name.clone(), p.var.clone()))
            .collect();
        for (prop, var) in props {
            let default = self.tr.properties[&prop].default.clone();
            let reason = format!(
                "JMeter property `{prop}` names a file or directory and the JMX gives no default"
            );
            if let Some(v) = self.vars.iter_mut().find(|v| v.0 == var && v.1 == default) {
                v.1 = unset_marker(&reason);
                v.2 = vec![format!("{reason}: pass -D {var}=...")];
            }
        }
    }
}

/// Sort key for `[FILE:]line:col`: the main file first, then in position order.
fn order_key(at: &str) -> (bool, String, u32, u32) {
    let mut parts = at.rsplitn(3, ':');
    let col = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    let line = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    let file = parts.next().unwrap_or("").to_string();
    (!file.is_empty(), file, line, col)
}

/// Request URLs on the target's origin become paths; the others stay absolute.
fn relativize(y: &mut Y, target: &str) {
    match y {
        Y::Str(s) => {
            if let Some(url) = s.strip_prefix(URL_MARK) {
                let rel = url.strip_prefix(target).filter(|r| r.starts_with('/'));
                *s = match rel {
                    Some(r) => r.to_string(),
                    None => url.to_string(),
                };
            }
        }
        Y::Map(m) => m.iter_mut().for_each(|e| relativize(&mut e.1, target)),
        Y::Seq(items) => items.iter_mut().for_each(|e| relativize(&mut e.0, target)),
        _ => {}
    }
}
