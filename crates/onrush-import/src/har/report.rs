//! What `onrush import har` left out or rewrote: entries skipped and why, headers dropped and
//! why, values correlated (where from, where used).

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct SkippedEntry {
    /// Index in the HAR's `log.entries`.
    pub entry: usize,
    /// `METHOD URL`.
    pub request: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct DroppedHeader {
    pub name: String,
    pub reason: String,
    /// How many requests carried it.
    pub count: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct CorrelationNote {
    pub var: String,
    /// The value in the recording.
    pub value: String,
    pub extracted_from: String,
    pub extractor: String,
    pub used_in: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct HarReport {
    /// Requests replayed.
    pub kept: usize,
    pub think_steps: usize,
    pub skipped: Vec<SkippedEntry>,
    pub dropped_headers: Vec<DroppedHeader>,
    pub correlations: Vec<CorrelationNote>,
}

impl HarReport {
    pub(crate) fn drop_header(&mut self, name: &str, reason: &str) {
        let lower = name.to_ascii_lowercase();
        match self.dropped_headers.iter_mut().find(|d| d.name == lower) {
            Some(d) => d.count += 1,
            None => self.dropped_headers.push(DroppedHeader {
                name: lower,
                reason: reason.to_string(),
                count: 1,
            }),
        }
    }

    /// The JSON form written by `--report FILE`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serialises")
    }

    /// The human form printed on stderr.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if !self.correlations.is_empty() {
            out.push_str(&format!("correlated ({}):\n", self.correlations.len()));
            for c in &self.correlations {
                out.push_str(&format!(
                    "  ${{{}}} = {} from {}\n      recorded {:?}, sent back in: {}\n",
                    c.var,
                    c.extractor,
                    c.extracted_from,
                    c.value,
                    c.used_in.join(", ")
                ));
            }
        }
        if !self.skipped.is_empty() {
            out.push_str(&format!("left out ({}):\n", self.skipped.len()));
            for s in &self.skipped {
                out.push_str(&format!(
                    "  entry {} {}\n      {}\n",
                    s.entry, s.request, s.reason
                ));
            }
        }
        if !self.dropped_headers.is_empty() {
            out.push_str("request headers dropped:\n");
            for d in &self.dropped_headers {
                out.push_str(&format!("  {} ({}x): {}\n", d.name, d.count, d.reason));
            }
        }
        out.push_str(&format!(
            "{} requests replayed, {} left out, {} correlated values, {} think times\n",
            self.kept,
            self.skipped.len(),
            self.correlations.len(),
            self.think_steps
        ));
        out
    }
}
