//! A scenario's runtime variables (slots), collected before its steps compile so that templates
//! can refer to a variable set later in the file; and `feeders:`, whose columns are variables.

use std::sync::Arc;

use super::Ctx;
use crate::error::PlanError;
use crate::template::{is_name, BUILTINS};
use crate::yaml::{Kind, Node};
use crate::{FeederUse, Shared};

const FEEDER_KEYS: [&str; 5] = ["file", "format", "mode", "on_exhausted", "delimiter"];

impl Ctx<'_> {
    /// `feeders:` (a list, or one mapping): each file loaded once, shared by all VUs.
    pub(super) fn feeders(
        &self,
        node: &Node,
        path: &str,
    ) -> Result<Vec<(FeederUse, Vec<String>)>, PlanError> {
        let items = self.maps_or_one(
            node,
            path,
            "feeders",
            "e.g. `feeders: [{ file: users.csv, mode: unique }]`",
        )?;
        let mut out = Vec::new();
        for (item, field) in items {
            let f = self.map(item, &field, &FEEDER_KEYS)?;
            let file_node =
                self.required(&f, "file", "a CSV or JSON file, e.g. `file: users.csv`")?;
            let file = self.string(file_node, &f.child("file"))?;
            let path_buf = self.plan_file(file_node, &f.child("file"), "test data")?;
            let is_json = match f.get("format") {
                Some(n) => {
                    let t = self.string(n, &f.child("format"))?;
                    match t.trim() {
                        "csv" => false,
                        "json" => true,
                        other => {
                            return Err(self.err(
                                n,
                                &f.child("format"),
                                format!("unknown format {other:?}; expected `csv` or `json`"),
                            ))
                        }
                    }
                }
                None => path_buf
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("json")),
            };
            let format = if is_json {
                if let Some(k) = f.key("delimiter") {
                    return Err(self.err(
                        k,
                        &f.child("delimiter"),
                        "`delimiter` applies to CSV files, not JSON",
                    ));
                }
                onrush_data::Format::Json
            } else {
                let delimiter = match f.get("delimiter") {
                    Some(d) => {
                        let t = self.string(d, &f.child("delimiter"))?;
                        let t = if t == "\\t" { "\t".to_string() } else { t };
                        match t.as_bytes() {
                            [b] if !matches!(b, b'"' | b'\r' | b'\n') && b.is_ascii() => *b,
                            _ => {
                                return Err(self
                                    .err(
                                        d,
                                        &f.child("delimiter"),
                                        format!(
                                        "{t:?} is not a delimiter; expected one ASCII character"
                                    ),
                                    )
                                    .with_hint("e.g. `delimiter: \";\"` or `delimiter: \"\\t\"`"))
                            }
                        }
                    }
                    None => b',',
                };
                onrush_data::Format::Csv { delimiter }
            };
            let mode_name = match f.get("mode") {
                Some(n) => self.string(n, &f.child("mode"))?.trim().to_string(),
                None => "circular".to_string(),
            };
            let exhausted = match f.get("on_exhausted") {
                Some(n) => match self.string(n, &f.child("on_exhausted"))?.trim() {
                    "stop" => onrush_data::Exhausted::Stop,
                    "recycle" => onrush_data::Exhausted::Recycle,
                    other => return Err(self
                        .err(n, &f.child("on_exhausted"), format!("unknown value {other:?}; expected `stop` or `recycle`"))
                        .with_hint("stop: a VU that finds no unused row stops; recycle: start again from the first row")),
                },
                None => onrush_data::Exhausted::Stop,
            };
            let mode = match mode_name.as_str() {
                "circular" => onrush_data::Mode::Circular,
                "random" => onrush_data::Mode::Random,
                "unique" => onrush_data::Mode::Unique {
                    on_exhausted: exhausted,
                },
                "per_vu" => onrush_data::Mode::PerVu,
                other => {
                    let n = f.get("mode").expect("a non-default mode was written");
                    return Err(self
                        .err(n, &f.child("mode"), format!("unknown feeder mode {other:?}; expected `circular`, `random`, `unique` or `per_vu`"))
                        .with_hint("circular: rows in order, shared, wrapping; random: any row; unique: each row once in the whole test; per_vu: row k for VU k"));
                }
            };
            if let (Some(k), false) = (f.key("on_exhausted"), mode_name == "unique") {
                return Err(self.err(
                    k,
                    &f.child("on_exhausted"),
                    "`on_exhausted` applies to `mode: unique` only",
                ));
            }
            let table = onrush_data::load(&path_buf, format).map_err(|e| {
                let at = match (e.line, e.column) {
                    (Some(l), Some(c)) => format!(" line {l} column {c}"),
                    (Some(l), None) => format!(" line {l}"),
                    _ => String::new(),
                };
                self.err(
                    file_node,
                    &f.child("file"),
                    format!("{}{at}: {}", path_buf.display(), e.message),
                )
            })?;
            let columns = table.columns().to_vec();
            for c in &columns {
                if !is_name(c) {
                    return Err(self
                        .err(file_node, &f.child("file"), format!("column {c:?} of {} is not a valid variable name; expected letters, digits and `_`", path_buf.display()))
                        .with_hint("rename the column in the file's header"));
                }
            }
            let feeder = onrush_data::Feeder::new(Arc::new(table), mode);
            out.push((
                FeederUse {
                    file,
                    feeder: Shared(Arc::new(feeder)),
                    slots: Vec::new(),
                },
                columns,
            ));
        }
        Ok(out)
    }

    /// Names set at run time in `steps`: `extract:` keys and `foreach ... as:` names, in file
    /// order, after `first` (feeder columns). Checks each name.
    pub(super) fn runtime_names(
        &self,
        steps: &Node,
        first: Vec<String>,
    ) -> Result<Vec<String>, PlanError> {
        let mut names = first;
        self.collect_names(steps, "steps", &mut names, 0)?;
        Ok(names)
    }

    fn collect_names(
        &self,
        node: &Node,
        path: &str,
        names: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), PlanError> {
        if depth > 64 {
            return Ok(());
        }
        match &node.kind {
            Kind::Seq(items) => {
                for (i, n) in items.iter().enumerate() {
                    self.collect_names(n, &format!("{path}[{i}]"), names, depth + 1)?;
                }
            }
            Kind::Map(entries) => {
                for (k, v) in entries {
                    let key = k.as_scalar().map_or("", |s| s.text.as_str());
                    let field = format!("{path}.{key}");
                    if key == "extract" {
                        if let Kind::Map(vars) = &v.kind {
                            for (name_node, _) in vars {
                                let name = name_node.as_scalar().map_or("", |s| s.text.as_str());
                                self.runtime_name(
                                    name_node,
                                    &format!("{field}.{name}"),
                                    name,
                                    names,
                                )?;
                            }
                        }
                    }
                    // Inline JavaScript: the names it assigns through `vars` get slots.
                    if key == "script" || key == "js" {
                        if let Some(s) = v.as_scalar() {
                            let mut found = Vec::new();
                            onrush_script::scan_var_names(&s.text, &mut found);
                            for name in found {
                                self.runtime_name(v, &field, &name, names)?;
                            }
                        }
                    }
                    if key == "loop" {
                        if let Kind::Map(loop_entries) = &v.kind {
                            for (lk, lv) in loop_entries {
                                if lk.as_scalar().is_some_and(|s| s.text == "as") {
                                    let name = lv
                                        .as_scalar()
                                        .map_or(String::new(), |s| s.text.trim().to_string());
                                    self.runtime_name(lv, &format!("{field}.as"), &name, names)?;
                                }
                            }
                        }
                    }
                    self.collect_names(v, &field, names, depth + 1)?;
                }
            }
            Kind::Scalar(_) => {}
        }
        Ok(())
    }

    fn runtime_name(
        &self,
        node: &Node,
        path: &str,
        name: &str,
        names: &mut Vec<String>,
    ) -> Result<(), PlanError> {
        if !is_name(name) {
            return Err(self.err(node, path, format!("`{name}` is not a valid variable name; expected letters, digits and `_`, not starting with a digit")));
        }
        if BUILTINS.contains(&name) {
            return Err(self.err(
                node,
                path,
                format!("`{name}` is a built-in per-request value; expected another variable name"),
            ));
        }
        if self.vars.contains_key(name) {
            return Err(self
                .err(node, path, format!("`{name}` is also a plan variable (`vars:` or -D); expected a name of its own"))
                .with_hint("plan variables are fixed when the plan loads; give the runtime variable another name"));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
        Ok(())
    }
}
