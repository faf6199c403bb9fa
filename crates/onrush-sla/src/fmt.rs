//! Numbers for people: `87.2 ms`, `0.41%`, `7,012/s`, `12,345`.

use onrush_plan::ValueKind;

/// `value` in the unit of `kind`: `87.2 ms`, `0.41%`, `7,012/s`, `12,345`.
pub(crate) fn value(kind: ValueKind, v: f64) -> String {
    match kind {
        ValueKind::Millis => format!("{} ms", decimals(v, 3)),
        ValueKind::Fraction => format!("{}%", decimals(v * 100.0, 3)),
        ValueKind::PerSecond if v.abs() >= 100.0 => format!("{}/s", decimals(v, 0)),
        ValueKind::PerSecond => format!("{}/s", decimals(v, 2)),
        ValueKind::Count => decimals(v, 3),
        ValueKind::Verdict => "healthy".to_string(),
    }
}

/// `v` rounded to at most `places` decimals, trailing zeros dropped, thousands separated by `,`.
pub(crate) fn decimals(v: f64, places: usize) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let text = format!("{:.*}", places, v);
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i.to_string(), f.trim_end_matches('0').to_string()),
        None => (text.clone(), String::new()),
    };
    let (sign, digits) = match int.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", int.as_str()),
    };
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if grouped.chars().all(|c| c == '0' || c == ',') && frac.is_empty() {
        ""
    } else {
        sign
    };
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(value(ValueKind::Millis, 87.2), "87.2 ms");
        assert_eq!(value(ValueKind::Millis, 2.151), "2.151 ms");
        assert_eq!(value(ValueKind::Millis, 1234.5), "1,234.5 ms");
        assert_eq!(value(ValueKind::Millis, 100.0), "100 ms");
        assert_eq!(value(ValueKind::Fraction, 0.0041), "0.41%");
        assert_eq!(value(ValueKind::Fraction, 0.0), "0%");
        assert_eq!(value(ValueKind::Fraction, 1.0 / 3.0), "33.333%");
        assert_eq!(value(ValueKind::PerSecond, 7012.4), "7,012/s");
        assert_eq!(value(ValueKind::PerSecond, 12.5), "12.5/s");
        assert_eq!(value(ValueKind::Count, 1_234_567.0), "1,234,567");
        assert_eq!(decimals(-0.0001, 3), "0");
        assert_eq!(decimals(-1234.0, 0), "-1,234");
        assert_eq!(decimals(999.9996, 3), "1,000");
    }
}
