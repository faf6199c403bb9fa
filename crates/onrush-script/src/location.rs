//! Where in a script an exception was thrown, from QuickJS's `stack` text.

/// The first `file:line:col` of a QuickJS stack (`    at sign (lib/sign.js:3:17)` or
/// `    at lib/sign.js:3:17`), skipping frames of onrush's own glue (`<onrush>`).
pub fn first_frame(stack: &str) -> Option<String> {
    for line in stack.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("at ") else {
            continue;
        };
        let place = match (rest.rfind('('), rest.ends_with(')')) {
            (Some(open), true) => &rest[open + 1..rest.len() - 1],
            _ => rest,
        };
        if place.starts_with("<onrush") || place.starts_with("<native>") || !place.contains(':') {
            continue;
        }
        return Some(place.to_string());
    }
    None
}

/// Line and column of a `file:line:col` place.
pub fn line_col(place: &str) -> Option<(usize, usize)> {
    let mut parts = place.rsplitn(3, ':');
    let col = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some((line, col))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        assert_eq!(
            first_frame("    at <onrush>:1:2\n    at sign (lib/sign.js:3:17)\n").as_deref(),
            Some("lib/sign.js:3:17")
        );
        assert_eq!(
            first_frame("    at lib/a.js:1:5").as_deref(),
            Some("lib/a.js:1:5")
        );
        assert_eq!(first_frame("    at <native>\n"), None);
        assert_eq!(line_col("lib/a.js:12:5"), Some((12, 5)));
    }
}
