//! The human end-of-run summary table.

use std::io::{self, Write};

use crate::failure::FailureClass;
use crate::hist::MsStats;
use crate::summary::Summary;

/// Target terminal width.
const WIDTH: usize = 100;

/// Prints the end-of-run summary (see [`write_summary_text`]); write errors (e.g. a closed
/// pipe) are ignored.
pub fn print_summary(s: &Summary, w: &mut impl Write) {
    let _ = write_summary_text(s, w);
}

/// The end-of-run summary as a string.
pub fn summary_text(s: &Summary) -> String {
    let mut out = Vec::new();
    write_summary_text(s, &mut out).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("the summary is UTF-8")
}

/// Writes the end-of-run summary: a latency table with one row per step and a total row, then
/// connections, iterations, rates, failures by class with hints, and status codes. Fits in
/// 100 columns.
pub fn write_summary_text(s: &Summary, w: &mut impl Write) -> io::Result<()> {
    let t = &s.totals;
    let interrupted = if s.interrupted() {
        " (interrupted)"
    } else {
        ""
    };
    writeln!(
        w,
        "{} {}: {:.1} s{}, {} requests, {} req/s, {} failed",
        if s.run.merged_from.is_some() {
            "merged"
        } else {
            "plan"
        },
        s.run.plan,
        s.run.duration_s,
        interrupted,
        thousands(t.requests),
        fmt_rate(t.rps),
        fmt_pct(t.failure_rate)
    )?;
    writeln!(w)?;
    write_table(s, w)?;
    writeln!(w)?;

    let label = |w: &mut dyn Write, l: &str, v: String| writeln!(w, "{l:<22}{v}");
    label(w, "connections opened", thousands(t.connections_opened))?;
    label(
        w,
        "iterations",
        format!(
            "{}   dropped: {}",
            thousands(t.iterations),
            thousands(t.dropped_iterations)
        ),
    )?;
    let window = if t.rate_10s_whole_run {
        format!("whole run ({:.1} s < 10 s)", t.rate_10s_window_s)
    } else {
        "10-s mean".to_string()
    };
    label(
        w,
        "rate (req/s)",
        format!(
            "{window}: highest {}, lowest {}; highest 1-s: {}",
            fmt_rate(t.rate_10s_max),
            fmt_rate(t.rate_10s_min),
            fmt_rate(t.rate_1s_max)
        ),
    )?;
    label(w, "active VUs (max)", thousands(t.active_vus_max))?;
    for (name, st) in [
        ("service time (ms)", &t.service_ms),
        ("connect time (ms)", &t.connect_ms),
        ("schedule lag (ms)", &t.schedule_lag_ms),
    ] {
        if st.count > 0 {
            label(w, name, short_stats(st))?;
        }
    }
    let hs = &t.handshakes;
    if hs.total() > 0 {
        let times = if hs.time_ms.count > 0 {
            format!(
                " (p50 {} ms, p99 {} ms)",
                fmt_ms(hs.time_ms.p50),
                fmt_ms(hs.time_ms.p99)
            )
        } else {
            String::new()
        };
        label(
            w,
            "TLS handshakes",
            format!(
                "full {}, resumed {}{times}",
                thousands(hs.full),
                thousands(hs.resumed)
            ),
        )?;
    }
    label(
        w,
        "data",
        format!(
            "{} received, {} sent",
            format_bytes(t.bytes_in),
            format_bytes(t.bytes_out)
        ),
    )?;

    if !t.failures_by_class.is_empty() {
        writeln!(w)?;
        writeln!(w, "failures by class")?;
        let mut classes: Vec<(&String, &u64)> = t.failures_by_class.iter().collect();
        classes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (name, &n) in classes {
            writeln!(
                w,
                "  {name:<20}{:>12}  {:>7} of requests",
                thousands(n),
                fmt_pct(ratio(n, t.requests))
            )?;
            if let Ok(c) = name.parse::<FailureClass>() {
                for l in wrap(c.hint(), WIDTH - 6) {
                    writeln!(w, "      {l}")?;
                }
            }
        }
    }
    if !t.status_codes.is_empty() {
        writeln!(w)?;
        writeln!(w, "status codes")?;
        let mut line = String::new();
        for (c, n) in &t.status_codes {
            let item = format!("{c}: {}", thousands(*n));
            if !line.is_empty() && line.len() + 3 + item.len() > WIDTH - 2 {
                writeln!(w, "  {line}")?;
                line.clear();
            }
            if !line.is_empty() {
                line.push_str("   ");
            }
            line.push_str(&item);
        }
        writeln!(w, "  {line}")?;
    }
    Ok(())
}

const HEADS: [&str; 11] = [
    "requests", "rps", "fail%", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max",
];

fn row_cells(requests: u64, rps: f64, fail: f64, l: &MsStats) -> Vec<String> {
    let mut v = vec![
        requests.to_string(),
        fmt_rate(rps),
        format!("{:.2}", fail * 100.0),
    ];
    for x in [l.min, l.mean, l.p50, l.p90, l.p95, l.p99, l.p999, l.max] {
        v.push(if l.count == 0 { "-".into() } else { fmt_ms(x) });
    }
    v
}

fn write_table(s: &Summary, w: &mut impl Write) -> io::Result<()> {
    // (name, cells); None cells: a scenario heading.
    let mut rows: Vec<(String, Option<Vec<String>>)> = Vec::new();
    let mut last_scenario: Option<&str> = None;
    for st in &s.steps {
        if last_scenario != Some(st.scenario.as_str()) {
            rows.push((st.scenario.clone(), None));
            last_scenario = Some(&st.scenario);
        }
        let cells = row_cells(st.requests, st.rps, st.failure_rate, &st.latency_ms);
        rows.push((format!("  {}", st.name), Some(cells)));
    }
    let t = &s.totals;
    rows.push((
        "total".into(),
        Some(row_cells(t.requests, t.rps, t.failure_rate, &t.latency_ms)),
    ));

    let mut widths: Vec<usize> = HEADS.iter().map(|h| h.len()).collect();
    for (_, cells) in &rows {
        for (wd, c) in widths.iter_mut().zip(cells.iter().flatten()) {
            *wd = (*wd).max(c.chars().count());
        }
    }
    let longest = rows
        .iter()
        .filter(|(_, c)| c.is_some())
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    // Two spaces between columns when that fits in WIDTH, else one; names are cut to fit.
    let numbers = |gap: usize| widths.iter().map(|w| w + gap).sum::<usize>();
    let gap = if longest + numbers(2) <= WIDTH { 2 } else { 1 };
    let numbers = numbers(gap);
    let name_w = longest.min(WIDTH.saturating_sub(numbers).max(10));
    let sep = " ".repeat(gap);

    writeln!(w, "latency in ms, from the intended start of each request")?;
    write!(w, "{:<name_w$}", "step")?;
    for (h, wd) in HEADS.iter().zip(&widths) {
        write!(w, "{sep}{h:>wd$}")?;
    }
    writeln!(w)?;
    for (name, cells) in &rows {
        match cells {
            None => writeln!(w, "{}", fit(name, WIDTH))?,
            Some(cells) => {
                if name == "total" {
                    writeln!(w, "{}", "-".repeat(name_w + numbers))?;
                }
                write!(w, "{:<name_w$}", fit(name, name_w))?;
                for (c, wd) in cells.iter().zip(&widths) {
                    write!(w, "{sep}{c:>wd$}")?;
                }
                writeln!(w)?;
            }
        }
    }
    Ok(())
}

fn short_stats(st: &MsStats) -> String {
    format!(
        "p50 {}  p90 {}  p99 {}  max {}  ({} samples)",
        fmt_ms(st.p50),
        fmt_ms(st.p90),
        fmt_ms(st.p99),
        fmt_ms(st.max),
        thousands(st.count)
    )
}

/// Truncates to `width` characters with an ellipsis.
fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Milliseconds in at most 6 characters, keeping about 4 significant digits.
fn fmt_ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.3}")
    } else if v < 100.0 {
        format!("{v:.2}")
    } else if v < 1000.0 {
        format!("{v:.1}")
    } else if v < 1_000_000.0 {
        format!("{v:.0}")
    } else {
        format!("{:.0}s", v / 1000.0)
    }
}

fn fmt_rate(v: f64) -> String {
    if v < 10_000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn fmt_pct(r: f64) -> String {
    format!("{:.2}%", r * 100.0)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Bytes in binary units: "512 B", "1.5 KiB".
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// 1234567 → "1,234,567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Greedy word wrap.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(fmt_ms(0.123), "0.123");
        assert_eq!(fmt_ms(12.3456), "12.35");
        assert_eq!(fmt_ms(123.45), "123.5");
        assert_eq!(fmt_ms(12345.0), "12345");
        assert_eq!(fmt_ms(3_600_000.0), "3600s");
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(fit("abcdef", 4), "abc…");
    }
}
