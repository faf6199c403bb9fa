//! The report as text for a terminal.

use std::io::Write;

use crate::{Report, Status};

/// Lines are wrapped to this width (the fix commands are never wrapped: they are copied).
const WIDTH: usize = 100;

/// Prints the report: per finding a `✓` / `!` / `✗` line with the check's name and what was
/// seen, aligned; under it, for findings that are not fine, what it means and the fix commands,
/// indented. Ends with a count per status. Write errors (a closed pipe) are ignored.
pub fn print_text(report: &Report, w: &mut impl Write) {
    let _ = write_text(report, w);
}

fn write_text(report: &Report, w: &mut impl Write) -> std::io::Result<()> {
    let name_width = report
        .findings
        .iter()
        .map(|f| f.check.len())
        .max()
        .unwrap_or(0);
    let indent = " ".repeat(2 + name_width + 2);
    for f in &report.findings {
        let mark = match f.status {
            Status::Ok => '✓',
            Status::Warn => '!',
            Status::Bad => '✗',
        };
        writeln!(w, "{mark} {:<name_width$}  {}", f.check, f.observed)?;
        if f.status == Status::Ok {
            continue;
        }
        for line in wrap(&f.detail, WIDTH.saturating_sub(indent.len()).max(40)) {
            writeln!(w, "{indent}{line}")?;
        }
        if let Some(fix) = &f.fix {
            writeln!(w, "{indent}fix:")?;
            for line in fix.lines() {
                writeln!(w, "{indent}  {line}")?;
            }
        }
    }
    let (ok, warn, bad) = (
        report.count(Status::Ok),
        report.count(Status::Warn),
        report.count(Status::Bad),
    );
    writeln!(
        w,
        "\n{ok} ok, {warn} warning{}, {bad} problem{}. Nothing was changed; the fixes need root.",
        if warn == 1 { "" } else { "s" },
        if bad == 1 { "" } else { "s" },
    )
}

/// Greedy word wrap; a word longer than the width gets a line of its own.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Finding;

    #[test]
    fn aligned_marks_and_indented_fixes() {
        let report = Report {
            findings: vec![
                Finding {
                    check: "cpus",
                    status: Status::Ok,
                    observed: "2 CPUs".into(),
                    detail: "fine".into(),
                    fix: None,
                },
                Finding {
                    check: "tcp_tw_reuse",
                    status: Status::Warn,
                    observed: "0 (off)".into(),
                    detail: "a port stays unusable".into(),
                    fix: Some("sysctl -w net.ipv4.tcp_tw_reuse=1\necho x".into()),
                },
                Finding {
                    check: "nofile",
                    status: Status::Bad,
                    observed: "soft 1,024, hard 1,024".into(),
                    detail: "too few".into(),
                    fix: Some("ulimit -n 65536".into()),
                },
            ],
        };
        let mut out = Vec::new();
        print_text(&report, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "✓ cpus          2 CPUs\n\
             ! tcp_tw_reuse  0 (off)\n\
             \x20               a port stays unusable\n\
             \x20               fix:\n\
             \x20                 sysctl -w net.ipv4.tcp_tw_reuse=1\n\
             \x20                 echo x\n\
             ✗ nofile        soft 1,024, hard 1,024\n\
             \x20               too few\n\
             \x20               fix:\n\
             \x20                 ulimit -n 65536\n\
             \n1 ok, 1 warning, 1 problem. Nothing was changed; the fixes need root.\n"
        );
    }

    #[test]
    fn wraps_words() {
        assert_eq!(wrap("aa bb cc dd", 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap("averylongword x", 5), ["averylongword", "x"]);
        assert!(wrap("", 5).is_empty());
    }
}
