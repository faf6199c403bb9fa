//! Threshold results for people (the end-of-run lines) and for CI (JUnit XML).

use std::io::{self, Write};

use crate::ThresholdResult;

/// Writes one `✓`/`✗` line per threshold, after a heading with the counts:
///
/// ```text
/// thresholds: 2 of 4 failed
///   ✓ p99 < 100ms          total              87.2 ms
///   ✗ home: p95 < 50ms     step closed/home   61.3 ms, expected < 50 ms
///   ✗ cart: p99 < 10ms     step closed/cart   no requests, expected < 10 ms
///   ✓ generator: healthy   generator          healthy
/// ```
///
/// Nothing is written for an empty list. Write errors (a closed pipe) are ignored.
pub fn print_results(results: &[ThresholdResult], w: &mut impl Write) {
    let _ = write_results(results, w);
}

/// [`print_results`] with the write errors.
pub fn write_results(results: &[ThresholdResult], w: &mut impl Write) -> io::Result<()> {
    if results.is_empty() {
        return Ok(());
    }
    let failed = results.iter().filter(|r| !r.passed).count();
    if failed == 0 {
        writeln!(w, "thresholds: all {} passed", results.len())?;
    } else {
        writeln!(w, "thresholds: {failed} of {} failed", results.len())?;
    }
    let width = |f: &dyn Fn(&ThresholdResult) -> &str| {
        results
            .iter()
            .map(|r| f(r).chars().count())
            .max()
            .unwrap_or(0)
            .min(48)
    };
    let tw = width(&|r| &r.threshold);
    let sw = width(&|r| &r.scope);
    for r in results {
        let mark = if r.passed { '✓' } else { '✗' };
        let mut line = format!(
            "  {mark} {}  {}  {}",
            pad(&one_line(&r.threshold), tw),
            pad(&one_line(&r.scope), sw),
            one_line(&r.measured_text)
        );
        if !r.passed {
            line.push_str(&format!(", expected {}", one_line(&r.limit)));
        }
        writeln!(w, "{}", line.trim_end())?;
    }
    Ok(())
}

/// Control characters (line breaks, tabs) shown as spaces, to keep one result per line.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn pad(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n >= width {
        s.to_string()
    } else {
        format!("{s}{}", " ".repeat(width - n))
    }
}

/// JUnit XML (the Ant/Surefire format Jenkins, GitLab, GitHub Actions reporters and others
/// read): one `<testsuite name=suite>` in `<testsuites>`, one `<testcase>` per threshold named
/// by its text, with the scope in `classname`, a `<failure>` when it failed, and the measured
/// value in `<system-out>`. Valid against the Jenkins `junit-4.xsd` schema.
pub fn junit_xml(results: &[ThresholdResult], suite: &str, duration_s: f64) -> String {
    let failures = results.iter().filter(|r| !r.passed).count();
    let time = if duration_s.is_finite() && duration_s > 0.0 {
        format!("{duration_s:.3}")
    } else {
        "0.000".to_string()
    };
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites name=\"onrush thresholds\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{time}\">\n",
        results.len()
    ));
    x.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{time}\">\n",
        attr(suite),
        results.len()
    ));
    let class_suite = suite.replace('.', "_");
    for r in results {
        let classname = format!("onrush.{class_suite}.{}", r.scope.replace('.', "_"));
        x.push_str(&format!(
            "    <testcase name=\"{}\" classname=\"{}\" time=\"0\">\n",
            attr(&r.threshold),
            attr(&classname)
        ));
        if !r.passed {
            x.push_str(&format!(
                "      <failure message=\"{}\" type=\"threshold\">{}</failure>\n",
                attr(&r.message),
                text(&format!(
                    "{}\nscope: {}\nmeasured: {}\nexpected: {}",
                    r.message, r.scope, r.measured_text, r.limit
                ))
            ));
        }
        x.push_str(&format!(
            "      <system-out>{}</system-out>\n",
            text(&format!("{}: {}", r.scope, r.message))
        ));
        x.push_str("    </testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Characters XML 1.0 cannot hold at all are replaced by U+FFFD.
fn xml_char(c: char) -> char {
    match c {
        '\t' | '\n' | '\r' => c,
        c if (c as u32) < 0x20 => '\u{FFFD}',
        '\u{FFFE}' | '\u{FFFF}' => '\u{FFFD}',
        c => c,
    }
}

/// Escaped for an attribute value in double quotes (line breaks kept as character references).
fn attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().map(xml_char) {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

/// Escaped for element text.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().map(xml_char) {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            attr("a<b & \"c\"\n'd'"),
            "a&lt;b &amp; &quot;c&quot;&#10;&apos;d&apos;"
        );
        assert_eq!(
            text("p99 < 5ms && x > 1\u{1}"),
            "p99 &lt; 5ms &amp;&amp; x &gt; 1\u{FFFD}"
        );
    }
}
