//! JMeter's `${...}` expressions (variables and `${__function(args)}` calls) rewritten as onrush
//! templates: `${__P(threads,10)}` becomes the plan variable `${threads}` (overridable with
//! `-D threads=...`), `${__Random(1,9)}` becomes `${random_int(1, 9)}`, and so on. What has no
//! onrush equivalent is kept as literal text (`$${__groovy(...)}`) and reported.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A `${__P(name,default)}` / `${__property(name,,default)}` turned into a plan variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// The onrush variable (the property name with characters other than letters, digits and
    /// `_` replaced by `_`).
    pub var: String,
    /// The default of the first call that gave one.
    pub default: String,
    /// Whether a call gave a default (`${__P(dir)}` gives none: JMeter then uses `1`).
    pub has_default: bool,
}

/// Rewrites JMeter expressions; remembers the properties and variables it met.
#[derive(Debug, Default)]
pub struct Translator {
    /// Property name → its plan variable.
    pub properties: BTreeMap<String, Property>,
    /// JMeter variable → the onrush expression that replaces it (counters).
    pub replacements: HashMap<String, String>,
    /// Every variable referenced (onrush names).
    pub refs: BTreeSet<String>,
    /// Properties without a default that name a file or directory (`${__FileToString(...)}`'s
    /// path, see also `Conv::path_text`): the plan cannot guess them (JMeter's `1` names no
    /// file), so they are marked `${unset(...)}` and `onrush validate` asks for `-D`.
    pub path_properties: BTreeSet<String>,
    /// Files the plan reads with `${file(...)}`: the paths as written in the plan.
    pub files: Vec<String>,
    /// Where relative file paths are rebased when the plan is not written beside the JMX.
    pub rebase: Option<std::path::PathBuf>,
}

/// The result of one rewrite.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Translated {
    /// onrush template text.
    pub text: String,
    /// Variables it references (onrush names).
    pub vars: Vec<String>,
    /// It uses something that changes per request (`${vu}`, random values, counters, time).
    pub per_request: bool,
    /// Functions rewritten approximately: how.
    pub approximated: Vec<String>,
    /// Functions kept as literal text: why.
    pub unconverted: Vec<String>,
}

/// A JMeter variable name as an onrush one: letters, digits and `_`, not starting with a digit.
pub fn sanitize(name: &str) -> String {
    let mut s: String = name
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "v_");
    }
    s
}

impl Translator {
    /// Rewrites `text` (a JMeter string that may hold `${...}`).
    pub fn translate(&mut self, text: &str) -> Translated {
        let mut out = Translated::default();
        out.text = self.rewrite(text, &mut out, 0);
        out
    }

    fn rewrite(&mut self, text: &str, out: &mut Translated, depth: usize) -> String {
        let mut result = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("${") {
            result.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            match closing(after) {
                Some(end) if depth < 8 => {
                    let inner = &after[..end];
                    result.push_str(&self.expression(inner, out, depth));
                    rest = &after[end + 1..];
                }
                _ => {
                    // Not an expression (no closing brace): literal text.
                    result.push_str("$${");
                    rest = after;
                }
            }
        }
        result.push_str(rest);
        result
    }

    fn expression(&mut self, inner: &str, out: &mut Translated, depth: usize) -> String {
        let trimmed = inner.trim();
        if !trimmed.starts_with("__") {
            if let Some(rep) = self.replacements.get(trimmed) {
                out.per_request = true;
                return rep.clone();
            }
            let var = sanitize(trimmed);
            self.refs.insert(var.clone());
            out.vars.push(var.clone());
            return format!("${{{var}}}");
        }
        let (name, args) = match trimmed.find('(') {
            Some(p) if trimmed.ends_with(')') => (
                &trimmed[2..p],
                split_args(&trimmed[p + 1..trimmed.len() - 1]),
            ),
            _ => (&trimmed[2..], Vec::new()),
        };
        let raw: Vec<String> = args.iter().map(|a| a.trim().to_string()).collect();
        let arg = |i: usize| raw.get(i).cloned().unwrap_or_default();
        // Kept as text: a nested `${...}` is literal too, or the plan would read it as a call.
        let literal = || format!("$${{{}}}", inner.replace("${", "$${"));
        match name {
            "P" | "property" => {
                let prop = arg(0);
                if prop.is_empty() || prop.contains("${") {
                    out.unconverted.push(format!(
                        "`${{{inner}}}`: a property whose name is computed; kept as text"
                    ));
                    return literal();
                }
                let has_default = if name == "P" {
                    raw.len() > 1
                } else {
                    raw.len() > 2
                };
                let default = if name == "P" {
                    if raw.len() > 1 {
                        arg(1)
                    } else {
                        "1".into()
                    }
                } else if raw.len() > 2 {
                    arg(2)
                } else {
                    prop.clone()
                };
                if name == "property" && !arg(1).is_empty() {
                    out.approximated.push(format!(
                        "`${{{inner}}}`: not also stored in the variable `{}`",
                        arg(1)
                    ));
                }
                let default = self.rewrite(&default, out, depth + 1);
                let entry = self
                    .properties
                    .entry(prop.clone())
                    .or_insert_with(|| Property {
                        var: sanitize(&prop),
                        default: default.clone(),
                        has_default,
                    });
                if (entry.default.is_empty() || !entry.has_default) && has_default {
                    entry.default = default;
                    entry.has_default = true;
                }
                let var = entry.var.clone();
                self.refs.insert(var.clone());
                out.vars.push(var.clone());
                format!("${{{var}}}")
            }
            "Random" if raw.len() >= 2 => {
                self.stored(&raw, 2, inner, out);
                out.per_request = true;
                format!(
                    "${{random_int({}, {})}}",
                    self.fn_arg(&arg(0), out, depth),
                    self.fn_arg(&arg(1), out, depth)
                )
            }
            "RandomString" if !raw.is_empty() => {
                self.stored(&raw, 2, inner, out);
                out.per_request = true;
                let len = self.fn_arg(&arg(0), out, depth);
                if arg(1).is_empty() {
                    format!("${{random_string({len})}}")
                } else {
                    let chars = self.quoted(&args[1], out, depth);
                    format!("${{random_string({len}, {chars})}}")
                }
            }
            "UUID" => {
                out.per_request = true;
                "${uuid()}".into()
            }
            "threadNum" => {
                out.per_request = true;
                "${vu}".into()
            }
            "counter" => {
                self.stored(&raw, 1, inner, out);
                out.per_request = true;
                if arg(0).eq_ignore_ascii_case("true") {
                    "${counter()}".into()
                } else {
                    "${global_counter()}".into()
                }
            }
            "time" => {
                self.stored(&raw, 1, inner, out);
                out.per_request = true;
                match arg(0).as_str() {
                    "" => "${now_ms()}".into(),
                    "/1000" => "${now_s()}".into(),
                    format => match strftime(format) {
                        Some(f) => format!("${{now({})}}", quote_arg(&f)),
                        None => {
                            out.unconverted.push(format!(
                                "`${{{inner}}}`: the date format `{format}` has no strftime equivalent here; kept as text"
                            ));
                            literal()
                        }
                    },
                }
            }
            "FileToString" if !arg(0).is_empty() => {
                // JMeter reads the file at each call; the plan reads it once, at load: the same
                // text unless the file changes during the run.
                self.stored(&raw, 2, inner, out);
                if !arg(1).is_empty() && !arg(1).eq_ignore_ascii_case("UTF-8") {
                    out.approximated
                        .push(format!("`${{{inner}}}`: read as UTF-8, not {}", arg(1)));
                }
                let first_var = out.vars.len();
                let path = self.rewrite(&arg(0), out, depth + 1);
                let used: Vec<String> = out.vars[first_var..].to_vec();
                self.mark_path_properties(&used);
                let path = self.rebased(&path);
                if !self.files.contains(&path) {
                    self.files.push(path.clone());
                }
                format!("${{file({})}}", quote_arg(&path))
            }
            "V" if !arg(0).contains("${") && !arg(0).is_empty() => {
                let var = sanitize(&arg(0));
                self.refs.insert(var.clone());
                out.vars.push(var.clone());
                format!("${{{var}}}")
            }
            "urlencode" | "base64Encode" | "lowercase" | "uppercase" | "digest" | "md5"
                if !raw.is_empty() =>
            {
                let (func, value) = match name {
                    "urlencode" => ("urlencode", &args[0]),
                    "base64Encode" => ("base64", &args[0]),
                    "lowercase" => ("lower", &args[0]),
                    "uppercase" => ("upper", &args[0]),
                    "md5" => ("md5", &args[0]),
                    _ => match (arg(0).to_ascii_uppercase().as_str(), args.get(1)) {
                        ("MD5", Some(v)) => ("md5", v),
                        ("SHA-1" | "SHA1", Some(v)) => ("sha1", v),
                        ("SHA-256" | "SHA256", Some(v)) => ("sha256", v),
                        _ => {
                            out.unconverted.push(format!(
                                "`${{{inner}}}`: only MD5, SHA-1 and SHA-256 digests without salt convert; kept as text"
                            ));
                            return literal();
                        }
                    },
                };
                let value = self.quoted(value, out, depth);
                format!("${{{func}({value})}}")
            }
            "env" if !arg(0).is_empty() => {
                let default = if raw.len() > 1 {
                    format!(", {}", self.quoted(&args[1], out, depth))
                } else {
                    String::new()
                };
                format!("${{env({}{default})}}", quote_arg(&arg(0)))
            }
            _ => {
                let what = match name {
                    "groovy" | "javaScript" | "jexl2" | "jexl3" | "BeanShell" => {
                        "a script: port it by hand"
                    }
                    "StringFromFile" | "CSVRead" => {
                        "reads a file at run time: use a feeder (`feeders:`) or `body_file:`"
                    }
                    "setProperty" | "evalVar" | "eval" => {
                        "sets or evaluates at run time: no equivalent"
                    }
                    _ => "no onrush equivalent",
                };
                out.unconverted
                    .push(format!("`${{{inner}}}`: {what}; kept as literal text"));
                literal()
            }
        }
    }

    /// Marks the properties among `vars` (onrush names) that have no default as naming a path.
    pub fn mark_path_properties(&mut self, vars: &[String]) {
        for p in self.properties.values() {
            if !p.has_default && vars.contains(&p.var) {
                self.path_properties.insert(p.var.clone());
            }
        }
    }

    /// A relative file path of the JMX as the plan names it (see [`Translator::rebase`]).
    pub fn rebased(&self, path: &str) -> String {
        match &self.rebase {
            Some(dir) if std::path::Path::new(path).is_relative() && !path.starts_with("${") => {
                dir.join(path).display().to_string()
            }
            _ => path.to_string(),
        }
    }

    /// JMeter functions that can also store their result in a variable (the last argument).
    fn stored(&self, raw: &[String], index: usize, inner: &str, out: &mut Translated) {
        if raw.get(index).is_some_and(|v| !v.is_empty()) {
            out.approximated.push(format!(
                "`${{{inner}}}`: the value is not also stored in the variable `{}`",
                raw[index]
            ));
        }
    }

    /// A numeric argument: a number as is, else a quoted template.
    fn fn_arg(&mut self, raw: &str, out: &mut Translated, depth: usize) -> String {
        if raw.parse::<i64>().is_ok() {
            raw.to_string()
        } else {
            self.quoted(raw, out, depth)
        }
    }

    /// A string argument: a quoted onrush template.
    fn quoted(&mut self, raw: &str, out: &mut Translated, depth: usize) -> String {
        let text = self.rewrite(raw, out, depth + 1);
        quote_arg(&text)
    }
}

/// The plan's marker for a variable it cannot give a value: `${unset("why")}` (onrush-plan
/// warns before a run that uses it, and asks for `-D` where the value is read at load).
pub fn unset_marker(reason: &str) -> String {
    format!("${{unset({})}}", quote_arg(&reason.replace("${", "$${")))
}

fn quote_arg(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The index of the `}` that closes an expression starting right after `${`.
fn closing(text: &str) -> Option<usize> {
    let mut depth = 1usize;
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits function arguments on commas that are not escaped (`\,`) nor inside a nested `${}`.
fn split_args(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some(',')) => {
                current.push(',');
                chars.next();
            }
            '{' => {
                depth += 1;
                current.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' if depth == 0 => args.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    args.push(current);
    args
}

/// A Java `SimpleDateFormat` pattern as strftime, for the common letters only.
fn strftime(java: &str) -> Option<String> {
    let mut out = String::new();
    let chars: Vec<char> = java.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let mut n = 1;
        while i + n < chars.len() && chars[i + n] == c {
            n += 1;
        }
        if c == '\'' {
            // Quoted literal text.
            let end = chars[i + 1..].iter().position(|&q| q == '\'')?;
            out.extend(&chars[i + 1..i + 1 + end]);
            i += end + 2;
            continue;
        }
        let piece = match (c, n) {
            ('y', 2) => "%y",
            ('y', _) => "%Y",
            ('M', 1 | 2) => "%m",
            ('M', 3) => "%b",
            ('M', _) => "%B",
            ('d', _) => "%d",
            ('H', _) => "%H",
            ('h', _) => "%I",
            ('m', _) => "%M",
            ('s', _) => "%S",
            ('S', 3) => "%3f",
            ('a', _) => "%p",
            ('E', 1..=3) => "%a",
            ('E', _) => "%A",
            ('D', _) => "%j",
            ('Z', _) => "%z",
            (c, _) if c.is_ascii_alphabetic() => return None,
            ('%', _) => "%%",
            _ => {
                out.extend(std::iter::repeat_n(c, n));
                i += n;
                continue;
            }
        };
        out.push_str(piece);
        i += n;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> (String, Translator) {
        let mut tr = Translator::default();
        let out = tr.translate(text);
        (out.text, tr)
    }

    #[test]
    fn properties_become_plan_variables() {
        let (text, tr) = t("${__P(threads,10)}-${__property(jmeter.host,,localhost)}-${__P(x)}");
        assert_eq!(text, "${threads}-${jmeter_host}-${x}");
        assert_eq!(tr.properties["threads"].default, "10");
        assert_eq!(tr.properties["jmeter.host"].var, "jmeter_host");
        assert_eq!(tr.properties["jmeter.host"].default, "localhost");
        assert_eq!(tr.properties["x"].default, "1");
    }

    #[test]
    fn functions_with_an_equivalent() {
        assert_eq!(t("${__Random(1,9)}").0, "${random_int(1, 9)}");
        assert_eq!(
            t("${__RandomString(5,abc)}").0,
            "${random_string(5, \"abc\")}"
        );
        assert_eq!(t("${__UUID()}").0, "${uuid()}");
        assert_eq!(t("${__UUID}").0, "${uuid()}");
        assert_eq!(t("${__threadNum}").0, "${vu}");
        assert_eq!(t("${__counter(TRUE,c)}").0, "${counter()}");
        assert_eq!(t("${__counter(FALSE)}").0, "${global_counter()}");
        assert_eq!(t("${__time()}").0, "${now_ms()}");
        assert_eq!(t("${__time(/1000)}").0, "${now_s()}");
        assert_eq!(
            t("${__time(yyyy-MM-dd'T'HH:mm:ss)}").0,
            "${now(\"%Y-%m-%dT%H:%M:%S\")}"
        );
        assert_eq!(t("${__V(user)}").0, "${user}");
        assert_eq!(t("${__urlencode(a b)}").0, "${urlencode(\"a b\")}");
        assert_eq!(t("${__base64Encode(${u}:p)}").0, "${base64(\"${u}:p\")}");
        assert_eq!(t("${__digest(SHA-256,x)}").0, "${sha256(\"x\")}");
        assert_eq!(t("${__Random(1,${max})}").0, "${random_int(1, \"${max}\")}");
    }

    #[test]
    fn variables_are_sanitized_and_unknown_functions_kept_as_text() {
        let (text, tr) = t("/a/${my.var}/${__groovy(vars.get('x'))}/${open");
        assert_eq!(text, "/a/${my_var}/$${__groovy(vars.get('x'))}/$${open");
        assert!(tr.refs.contains("my_var"));
        let mut tr = Translator::default();
        let out = tr.translate("${__machineName()}");
        assert_eq!(out.unconverted.len(), 1);
        assert_eq!(out.text, "$${__machineName()}");
    }

    #[test]
    fn escaped_commas_and_nested_calls() {
        assert_eq!(split_args(r"a\,b,${x,y},c"), vec!["a,b", "${x,y}", "c"]);
        assert_eq!(
            t("${__urlencode(${__P(q,a b)})}").0,
            "${urlencode(\"${q}\")}"
        );
    }
}
