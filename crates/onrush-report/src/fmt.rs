//! Text helpers: HTML escaping, the page template, and the number/date formats of the report.

/// Numbers and sizes are formatted as in the printed summary.
pub(crate) use onrush_metrics::{format_bytes as bytes, thousands};

use std::fmt::Write as _;

/// Escapes text for HTML element content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON made safe to sit inside `<script type="application/json">`: `<`, `>` and `&` only
/// occur inside JSON strings, where their `\u` escapes mean the same; U+2028/2029 likewise.
pub(crate) fn script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Fills `{{NAME}}` placeholders of `template` in one pass (inserted text is not scanned
/// again, so values may contain anything). Unknown names are left as they are.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let extra: usize = values.iter().map(|(_, v)| v.len()).sum();
    let mut out = String::with_capacity(template.len() + extra);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) if values.iter().any(|(k, _)| *k == &after[..end]) => {
                let name = &after[..end];
                let v = values.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
                out.push_str(v.unwrap_or_default());
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A rate in requests (or iterations) per second: "1,234.5" or "12,345".
pub(crate) fn rate(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v >= 10_000.0 {
        thousands(v.round() as u64)
    } else {
        let whole = v.trunc() as u64;
        format!(
            "{}.{}",
            thousands(whole),
            ((v - whole as f64) * 10.0).round().min(9.0) as u64
        )
    }
}

/// Milliseconds with about 4 significant digits and their unit; seconds from 1 s up.
pub(crate) fn ms(v: f64) -> String {
    if v < 1000.0 {
        format!("{} ms", ms_num(v))
    } else if v < 10_000.0 {
        format!("{:.3} s", v / 1000.0)
    } else {
        format!("{:.2} s", v / 1000.0)
    }
}

/// Milliseconds as a number of about 4 significant digits, for table cells under "(ms)".
pub(crate) fn ms_num(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.3}")
    } else if v < 100.0 {
        format!("{v:.2}")
    } else if v < 1000.0 {
        format!("{v:.1}")
    } else {
        thousands(v.round() as u64)
    }
}

/// A fraction as a percentage: 0.015 → "1.50%"; tiny non-zero values keep a digit.
pub(crate) fn pct(r: f64) -> String {
    let p = r * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p < 0.01 {
        format!("{p:.4}%")
    } else {
        format!("{p:.2}%")
    }
}

/// A length of time: "3.2 s", "5 min 12 s", "1 h 02 min 05 s".
pub(crate) fn duration(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return "-".into();
    }
    if s < 60.0 {
        return format!("{s:.1} s");
    }
    let total = s.round() as u64;
    let (h, m, sec) = (total / 3600, total / 60 % 60, total % 60);
    if h > 0 {
        format!("{h} h {m:02} min {sec:02} s")
    } else {
        format!("{m} min {sec:02} s")
    }
}

/// Unix milliseconds as "2026-01-01 00:00:00 UTC".
pub(crate) fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let mut out = String::new();
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    out
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(rate(400.0), "400.0");
        assert_eq!(rate(1234.56), "1,234.6");
        assert_eq!(rate(123_456.7), "123,457");
        assert_eq!(ms(2.151), "2.151 ms");
        assert_eq!(ms(87.24), "87.24 ms");
        assert_eq!(ms(123.45), "123.5 ms");
        assert_eq!(ms(5001.2), "5.001 s");
        assert_eq!(ms(12_345.0), "12.35 s");
        assert_eq!(ms_num(5001.2), "5,001");
        assert_eq!(ms_num(0.8), "0.800");
        assert_eq!(pct(0.015), "1.50%");
        assert_eq!(pct(0.0), "0%");
        assert_eq!(pct(0.000_001), "0.0001%");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(duration(3.04), "3.0 s");
        assert_eq!(duration(312.0), "5 min 12 s");
        assert_eq!(duration(3725.0), "1 h 02 min 05 s");
        assert_eq!(utc(1_767_225_600_000), "2026-01-01 00:00:00 UTC");
        assert_eq!(utc(951_827_696_000), "2000-02-29 12:34:56 UTC");
    }

    #[test]
    fn escaping_and_template() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(
            script_json(r#"{"a":"</script>"}"#),
            r#"{"a":"\u003c/script\u003e"}"#
        );
        let t = "a {{X}} b {{Y}} {{Z}} {{";
        assert_eq!(
            fill(t, &[("X", "{{Y}}"), ("Y", "2")]),
            "a {{Y}} b 2 {{Z}} {{"
        );
    }
}
