//! Values as a plan writes them: durations (`250ms`, `5s`, `1m30s`), rates (`200/s`, `12000/m`,
//! `200`) and sizes (`64KiB`); and the words its messages use to say what was expected
//! (`suggest.rs`: "did you mean", "`a`, `b` or `c`"). onrush-plan and onrush-threshold read
//! with them, so a duration means the same in a step's `timeout:` and in `p99 < 250ms`.

mod suggest;

pub use suggest::{did_you_mean, one_of};

use std::time::Duration;

/// What is wrong with a value, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    pub message: String,
    pub hint: String,
}

fn err(message: impl Into<String>, hint: impl Into<String>) -> UnitError {
    UnitError {
        message: message.into(),
        hint: hint.into(),
    }
}

const UNITS: [(&str, u128); 7] = [
    ("ms", 1_000_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("d", 86_400_000_000_000),
];

/// Longest accepted duration: 365 days.
const MAX_NANOS: u128 = 365 * 86_400_000_000_000;

/// Parses `250ms`, `5s`, `2m`, `1h`, `1m30s`, `1.5s`, `100us`.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let s = text.trim();
    let expected = "expected a duration such as `250ms`, `5s`, `2m`, `1h` or `1m30s`";
    if s.is_empty() {
        return Err(err(
            format!("empty duration; {expected}"),
            "write e.g. `5s`",
        ));
    }
    if let Ok(n) = s.parse::<f64>() {
        let shown = if n.fract() == 0.0 {
            format!("{n:.0}")
        } else {
            n.to_string()
        };
        return Err(err(
            format!("`{s}` has no unit; {expected}"),
            format!("write `{shown}s` for seconds or `{shown}ms` for milliseconds"),
        ));
    }
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(err(
                format!("`{s}` is not a duration; {expected}"),
                "write a number followed by a unit, e.g. `30s`",
            ));
        }
        let num = &rest[..num_len];
        rest = &rest[num_len..];
        let Some((unit, nanos)) = UNITS.iter().find(|(u, _)| rest.starts_with(u)) else {
            let unit: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphabetic())
                .collect();
            let hint = if UNITS.iter().any(|(u, _)| *u == unit) {
                format!("write `{num}{unit}`, without a space")
            } else if unit.is_empty() {
                "units are `us`, `ms`, `s`, `m`, `h`".to_string()
            } else {
                format!("`{unit}` is not a unit; use `us`, `ms`, `s`, `m` or `h`")
            };
            return Err(err(format!("`{s}` is not a duration; {expected}"), hint));
        };
        rest = &rest[unit.len()..];
        // A well-formed number too large to hold is a duration too long, not a typo.
        let int_digits = num.split('.').next().unwrap_or("");
        if int_digits.len() > 12 {
            return Err(err(
                format!("`{s}` is longer than a year; expected a shorter duration"),
                "the longest duration is a year (`8760h`)",
            ));
        }
        let value = parse_decimal_nanos(num, *nanos).ok_or_else(|| {
            err(
                format!("`{s}` is not a duration; {expected}"),
                "write a number such as `1.5s` or `1500ms`",
            )
        })?;
        total = total.saturating_add(value);
        if total > MAX_NANOS {
            return Err(err(
                format!("`{s}` is longer than a year; expected a shorter duration"),
                "the longest duration is a year (`8760h`)",
            ));
        }
    }
    Ok(Duration::from_nanos(total as u64))
}

/// `num` (digits with an optional fraction) times `unit` nanoseconds, exactly.
fn parse_decimal_nanos(num: &str, unit: u128) -> Option<u128> {
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') || int.len() > 12 || frac.len() > 9
    {
        return None;
    }
    let int_v: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut value = int_v.checked_mul(unit)?;
    if !frac.is_empty() {
        let frac_v: u128 = frac.parse().ok()?;
        value += frac_v * unit / 10u128.pow(frac.len() as u32);
    }
    Some(value)
}

/// Parses `200/s`, `12000/m`, `100/h`, or a plain number meaning per second. Returns per second.
/// A byte count: `512`, `64KB` / `64kB` (1000-based), `64KiB` (1024-based), `B`, `MB`, `MiB`,
/// `GB`, `GiB`.
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || UnitError {
        message: format!(
            "{t:?} is not a byte size; expected a number and a unit such as 64KB or 1MiB"
        ),
        hint: "units: B, KB, MB, GB (1000-based), KiB, MiB, GiB (1024-based)".into(),
    };
    let n: f64 = num.replace('_', "").parse().map_err(|_| bad())?;
    let factor: f64 = match unit.trim() {
        "" | "B" | "b" => 1.0,
        "KB" | "kB" | "kb" | "K" | "k" => 1e3,
        "MB" | "mb" | "M" => 1e6,
        "GB" | "gb" | "G" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let v = n * factor;
    if !v.is_finite() || !(0.0..=1e15).contains(&v) {
        return Err(bad());
    }
    Ok(v.round() as u64)
}

pub fn parse_rate(text: &str) -> Result<f64, UnitError> {
    let s = text.trim();
    let expected = "expected a rate such as `200/s`, `12000/m`, `50/h` or `200` (per second)";
    let (num, per) = match s.split_once('/') {
        Some((n, u)) => (n.trim(), u.trim()),
        None => (s, "s"),
    };
    let divisor = match per {
        "s" | "1s" | "sec" | "second" => 1.0,
        "m" | "1m" | "min" | "minute" => 60.0,
        "h" | "1h" | "hour" => 3600.0,
        other => {
            return Err(err(
                format!("`{s}` has an unknown time unit `/{other}`; {expected}"),
                "use `/s`, `/m` or `/h`",
            ))
        }
    };
    let value: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0 && !num.starts_with('+'))
        .ok_or_else(|| {
            err(
                format!("`{s}` is not a rate; {expected}"),
                "write the number of iterations per time unit, e.g. `rate: 200/s`",
            )
        })?;
    Ok(value / divisor)
}

/// `1.5s`, `250ms`, `2m30s`: a short human form for messages.
pub fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if d.subsec_nanos() != d.subsec_millis() * 1_000_000 {
        format!("{}us", d.as_micros())
    } else if d.subsec_millis() != 0 {
        format!("{ms}ms")
    } else {
        let s = d.as_secs();
        match (s / 60, s % 60) {
            (0, s) => format!("{s}s"),
            (m, 0) => format!("{m}m"),
            (m, s) => format!("{m}m{s}s"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = |s: &str| parse_duration(s).unwrap();
        assert_eq!(ok("250ms"), Duration::from_millis(250));
        assert_eq!(ok("5s"), Duration::from_secs(5));
        assert_eq!(ok("2m"), Duration::from_secs(120));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("100us"), Duration::from_micros(100));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok("1h2m3s4ms"), Duration::from_millis(3_723_004));
        let e = parse_duration("5").unwrap_err();
        assert!(e.message.contains("no unit"), "{e:?}");
        assert!(e.hint.contains("5s"), "{e:?}");
        assert!(parse_duration("5x")
            .unwrap_err()
            .hint
            .contains("`x` is not a unit"));
        assert!(parse_duration("5 s")
            .unwrap_err()
            .hint
            .contains("write `5s`, without a space"));
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("-5s").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("99999999999999h").is_err());
        assert!(parse_duration("400d").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("200/s").unwrap(), 200.0);
        assert_eq!(parse_rate("12000/m").unwrap(), 200.0);
        assert_eq!(parse_rate("7200/h").unwrap(), 2.0);
        assert_eq!(parse_rate("50").unwrap(), 50.0);
        assert_eq!(parse_rate("0.5/s").unwrap(), 0.5);
        assert!(parse_rate("200/ms").unwrap_err().hint.contains("/s"));
        assert!(parse_rate("abc").is_err());
        assert!(parse_rate("-3/s").is_err());
        assert!(parse_rate("inf").is_err());
    }

    #[test]
    fn show() {
        assert_eq!(show_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(show_duration(Duration::from_secs(5)), "5s");
    }
}
