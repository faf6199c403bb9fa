//! Extractors → `extract:`, assertions → `check:`, timers → `think:` steps (or `pacing`), and the
//! data elements: CSV Data Set → feeders, Counter and Random Variable → functions.

use super::{Conv, Scope};
use crate::jmx::{El, Props};
use crate::report::Status;
use crate::template::sanitize;
use crate::yaml::Y;

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
                    let expr = self.text(el, path, exprs.get(i).copied().unwrap_or("$"));
                    x.set("jsonpath", Y::s(rfc_jsonpath(&expr.text)));
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

    /// Converted when there are no notes, else approximated with them after `how`.
    pub(super) fn entry_notes(&mut self, el: &El, path: &str, how: &str, notes: Vec<String>) {
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
        let (matches, _contains, not, equals, substring, or) = (
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
        let jp = rfc_jsonpath(&self.text(el, path, el.s("JSON_PATH")).text);
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
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        // `${...}` templates stay as they are: onrush fills them in before matching.
        if rest.starts_with("${") {
            let end = rest.find('}').map(|e| e + 1).unwrap_or(rest.len());
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A JSONPath as JMeter's Jayway library accepts it, written as RFC 9535 (what onrush reads):
/// Jayway reads a path without the root `$` from the root (`id`, `.id`, `[0]`, `..x` are
/// `$.id`, `$.id`, `$[0]`, `$..x`) and takes `$.[0]` for `$[0]`.
pub(crate) fn rfc_jsonpath(expr: &str) -> String {
    let expr = expr.trim();
    let rooted = if expr.is_empty() {
        "$".to_string()
    } else if expr.starts_with('$') {
        expr.to_string()
    } else if expr.starts_with('.') || expr.starts_with('[') {
        format!("${expr}")
    } else {
        format!("$.{expr}")
    };
    match rooted.strip_prefix("$.[") {
        Some(rest) => format!("$[{rest}"),
        None => rooted,
    }
}

#[cfg(test)]
mod tests {
    use super::{regex_escape, rfc_jsonpath};

    #[test]
    fn regex_escape_keeps_templates() {
        assert_eq!(regex_escape("a.b ${user} (x)"), "a\\.b ${user} \\(x\\)");
    }

    #[test]
    fn jmeter_json_paths_become_rfc_9535() {
        for (jmeter, rfc) in [
            (".id", "$.id"),
            ("id", "$.id"),
            ("data.items[0].id", "$.data.items[0].id"),
            ("$..x", "$..x"),
            ("..x", "$..x"),
            ("[0].id", "$[0].id"),
            ("$.[0]", "$[0]"),
            ("$.a", "$.a"),
            ("", "$"),
        ] {
            assert_eq!(rfc_jsonpath(jmeter), rfc, "{jmeter}");
        }
    }
}
