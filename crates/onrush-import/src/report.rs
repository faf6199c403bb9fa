//! The conversion report: one entry per element of the JMX tree saying what became of it.

use serde::Serialize;

/// What became of an element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// onrush does the same thing (or the element has nothing to do, e.g. a disabled one).
    Converted,
    /// onrush does something close; `note` says how it differs.
    Approximated,
    /// Left out of the plan; `note` says why and what to do.
    NotConverted,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Converted => "converted",
            Status::Approximated => "approximated",
            Status::NotConverted => "not converted",
        }
    }
}

/// One element of the JMX tree.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// The names of its parents and its own, from the top: `Test Plan / Users / Login`.
    pub path: String,
    /// JMeter's `testclass` (or the XML tag of a plugin element).
    pub testclass: String,
    /// `line:col` of the element in the JMX file (in an included file: `FILE:line:col`).
    pub at: String,
    pub status: Status,
    /// How it was approximated, or why it was not converted and what to do; empty when
    /// converted as is.
    pub note: String,
}

/// The whole report, in tree order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub entries: Vec<Entry>,
}

impl Report {
    pub fn count(&self, status: Status) -> usize {
        self.entries.iter().filter(|e| e.status == status).count()
    }

    /// Whether something was left out (what `--strict` fails on).
    pub fn has_not_converted(&self) -> bool {
        self.count(Status::NotConverted) > 0
    }

    /// The JSON form written by `--report FILE`.
    pub fn to_json(&self) -> String {
        let value = serde_json::json!({
            "summary": {
                "converted": self.count(Status::Converted),
                "approximated": self.count(Status::Approximated),
                "not_converted": self.count(Status::NotConverted),
            },
            "elements": self.entries,
        });
        serde_json::to_string_pretty(&value).expect("a report serialises")
    }

    /// The human form printed on stderr: every approximated and not-converted element with its
    /// note, then the counts.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for status in [Status::NotConverted, Status::Approximated] {
            let list: Vec<&Entry> = self.entries.iter().filter(|e| e.status == status).collect();
            if list.is_empty() {
                continue;
            }
            out.push_str(&format!("{} ({}):\n", status.label(), list.len()));
            for e in list {
                out.push_str(&format!(
                    "  {} [{}] at {}\n      {}\n",
                    e.path, e.testclass, e.at, e.note
                ));
            }
        }
        out.push_str(&format!(
            "{} elements: {} converted, {} approximated, {} not converted\n",
            self.entries.len(),
            self.count(Status::Converted),
            self.count(Status::Approximated),
            self.count(Status::NotConverted)
        ));
        out
    }
}
