//! `summary.json` "thresholds" and "aborted_by": the outcome of each threshold of the plan.
//!
//! One shape, [`ThresholdOutcome`], for every writer (onrush-sla turns its results into it,
//! the end of a run on one machine and of a distributed run record it the same way) and every
//! reader (the report). Files of older versions wrote `measured` as text and had no
//! `measured_text` (nor always a `message`): [`read_any_shape`] reads those too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One of `thresholds[]` (and `aborted_by`): a threshold's outcome.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThresholdOutcome {
    /// The threshold as written (plan variables substituted): `home: p95 < 50ms`.
    pub threshold: String,
    /// What it was measured over: `total`, `scenario closed`, `step closed/home`, `generator`.
    pub scope: String,
    /// In the threshold's unit; null when there is no value.
    pub measured: Option<f64>,
    /// The measured value for people: `87.2 ms`, `0.41%`, `no requests`.
    pub measured_text: String,
    pub passed: bool,
    /// One line: `p99 87.2 ms < 100 ms`, `p95 61.3 ms is not < 50 ms`, ...
    pub message: String,
}

/// A threshold outcome as any version wrote it.
#[derive(Default, Deserialize)]
#[serde(default)]
struct AnyShape {
    threshold: String,
    scope: String,
    measured: Option<Measured>,
    measured_text: Option<String>,
    passed: bool,
    message: String,
}

/// `measured`: the number today, the text for people in older files.
#[derive(Deserialize)]
#[serde(untagged)]
enum Measured {
    Number(f64),
    Text(String),
}

/// `thresholds` as any version wrote it: `None` when it is not a list; an entry that is not
/// an outcome at all reads as a failed one without text (the report counts it, as a
/// threshold it cannot show).
pub(crate) fn read_any_shape(value: &Value) -> Option<Vec<ThresholdOutcome>> {
    let list = value.as_array()?;
    Some(
        list.iter()
            .map(|entry| {
                let any: AnyShape = serde_json::from_value(entry.clone()).unwrap_or_default();
                let (measured, older_text) = match any.measured {
                    Some(Measured::Number(n)) => (Some(n), n.to_string()),
                    Some(Measured::Text(text)) => (None, text),
                    None => (None, String::new()),
                };
                ThresholdOutcome {
                    threshold: any.threshold,
                    scope: any.scope,
                    measured,
                    measured_text: any.measured_text.unwrap_or(older_text),
                    passed: any.passed,
                    message: any.message,
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Extras;

    #[test]
    fn an_older_list_with_measured_as_text_reads_as_outcomes() {
        let older = json!([
            {"threshold": "p99 < 100ms", "scope": "total", "measured": "87.2 ms", "passed": true},
            {"threshold": "failure_rate < 1%", "scope": "total", "measured": 0.0103,
             "measured_text": "1.03%", "passed": false, "message": "failure_rate 1.03% is not < 1%"},
            "not an outcome",
        ]);
        let mut extras = Extras::default();
        extras.set("thresholds", older.clone());
        // Kept as read, so that writing the summary back does not change it...
        assert_eq!(extras.thresholds, None);
        assert_eq!(extras.get("thresholds"), Some(older));
        // ...and read as outcomes all the same.
        let read = extras.threshold_outcomes().unwrap();
        assert_eq!(
            read[0],
            ThresholdOutcome {
                threshold: "p99 < 100ms".into(),
                scope: "total".into(),
                measured: None,
                measured_text: "87.2 ms".into(),
                passed: true,
                message: String::new(),
            }
        );
        assert_eq!(
            (
                read[1].measured,
                read[1].measured_text.as_str(),
                read[1].passed
            ),
            (Some(0.0103), "1.03%", false)
        );
        assert_eq!(read[2], ThresholdOutcome::default());
        extras.set("thresholds", json!({"not": "a list"}));
        assert_eq!(extras.threshold_outcomes(), None);
    }

    #[test]
    fn todays_list_is_typed() {
        let today = json!([{"threshold": "p99 < 100ms", "scope": "total", "measured": null,
            "measured_text": "no requests", "passed": false, "message": "no requests"}]);
        let mut extras = Extras::default();
        extras.set("thresholds", today);
        assert!(extras.other.is_empty());
        assert_eq!(extras.threshold_outcomes().unwrap()[0].measured, None);
    }
}
