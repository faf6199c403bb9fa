//! Appends a step to an existing plan's text, leaving every other line (comments included) as
//! it was: the step goes after the last item of the block-style `steps:` list of the first
//! scenario, or of the one named. A flow-style list (`steps: [...]`) is refused with the reason
//! rather than rewritten.

use crate::yaml::{self, Y};

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    let s = s.split(" #").next().unwrap_or(s).trim();
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
        .unwrap_or(s)
}

/// `text` with `step` appended to the scenario `scenario` (or the first one).
pub fn append(text: &str, step: &Y, scenario: Option<&str>) -> Result<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.starts_with("scenarios:"))
        .ok_or("the plan has no block-style `scenarios:` at the start of a line")?;
    if is_content(lines[top].trim_start_matches("scenarios:")) {
        return Err(
            "`scenarios:` is written in flow style on one line; --append needs block style".into(),
        );
    }
    // The scenario items: lines starting with `- ` at the list's indent.
    let end_of_list = (top + 1..lines.len())
        .find(|&i| is_content(lines[i]) && indent(lines[i]) == 0)
        .unwrap_or(lines.len());
    let item_indent = (top + 1..end_of_list)
        .find(|&i| is_content(lines[i]))
        .map(|i| indent(lines[i]))
        .ok_or("`scenarios:` is empty")?;
    let starts: Vec<usize> = (top + 1..end_of_list)
        .filter(|&i| indent(lines[i]) == item_indent && lines[i].trim_start().starts_with('-'))
        .collect();
    let mut names = Vec::new();
    let mut chosen = None;
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(end_of_list);
        let name = (start..end).find_map(|i| {
            let t = lines[i].trim_start().trim_start_matches('-').trim_start();
            let inner = if i == start {
                item_indent + 2
            } else {
                indent(lines[i])
            };
            (inner == item_indent + 2)
                .then(|| t.strip_prefix("name:"))
                .flatten()
                .map(unquote)
        });
        let name = name.unwrap_or("").to_string();
        if chosen.is_none() && scenario.is_none_or(|s| s == name) {
            chosen = Some((start, end));
        }
        names.push(name);
    }
    let Some((start, end)) = chosen else {
        return Err(format!(
            "no scenario named {:?}; the plan has: {}",
            scenario.unwrap_or(""),
            names.join(", ")
        ));
    };
    let key_indent = item_indent + 2;
    let steps_line = (start..end)
        .find(|&i| {
            let l = lines[i];
            let t = if i == start {
                l.trim_start().trim_start_matches('-').trim_start()
            } else {
                l.trim_start()
            };
            (i == start || indent(l) == key_indent) && t.starts_with("steps:")
        })
        .ok_or("the scenario has no block-style `steps:`")?;
    let after_key = lines[steps_line].split_once("steps:").map_or("", |s| s.1);
    if is_content(after_key) {
        return Err(format!(
            "line {}: `steps:` is written in flow style ({}); --append needs a block list (`- get: ...` lines)",
            steps_line + 1,
            after_key.trim()
        ));
    }
    let block_end = (steps_line + 1..end)
        .find(|&i| {
            is_content(lines[i])
                && indent(lines[i]) <= key_indent
                && !lines[i].trim_start().starts_with('-')
        })
        .unwrap_or(end);
    let last = (steps_line + 1..block_end)
        .rev()
        .find(|&i| is_content(lines[i]))
        .ok_or("the scenario's `steps:` is empty")?;
    let step_indent = (steps_line + 1..block_end)
        .find(|&i| is_content(lines[i]))
        .map(|i| indent(lines[i]))
        .unwrap_or(key_indent + 2);
    let rendered = yaml::write(&Y::Seq(vec![(
        step.clone(),
        vec!["appended by `onrush import curl`".into()],
    )]));
    let mut out: Vec<String> = lines[..=last].iter().map(|l| l.to_string()).collect();
    out.extend(
        rendered
            .lines()
            .map(|l| format!("{}{l}", " ".repeat(step_indent))),
    );
    out.extend(lines[last + 1..].iter().map(|l| l.to_string()));
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step() -> Y {
        let mut s = Y::map();
        s.set("get", Y::s("/new"));
        s
    }

    const PLAN: &str = "# my plan\ntarget: http://127.0.0.1:1\nscenarios:\n  - name: one\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - get: /a   # first\n      # a comment\n      - post: /b\n        body: x\n\n  # the second\n  - name: \"two\"\n    load: { vus: 1, iterations: 1 }\n    steps:\n    - get: /c\nthresholds: []\n";

    #[test]
    fn appends_to_the_first_or_named_scenario_keeping_comments() {
        let out = append(PLAN, &step(), None).unwrap();
        assert!(out.contains("        body: x\n      # appended by `onrush import curl`\n      - get: \"/new\"\n\n  # the second"), "{out}");
        assert!(
            out.starts_with("# my plan\n") && out.contains("/a   # first"),
            "{out}"
        );
        let out = append(PLAN, &step(), Some("two")).unwrap();
        assert!(out.contains("    - get: /c\n    # appended by `onrush import curl`\n    - get: \"/new\"\nthresholds"), "{out}");
        for text in [PLAN, &out] {
            onrush_plan::load_str_with_grammars(
                "p.yaml",
                text,
                std::path::Path::new("."),
                &[],
                &[],
                onrush_protocols::grammars(),
            )
            .unwrap();
        }
    }

    #[test]
    fn refuses_what_it_cannot_edit_in_place() {
        let e = append(PLAN, &step(), Some("three")).unwrap_err();
        assert!(e.contains("the plan has: one, two"), "{e}");
        let flow = "target: http://h\nscenarios:\n  - name: s\n    steps: [{ get: / }]\n";
        assert!(append(flow, &step(), None)
            .unwrap_err()
            .contains("line 4: `steps:` is written in flow style"));
    }
}
