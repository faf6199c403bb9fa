//! A fast, lenient reader of one `intervals.jsonl` line: picks the fields the report uses and
//! borrows the histogram text from the file buffer instead of copying it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// What the report takes from one line. Unknown fields are ignored, except whole-number
/// fields, which are kept in `numbers` (so a new counter needs no reader change).
#[derive(Default)]
pub(crate) struct RawLine<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub t: Option<u64>,
    pub scenario: Option<Cow<'a, str>>,
    pub step: Option<Cow<'a, str>>,
    pub latency: Option<Cow<'a, str>>,
    pub schedule_lag: Option<Cow<'a, str>>,
    pub failures_by_class: Vec<(Cow<'a, str>, u64)>,
    pub numbers: Vec<(Cow<'a, str>, u64)>,
}

/// Fields read and skipped without building a value.
const SKIPPED: [&str; 4] = ["service", "connect", "ttfb", "status_codes"];

impl<'de> Deserialize<'de> for RawLine<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(LineVisitor)
    }
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = RawLine<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawLine<'de>, A::Error> {
        let mut line = RawLine::default();
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match key.as_ref() {
                "kind" => line.kind = Some(map.next_value::<Text>()?.0),
                "t" => line.t = Some(map.next_value()?),
                "scenario" => line.scenario = Some(map.next_value::<Text>()?.0),
                "step" => line.step = Some(map.next_value::<Text>()?.0),
                "latency" => line.latency = map.next_value::<Option<Text>>()?.map(|t| t.0),
                "schedule_lag" => {
                    line.schedule_lag = map.next_value::<Option<Text>>()?.map(|t| t.0)
                }
                "failures_by_class" => line.failures_by_class = map.next_value::<Counts>()?.0,
                k if SKIPPED.contains(&k) => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    if let Value::Number(n) = map.next_value::<Value>()? {
                        if let Some(n) = n.as_u64() {
                            line.numbers.push((key, n));
                        }
                    }
                }
            }
        }
        Ok(line)
    }
}

/// A string borrowed from the input when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// `{"name": count, ...}`.
struct Counts<'a>(Vec<(Cow<'a, str>, u64)>);

impl<'de> Deserialize<'de> for Counts<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Counts<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of counts")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Counts<'de>, A::Error> {
                let mut v = Vec::new();
                while let Some(Text(k)) = map.next_key::<Text<'de>>()? {
                    v.push((k, map.next_value::<u64>()?));
                }
                Ok(Counts(v))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_known_fields_and_numbers() {
        let text = r#"{"kind":"step","t":3,"scenario":"s","step":"a\"b","requests":5,
            "failures_by_class":{"http_5xx":2},"status_codes":{"200":3},"latency":"HISTF",
            "ttfb":"x","future":7,"note":"hi","neg":-1}"#;
        let l: RawLine = serde_json::from_str(text).unwrap();
        assert_eq!(l.kind.as_deref(), Some("step"));
        assert_eq!(l.t, Some(3));
        assert_eq!(l.step.as_deref(), Some("a\"b"));
        assert!(matches!(l.latency, Some(Cow::Borrowed("HISTF"))));
        assert_eq!(l.failures_by_class, vec![(Cow::from("http_5xx"), 2)]);
        let nums: Vec<_> = l.numbers.iter().map(|(k, v)| (k.as_ref(), *v)).collect();
        assert_eq!(nums, vec![("requests", 5), ("future", 7)]);
        assert!(serde_json::from_str::<RawLine>("[1]").is_err());
        assert!(serde_json::from_str::<RawLine>(r#"{"t":"x"}"#).is_err());
    }
}
