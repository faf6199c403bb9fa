//! Test data: CSV Data Set Config → feeders; Counter and Random Variable → onrush functions.

use super::Conv;
use crate::jmx::{El, Props};
use crate::report::Status;
use crate::yaml::Y;
use crate::DataFile;

impl Conv<'_> {
    /// CSV Data Set Config → a feeder of the scenario.
    pub fn csv(&mut self, el: &El, path: &str) {
        let file = el.s("filename").trim().to_string();
        let file = match self.path_text(el, path, &file) {
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
