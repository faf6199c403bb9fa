//! A small YAML writer for the plans the importer produces: block style, every text value
//! double-quoted (JSON escapes are valid YAML), and comment lines attached to keys and items.

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Y {
    /// Text, always written quoted.
    Str(String),
    /// A number or boolean written as is.
    Raw(String),
    Map(Vec<(String, Y, Vec<String>)>),
    Seq(Vec<(Y, Vec<String>)>),
    /// In a sequence: only the item's comments are written (a note where nothing converted).
    Nothing,
}

impl Y {
    pub fn s(text: impl Into<String>) -> Y {
        Y::Str(text.into())
    }
    pub fn map() -> Y {
        Y::Map(Vec::new())
    }
    /// Adds `key: value` to a map (no-op on other values).
    pub fn set(&mut self, key: &str, value: Y) {
        self.set_c(key, value, Vec::new());
    }
    /// Adds `key: value` with comment lines before it.
    pub fn set_c(&mut self, key: &str, value: Y, comments: Vec<String>) {
        if let Y::Map(entries) = self {
            if let Some(e) = entries.iter_mut().find(|e| e.0 == key) {
                e.1 = value;
                e.2.extend(comments);
            } else {
                entries.push((key.to_string(), value, comments));
            }
        }
    }
    pub fn get(&self, key: &str) -> Option<&Y> {
        match self {
            Y::Map(entries) => entries.iter().find(|e| e.0 == key).map(|e| &e.1),
            _ => None,
        }
    }
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Y> {
        match self {
            Y::Map(entries) => entries.iter_mut().find(|e| e.0 == key).map(|e| &mut e.1),
            _ => None,
        }
    }
    pub fn is_empty(&self) -> bool {
        match self {
            Y::Map(m) => m.is_empty(),
            Y::Seq(s) => s.is_empty(),
            _ => false,
        }
    }
}

/// Writes `value` (a map) as a YAML document.
pub fn write(value: &Y) -> String {
    let mut out = String::new();
    block(value, 0, &mut out);
    out
}

fn scalar(value: &Y) -> Option<String> {
    match value {
        Y::Str(s) => Some(quote(s)),
        Y::Raw(s) => Some(s.clone()),
        Y::Map(m) if m.is_empty() => Some("{}".into()),
        Y::Seq(s) if s.is_empty() => Some("[]".into()),
        _ => None,
    }
}

/// A double-quoted YAML string.
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !k.starts_with(['-', '.'])
        && !matches!(
            k.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        k.to_string()
    } else {
        quote(k)
    }
}

fn comments(lines: &[String], indent: usize, out: &mut String) {
    for c in lines {
        for line in c.lines() {
            out.push_str(&" ".repeat(indent));
            out.push_str("# ");
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

fn block(value: &Y, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Y::Map(entries) => {
            for (k, v, c) in entries.iter().filter(|e| e.1 != Y::Nothing) {
                comments(c, indent, out);
                entry(&pad, k, v, indent, out);
            }
        }
        Y::Seq(items) => {
            for (v, c) in items {
                comments(c, indent, out);
                if *v != Y::Nothing {
                    item(v, indent, out);
                }
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&scalar(other).unwrap_or_default());
            out.push('\n');
        }
    }
}

fn entry(pad: &str, k: &str, v: &Y, indent: usize, out: &mut String) {
    out.push_str(pad);
    out.push_str(&key(k));
    match scalar(v) {
        Some(s) => {
            out.push_str(": ");
            out.push_str(&s);
            out.push('\n');
        }
        None => {
            out.push_str(":\n");
            block(v, indent + 2, out);
        }
    }
}

/// A sequence item: `- ` then the value; a map's first key goes on the dash's line.
fn item(v: &Y, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Y::Map(entries) if !entries.is_empty() => {
            let inner = " ".repeat(indent + 2);
            let entries = entries.iter().filter(|e| e.1 != Y::Nothing);
            for (i, (k, val, c)) in entries.enumerate() {
                if i == 0 {
                    // Comments of the first key go above the dash.
                    comments(c, indent, out);
                    out.push_str(&pad);
                    out.push_str("- ");
                    entry("", k, val, indent + 2, out);
                } else {
                    comments(c, indent + 2, out);
                    entry(&inner, k, val, indent + 2, out);
                }
            }
        }
        Y::Seq(items) if !items.is_empty() => {
            out.push_str(&pad);
            out.push_str("-\n");
            block(v, indent + 2, out);
        }
        other => {
            out.push_str(&pad);
            out.push_str("- ");
            out.push_str(&scalar(other).unwrap_or_default());
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_block_yaml_with_comments() {
        let mut step = Y::map();
        step.set_c("name", Y::s("home"), vec!["from: Home".into()]);
        step.set("get", Y::s("/"));
        let mut plan = Y::map();
        plan.set("target", Y::s("http://h:1"));
        plan.set("steps", Y::Seq(vec![(step, vec!["a step".into()])]));
        plan.set("on", Y::Raw("1".into()));
        assert_eq!(
            write(&plan),
            "target: \"http://h:1\"\nsteps:\n  # a step\n  # from: Home\n  - name: \"home\"\n    get: \"/\"\n\"on\": 1\n"
        );
    }
}
