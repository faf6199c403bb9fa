//! Extractors → `extract:`, assertions → `check:`, timers → `think:` steps (or `pacing`), and the
//! data elements: CSV Data Set → feeders, Counter and Random Variable → functions.

use super::{Conv, Scope};
use crate::jmx::{El, Props};
use crate::report::Status;
use crate::template::sanitize;
use crate::yaml::Y;
use crate::DataFile;

impl Conv<'_> {
    /// Extractors and assertions; `false` when `el` is neither.
    pub fn post(&mut self, el: &El, path: &str, scope: &mut Scope) -> bool {
        match el.class.as_str() {
            "RegexExtractor" => self.regex(el, path, scope),
            "BoundaryExtractor" => {
                let name = self.runtime_name(el.s("BoundaryExtractor.refname"));
                let mut x = Y::map();
                let l = self
                    .text(el, path, el.s("BoundaryExtractor.lboundary"))
                    .text;
                let r = self
                    .text(el, path, el.s("BoundaryExtractor.rboundary"))
                    .text;
                x.set(
                    "boundary",
                    Y::Seq(vec![(Y::s(l), vec![]), (Y::s(r), vec![])]),
                );
                let note = occurrence(&mut x, el.s("BoundaryExtractor.match_number"));
                x.set(
                    "default",
                    Y::s(self.text(el, path, el.s("BoundaryExtractor.default")).text),
                );
                let field = el.s("BoundaryExtractor.useHeaders");
                self.extractor(el, path, scope, name, x, field, note);
            }
            "JSONPostProcessor" => {
                let names: Vec<&str> = el
                    .s("JSONPostProcessor.referenceNames")
                    .split(';')
                    .collect();
                let exprs: Vec<&str> = el.s("JSONPostProcessor.jsonPathExprs").split(';').collect();
                let matches: Vec<&str> =
                    el.s("JSONPostProcessor.match_numbers").split(';').collect();
                let defaults: Vec<&str> =
                    el.s("JSONPostProcessor.defaultValues").split(';').collect();
                let mut notes = Vec::new();
                for (i, n) in names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| !n.trim().is_empty())
                {
                    let name = self.runtime_name(n);
                    let mut x = Y::map();
                    x.set(
                        "jsonpath",
                        Y::s(
                            self.text(el, path, exprs.get(i).copied().unwrap_or("$"))
                                .text,
                        ),
                    );
                    if let Some(n) = occurrence(&mut x, matches.get(i).copied().unwrap_or("1")) {
                        notes.push(n);
                    }
                    x.set(
                        "default",
                        Y::s(
                            self.text(el, path, defaults.get(i).copied().unwrap_or(""))
                                .text,
                        ),
                    );
                    scope.extract.push((name, x));
                }
                if el.b("JSONPostProcessor.compute_concat", false) {
                    notes.push("the `_ALL` concatenation is not made".into());
                }
                self.entry_notes(el, path, "→ `extract: { NAME: { jsonpath: ... } }`", notes);
            }
            "HtmlExtractor" => {
                let name = self.runtime_name(el.s("HtmlExtractor.refname"));
                let mut x = Y::map();
                x.set(
                    "css",
                    Y::s(self.text(el, path, el.s("HtmlExtractor.expr")).text),
                );
                let attr = el.s("HtmlExtractor.attribute").trim();
                if !attr.is_empty() {
                    x.set("attribute", Y::s(attr));
                }
                let note = occurrence(&mut x, el.s("HtmlExtractor.match_number"));
                x.set(
                    "default",
                    Y::s(self.text(el, path, el.s("HtmlExtractor.default")).text),
                );
                self.extractor(el, path, scope, name, x, "", note);
            }
            "XPathExtractor" | "XPath2Extractor" => {
                let p = if el.class == "XPathExtractor" {
                    "XPathExtractor"
                } else {
                    "XPathExtractor2"
                };
                let name = self.runtime_name(el.s(&format!("{p}.refname")));
                let mut x = Y::map();
                x.set(
                    "xpath",
                    Y::s(self.text(el, path, el.s(&format!("{p}.xpathQuery"))).text),
                );
                let note = occurrence(&mut x, el.s(&format!("{p}.matchNumber")));
                x.set(
                    "default",
                    Y::s(self.text(el, path, el.s(&format!("{p}.default"))).text),
                );
                self.extractor(el, path, scope, name, x, "", note);
            }
            "ResponseAssertion" => self.response_assertion(el, path, scope),
            "DurationAssertion" => {
                let ms = el.s("DurationAssertion.duration").trim();
                if ms.parse::<u64>().is_ok() {
                    let mut c = Y::map();
                    c.set(
                        "duration_below",
                        Y::s(format!("{}ms", ms.parse::<u64>().unwrap_or(0) + 1)),
                    );
                    scope.checks.push(c);
                    self.entry(el, path, Status::Converted, "→ `check: duration_below` (JMeter fails above the duration, so the limit is one more millisecond)");
                } else {
                    self.entry(
                        el,
                        path,
                        Status::NotConverted,
                        format!("duration `{ms}` is not a number of milliseconds"),
                    );
                }
            }
            "SizeAssertion" => self.size_assertion(el, path, scope),
            "JSONPathAssertion" => self.json_assertion(el, path, scope),
            "MD5HexAssertion" => {
                let hex = el.s("MD5HexAssertion.size").trim().to_ascii_lowercase();
                let mut c = Y::map();
                c.set("body_md5", Y::s(hex));
                scope.checks.push(c);
                self.entry(el, path, Status::Converted, "→ `check: body_md5`");
            }
            _ => return false,
        }
        true
    }

    /// A runtime variable's onrush name (remembered as set at run time).
    pub fn runtime_name(&mut self, jmeter: &str) -> String {
        let name = sanitize(jmeter);
        self.runtime.insert(name.clone());
        name
    }

    fn entry_notes(&mut self, el: &El, path: &str, how: &str, notes: Vec<String>) {
        if notes.is_empty() {
            self.entry(el, path, Status::Converted, how);
        } else {
            self.entry(
                el,
                path,
                Status::Approximated,
                format!("{how}; {}", notes.join("; ")),
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn extractor(
        &mut self,
        el: &El,
        path: &str,
        scope: &mut Scope,
        name: String,
        x: Y,
        field: &str,
        note: Option<String>,
    ) {
        match field {
            "" | "false" | "unescaped" | "as_document" => {
                scope.extract.push((name, x));
                let mut notes: Vec<String> = note.into_iter().collect();
                notes.push("a `default:` is always written: JMeter never fails a sample when nothing matches".into());
                let first = notes.remove(0);
                let rest = if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) };
                let status = if first.starts_with("a `default") { Status::Converted } else { Status::Approximated };
                self.entry(el, path, status, format!("→ `extract:`; {first}{rest}"));
            }
            other => self.entry(el, path, Status::NotConverted, format!("extracting from `{other}` (not the body) is not available for this extractor in onrush: use `{{ header: NAME }}`, `{{ status: true }}` or `{{ url: true }}` by hand")),
        }
    }

    fn regex(&mut self, el: &El, path: &str, scope: &mut Scope) {
        let name = self.runtime_name(el.s("RegexExtractor.refname"));
        let mut x = Y::map();
        x.set(
            "regex",
            Y::s(self.text(el, path, el.s("RegexExtractor.regex")).text),
        );
        let template = el.s("RegexExtractor.template").trim();
        let mut notes = Vec::new();
        let group = template
            .strip_prefix('$')
            .and_then(|t| t.strip_suffix('$'))
            .and_then(|g| g.parse::<u32>().ok());
        match group {
            Some(g) => x.set("group", Y::Raw(g.to_string())),
            None => {
                x.set("group", Y::Raw("1".into()));
                notes.push(format!(
                    "the template `{template}` is not a single group: group 1 is taken"
                ));
            }
        }
        if let Some(n) = occurrence(&mut x, el.s("RegexExtractor.match_number")) {
            notes.push(n);
        }
        x.set(
            "default",
            Y::s(self.text(el, path, el.s("RegexExtractor.default")).text),
        );
        let field = match el.s("RegexExtractor.useHeaders") {
            "true" => "headers",
            "false" | "" => "",
            "unescaped" | "as_document" => "",
            other => other,
        };
        self.extractor(
            el,
            path,
            scope,
            name,
            x,
            field,
            if notes.is_empty() {
                None
            } else {
                Some(notes.join("; "))
            },
        );
    }

    fn response_assertion(&mut self, el: &El, path: &str, scope: &mut Scope) {
        let field = el.s("Assertion.test_field");
        let ty: u32 = el.s("Assertion.test_type").trim().parse().unwrap_or(2);
        let strings: Vec<String> = el
            .prop("Asserion.test_strings")
            .or_else(|| el.prop("Assertion.test_strings"))
            .map(|p| p.children.iter().map(|c| c.value.clone()).collect())
            .unwrap_or_default();
        let (matches, contains, not, equals, substring, or) = (
            ty & 1 != 0,
            ty & 2 != 0,
            ty & 4 != 0,
            ty & 8 != 0,
            ty & 16 != 0,
            ty & 32 != 0,
        );
        if not {
            self.entry(el, path, Status::NotConverted, "a NOT assertion: onrush checks have no negation for bodies and statuses; write the positive check by hand");
            return;
        }
        let texts: Vec<String> = strings
            .iter()
            .map(|s| self.text(el, path, s).text)
            .collect();
        match field {
            "Assertion.response_code" => {
                let codes: Vec<u16> = strings.iter().filter_map(|s| s.trim().parse().ok()).collect();
                if codes.len() != strings.len() || codes.is_empty() {
                    self.entry(el, path, Status::NotConverted, "response-code patterns that are not plain status codes: write `check: - status: [...]` by hand");
                    return;
                }
                let list = Y::Seq(codes.iter().map(|c| (Y::Raw(c.to_string()), vec![])).collect());
                if or || codes.len() == 1 {
                    let mut c = Y::map();
                    c.set("status", list);
                    scope.checks.push(c);
                } else {
                    // Every pattern must match one code: only possible when they are all equal.
                    let mut c = Y::map();
                    c.set("status", Y::Raw(codes[0].to_string()));
                    scope.checks.push(c);
                }
                self.entry(el, path, Status::Converted, "→ `check: - status: [...]`");
            }
            "Assertion.response_data" | "Assertion.response_data_as_document" | "" => {
                if or && texts.len() > 1 {
                    let alts: Vec<String> = texts.iter().map(|t| if substring || equals { regex_escape(t) } else { t.clone() }).collect();
                    let mut c = Y::map();
                    c.set("body_matches", Y::s(format!("({})", alts.join("|"))));
                    scope.checks.push(c);
                } else {
                    for t in &texts {
                        let mut c = Y::map();
                        if substring {
                            c.set("body_contains", Y::s(t.clone()));
                        } else if equals {
                            c.set("body_matches", Y::s(format!("^{}$", regex_escape(t))));
                        } else if matches {
                            c.set("body_matches", Y::s(format!("^(?:{t})$")));
                        } else {
                            c.set("body_matches", Y::s(t.clone()));
                        }
                        scope.checks.push(c);
                    }
                }
                let _ = contains;
                let note = if field == "Assertion.response_data_as_document" { "document text (Tika) is not extracted: the body is checked as it is; " } else { "" };
                let status = if note.is_empty() { Status::Converted } else { Status::Approximated };
                self.entry(el, path, status, format!("{note}→ `check: body_contains / body_matches` (the first `http.body_limit` bytes)"));
            }
            other => self.entry(el, path, Status::NotConverted, format!("checking `{other}` is not available in onrush (it checks bodies, statuses, headers by name, JSON and sizes): write the check by hand")),
        }
    }

    fn size_assertion(&mut self, el: &El, path: &str, scope: &mut Scope) {
        let size: Option<u64> = el.s("SizeAssertion.size").trim().parse().ok();
        let field = el.s("SizeAssertion.test_field");
        let op = el.s("SizeAssertion.operator").trim();
        let Some(size) = size.filter(|_| {
            field.is_empty()
                || field == "SizeAssertion.response_data"
                || field == "SizeAssertion.response_network_size"
        }) else {
            self.entry(
                el,
                path,
                Status::NotConverted,
                "only the body size can be checked (`check: body_size`), with a number",
            );
            return;
        };
        let value = match op {
            "1" | "" => Some(Y::Raw(size.to_string())),
            "3" => Some(range("min", size + 1)),
            "4" => Some(range("max", size.saturating_sub(1))),
            "5" => Some(range("min", size)),
            "6" => Some(range("max", size)),
            _ => None,
        };
        match value {
            Some(v) => {
                let mut c = Y::map();
                c.set("body_size", v);
                scope.checks.push(c);
                self.entry(el, path, Status::Converted, "→ `check: body_size`");
            }
            None => self.entry(
                el,
                path,
                Status::NotConverted,
                "a `not equal` size assertion has no onrush check",
            ),
        }
    }

    fn json_assertion(&mut self, el: &El, path: &str, scope: &mut Scope) {
        let jp = self.text(el, path, el.s("JSON_PATH")).text;
        let mut c = Y::map();
        c.set("jsonpath", Y::s(jp));
        let invert = el.b("INVERT", false);
        let validate = el.b("JSONVALIDATION", false);
        if el.b("EXPECT_NULL", false) {
            self.entry(el, path, Status::NotConverted, "expecting null is not available: check `{ jsonpath: ..., equals: \"null\" }` by hand");
            return;
        }
        if validate {
            if invert {
                self.entry(
                    el,
                    path,
                    Status::NotConverted,
                    "an inverted value check has no onrush equivalent",
                );
                return;
            }
            let v = self.text(el, path, el.s("EXPECTED_VALUE")).text;
            c.set(
                if el.b("ISREGEX", true) {
                    "matches"
                } else {
                    "equals"
                },
                Y::s(v),
            );
        } else {
            c.set("exists", Y::Raw((!invert).to_string()));
        }
        scope.checks.push(c);
        self.entry(el, path, Status::Converted, "→ `check: { jsonpath: ... }`");
    }

    /// Timers → think steps before each sampler in scope; `false` when `el` is not a timer.
    pub fn timer(&mut self, el: &El, path: &str, scope: &mut Scope) -> bool {
        let ms = |s: &str| s.trim().parse::<f64>().ok().filter(|v| *v >= 0.0);
        let delay = match el.s("ConstantTimer.delay").trim() {
            "" => "0",
            d => d,
        };
        let think = match el.class.as_str() {
            "ConstantTimer" => match ms(delay) {
                Some(d) => Ok((format!("{}ms", d as u64), None)),
                None => match self.plan_text(el, path, delay) {
                    Ok(t) => Ok((format!("{t}ms"), None)),
                    Err(e) => Err(e),
                },
            },
            "UniformRandomTimer" => match (ms(delay), ms(el.s("RandomTimer.range"))) {
                (Some(d), Some(r)) => Ok((format!("{}ms..{}ms", d as u64, (d + r) as u64), None)),
                _ => Err(format!("delay `{delay}` or range `{}` is not a number", el.s("RandomTimer.range"))),
            },
            "GaussianRandomTimer" => match (ms(delay), ms(el.s("RandomTimer.range"))) {
                (Some(d), Some(r)) => Ok((
                    format!("{}ms..{}ms", (d - r).max(0.0) as u64, (d + r) as u64),
                    Some(format!("a Gaussian pause (mean {d} ms, deviation {r} ms) → uniform between mean ± deviation")),
                )),
                _ => Err("delay or deviation is not a number".into()),
            },
            "PoissonRandomTimer" => match (ms(delay), ms(el.s("RandomTimer.range"))) {
                (Some(d), Some(l)) => Ok((
                    format!("{}ms..{}ms", d as u64, (d + 2.0 * l) as u64),
                    Some(format!("a Poisson pause (offset {d} ms, lambda {l} ms) → uniform with the same mean")),
                )),
                _ => Err("delay or lambda is not a number".into()),
            },
            "ConstantThroughputTimer" => {
                let t = el.prop("throughput").map(|p| if p.value.is_empty() { p.s("value").to_string() } else { p.value.clone() }).unwrap_or_default();
                let mode = el.s("calcMode").trim();
                match t.trim().parse::<f64>() {
                    Ok(per_min) if per_min > 0.0 => {
                        let per_thread = mode == "0" || mode.is_empty();
                        let how = if per_thread { "per thread" } else { "shared by all threads" };
                        self.scen.throughput = Some((per_min, per_thread, how.to_string()));
                        self.entry(el, path, Status::Approximated, format!("{per_min} samples/min {how} → scenario `pacing` (one iteration every requests × 60 / {per_min} s)"));
                    }
                    _ => self.entry(el, path, Status::NotConverted, format!("throughput `{t}` is not a number: set `pacing:` by hand")),
                }
                return true;
            }
            c if c.ends_with("Timer") && !c.starts_with("JSR223") && !c.starts_with("BeanShell") && !c.starts_with("BSF") && c != "SyncTimer" => {
                Err("a timer onrush does not know: add a `think:` step by hand".into())
            }
            _ => return false,
        };
        match think {
            Ok((t, note)) => {
                let mut step = Y::map();
                step.set("think", Y::s(t));
                scope.timers.push(step);
                match note {
                    Some(n) => self.entry(el, path, Status::Approximated, n),
                    None => self.entry(
                        el,
                        path,
                        Status::Converted,
                        "→ a `think:` step before each request in scope",
                    ),
                }
            }
            Err(e) => self.entry(el, path, Status::NotConverted, e),
        }
        true
    }

    /// CSV Data Set Config → a feeder of the scenario.
    pub fn csv(&mut self, el: &El, path: &str) {
        let file = el.s("filename").trim().to_string();
        let file = match self.static_text(el, path, &file) {
            Ok(f) if !f.is_empty() => self.data_path(&f),
            Ok(_) => {
                self.entry(el, path, Status::NotConverted, "no file name");
                return;
            }
            Err(e) => {
                self.entry(
                    el,
                    path,
                    Status::NotConverted,
                    format!("the file name {e}: write the feeder by hand"),
                );
                return;
            }
        };
        let mut notes = Vec::new();
        let delimiter = match el.s("delimiter") {
            "" | "," => None,
            "\\t" => Some("\t".to_string()),
            d => Some(d.to_string()),
        };
        let names_raw = el.s("variableNames").trim().to_string();
        let ignore_first = el.b("ignoreFirstLine", false);
        let sep = delimiter.clone().unwrap_or_else(|| ",".into());
        let mut columns: Vec<String> = names_raw
            .split(sep.as_str())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if columns.is_empty() {
            // JMeter reads the names from the file's first line; so does onrush.
            if let Ok(text) = std::fs::read_to_string(self.opts.base_dir.join(&file)) {
                columns = text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .split(sep.as_str())
                    .map(|s| s.trim().to_string())
                    .collect();
            } else {
                notes.push("the file is not beside the JMX, so its columns (from its first line) are unknown here".into());
            }
        } else if !ignore_first {
            notes.push(format!("onrush reads column names from the file's first line, JMeter's `variableNames` has them apart: add the line `{}` at the top of the file", columns.join(&sep)));
        }
        let columns: Vec<String> = columns.iter().map(|c| self.runtime_name(c)).collect();
        let recycle = el.b("recycle", true);
        let stop = el.b("stopThread", false);
        let share = el.s("shareMode");
        let mut f = Y::map();
        f.set("file", Y::s(file.clone()));
        if let Some(d) = delimiter {
            f.set("delimiter", Y::s(d));
        }
        if recycle {
            f.set("mode", Y::s("circular"));
        } else {
            f.set("mode", Y::s("unique"));
            f.set("on_exhausted", Y::s("stop"));
            if !stop {
                notes.push("JMeter gives `<EOF>` values after the last row; onrush stops the VU (`on_exhausted: stop`)".into());
            }
        }
        match share {
            "shareMode.thread" => notes.push("each JMeter thread reads the whole file from its start; onrush's VUs share one position (`circular`)".into()),
            "shareMode.group" | "shareMode.all" | "" => {}
            _ => notes.push(format!("sharing mode `{share}`: rows are shared by the whole scenario")),
        }
        notes.push("a row is taken at the start of each iteration (JMeter: each time the element's scope runs)".into());
        let from = format!("JMeter CSV Data Set `{}`", el.name);
        self.scen.feeders.push((f, vec![from]));
        self.data_files.push(DataFile {
            default_path: file.clone(),
            path: file,
            columns,
        });
        let note = notes.join("; ");
        let status = if notes.len() > 1 {
            Status::Approximated
        } else {
            Status::Converted
        };
        self.entry(el, path, status, format!("→ a feeder (`feeders:`); {note}"));
    }

    /// Counter → `counter(NAME)` / `global_counter(NAME)`, or `${iteration}`.
    pub fn counter(&mut self, el: &El, path: &str) {
        let name = el.s("CounterConfig.name").trim().to_string();
        if name.is_empty() {
            self.entry(el, path, Status::NotConverted, "no reference name");
            return;
        }
        let start = el.s("CounterConfig.start").trim();
        let incr = el.s("CounterConfig.incr").trim();
        let per_user = el.b("CounterConfig.per_user", false);
        let (rep, status, note) = if per_user && start == "0" && (incr == "1" || incr.is_empty()) {
            (
                "${iteration}".to_string(),
                Status::Converted,
                "→ `${iteration}` (0, 1, 2, … per VU)".to_string(),
            )
        } else {
            let f = if per_user {
                "counter"
            } else {
                "global_counter"
            };
            let mut n = format!("→ `${{{f}(\"{name}\")}}`: 1, 2, 3, … and a new value at each use (JMeter: once per iteration)");
            if !(start == "1" || start.is_empty()) || !(incr == "1" || incr.is_empty()) {
                n.push_str(&format!(
                    "; JMeter starts at {start} by {incr}, onrush at 1 by 1"
                ));
            }
            if !el.s("CounterConfig.format").is_empty() || !el.s("CounterConfig.end").is_empty() {
                n.push_str("; its format and maximum are not converted");
            }
            (format!("${{{f}(\"{name}\")}}"), Status::Approximated, n)
        };
        self.tr.replacements.insert(name, rep);
        self.entry(el, path, status, note);
    }

    /// Random Variable → `random_int(min, max)` at each use.
    pub fn random_variable(&mut self, el: &El, path: &str) {
        let name = el.s("variableName").trim().to_string();
        let (min, max) = (el.s("minimumValue").trim(), el.s("maximumValue").trim());
        if name.is_empty() || min.parse::<i64>().is_err() || max.parse::<i64>().is_err() {
            self.entry(
                el,
                path,
                Status::NotConverted,
                "needs a name and numeric bounds",
            );
            return;
        }
        self.tr
            .replacements
            .insert(name, format!("${{random_int({min}, {max})}}"));
        let mut note =
            "→ `${random_int(min, max)}`, a new value at each use (JMeter: once per iteration)"
                .to_string();
        if !el.s("outputFormat").is_empty() {
            note.push_str("; its output format is not converted");
        }
        self.entry(el, path, Status::Approximated, note);
    }
}

fn range(key: &str, v: u64) -> Y {
    let mut m = Y::map();
    m.set(key, Y::Raw(v.to_string()));
    m
}

/// JMeter's match number (0 random, -1 all, n) → `occurrence`; a note when approximated.
fn occurrence(x: &mut Y, raw: &str) -> Option<String> {
    match raw.trim() {
        "" | "1" => None,
        "0" => {
            x.set("occurrence", Y::s("random"));
            None
        }
        "-1" => {
            x.set("occurrence", Y::s("all"));
            Some("all matches → a list variable (JMeter sets NAME_1 … NAME_n and NAME_matchNr; use `loop: { foreach: NAME }`)".into())
        }
        n => match n.parse::<u32>() {
            Ok(n) => {
                x.set("occurrence", Y::Raw(n.to_string()));
                None
            }
            Err(_) => Some(format!(
                "match number `{n}` is not a number: the first match is taken"
            )),
        },
    }
}

pub(crate) fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
