//! The human end-of-run summary table.

use std::io::{self, Write};

use crate::hist::MsStats;
use crate::summary::{failure_class_info, FailureClassInfo, Summary};
use onrush_results::exchanges::shorten;

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
    if s.groups().next().is_some() {
        write_groups(s, w)?;
        writeln!(w)?;
    }
    if !s.checks.is_empty() {
        write_checks(s, w)?;
        writeln!(w)?;
    }

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
    // A run shorter than 10 s has no 10-second window: its "highest" and "lowest" would be the
    // same whole-run mean, which reads like a perfectly flat rate. Said on a line of its own.
    if t.rate_10s_whole_run {
        label(
            w,
            "rate (req/s)",
            format!("highest 1-s: {}", fmt_rate(t.rate_1s_max)),
        )?;
        label(
            w,
            "",
            format!(
                "highest/lowest 10-s: need a run of at least 10 s (this one: {:.1} s)",
                t.rate_10s_window_s
            ),
        )?;
    } else {
        label(
            w,
            "rate (req/s)",
            format!(
                "10-s mean: highest {}, lowest {}; highest 1-s: {}",
                fmt_rate(t.rate_10s_max),
                fmt_rate(t.rate_10s_min),
                fmt_rate(t.rate_1s_max)
            ),
        )?;
    }
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
        let infos: Vec<FailureClassInfo> = classes
            .iter()
            .map(|(name, _)| failure_class_info(s, name))
            .collect();
        // The group first (`TLS`, `gRPC`), in a column as wide as the longest printed.
        let group_width = infos
            .iter()
            .map(|i| i.group.chars().count())
            .max()
            .unwrap_or(0);
        for ((name, &n), info) in classes.into_iter().zip(infos) {
            writeln!(
                w,
                "  {:<group_width$}  {name:<20}{:>12}  {:>7} of requests",
                info.group,
                thousands(n),
                fmt_pct(ratio(n, t.requests))
            )?;
            for l in wrap(&info.hint, WIDTH - 6) {
                writeln!(w, "      {l}")?;
            }
            let example = s.extra.failure_examples.as_ref().and_then(|e| e.get(name));
            if let Some(example) = example {
                for l in wrap(&format!("first seen: {example}"), WIDTH - 6) {
                    writeln!(w, "      {l}")?;
                }
            }
        }
    }
    write_failing(s, w)?;
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

const HEADS: [&str; 12] = [
    "requests", "run rps", "act rps", "fail%", "min", "mean", "p50", "p90", "p95", "p99", "p99.9",
    "max",
];

/// What the two rates of the tables are: a step that ran for part of the run has a much
/// higher rate over its own time than over the run's (issue 37: 319.8 req/s shown for a step
/// that ran at ~5,000/s for 0.8 s of a 5-s run).
const RATES_NOTE: &str = "run rps: requests over the whole run; act rps: over the step's own \
active time\n(from the first to the last second in which it had requests)";

/// One line per step and failure class: what its first failing request got back.
fn write_failing(s: &Summary, w: &mut impl Write) -> io::Result<()> {
    let Some(examples) = s.extra.failing_exchanges.as_ref().filter(|e| !e.is_empty()) else {
        return Ok(());
    };
    writeln!(w)?;
    writeln!(
        w,
        "first failure of each step and class (up to 3 of each in summary.json and the report)"
    )?;
    let mut shown: Vec<(&str, &str, &str)> = Vec::new();
    for e in examples {
        let kind = (e.scenario.as_str(), e.step.as_str(), e.class.as_str());
        if shown.contains(&kind) {
            continue;
        }
        shown.push(kind);
        writeln!(w, "  {} / {}  {}", e.scenario, e.step, e.class)?;
        for l in wrap(&shorten(&e.short(), 300), WIDTH - 6) {
            writeln!(w, "      {l}")?;
        }
    }
    Ok(())
}

fn row_cells(
    requests: u64,
    (rps, rps_active): (f64, Option<f64>),
    fail: f64,
    l: &MsStats,
) -> Vec<String> {
    let mut v = vec![
        requests.to_string(),
        fmt_rate(rps),
        rps_active.map_or("-".into(), fmt_rate),
        format!("{:.2}", fail * 100.0),
    ];
    for x in [l.min, l.mean, l.p50, l.p90, l.p95, l.p99, l.p999, l.max] {
        v.push(if l.count == 0 { "-".into() } else { fmt_ms(x) });
    }
    v
}

/// Groups (transactions): one row per group, its whole duration per run.
fn write_groups(s: &Summary, w: &mut impl Write) -> io::Result<()> {
    let several = s.scenarios.len() > 1;
    let rows: Vec<(String, Vec<String>)> = s
        .groups()
        .map(|g| {
            let name = if several {
                format!("{}/{}", g.scenario, g.name)
            } else {
                g.name.clone()
            };
            (
                name,
                row_cells(
                    g.requests,
                    (g.rps, g.rps_active),
                    g.failure_rate,
                    &g.latency_ms,
                ),
            )
        })
        .collect();
    let mut heads = HEADS;
    heads[0] = "runs";
    let mut rows_opt: Vec<(String, Option<Vec<String>>)> = Vec::new();
    for (n, c) in rows {
        rows_opt.push((n, Some(c)));
    }
    writeln!(
        w,
        "groups: whole duration of each run in ms (not counted as requests)"
    )?;
    write_rows(&heads, &rows_opt, "group", w)
}

/// Checks, as k6 prints them: `✓`/`✗` per check with its pass rate and counts.
fn write_checks(s: &Summary, w: &mut impl Write) -> io::Result<()> {
    let t = &s.totals.checks;
    writeln!(
        w,
        "checks: {} passed, {} failed ({} passed)",
        thousands(t.passes),
        thousands(t.fails),
        if t.total() == 0 {
            "none ran".to_string()
        } else {
            fmt_pct(t.pass_rate)
        }
    )?;
    let several = s.scenarios.len() > 1;
    let names: Vec<String> = s
        .checks
        .iter()
        .map(|c| {
            if several {
                format!("{}/{}: {}", c.scenario, c.step, c.name)
            } else {
                format!("{}: {}", c.step, c.name)
            }
        })
        .collect();
    let counts: Vec<(String, String)> = s
        .checks
        .iter()
        .map(|c| (thousands(c.passes), thousands(c.fails)))
        .collect();
    let pw = counts.iter().map(|c| c.0.len()).max().unwrap_or(1);
    let fw = counts.iter().map(|c| c.1.len()).max().unwrap_or(1);
    // "  ✓ " + name + "  " + "100.00%" + "  ✓ " + passes + "  ✗ " + fails
    let fixed = 4 + 2 + 7 + 4 + pw + 4 + fw;
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let name_w = longest.min(WIDTH.saturating_sub(fixed).max(10));
    for ((c, name), (p, f)) in s.checks.iter().zip(&names).zip(&counts) {
        let mark = if c.fails > 0 {
            '✗'
        } else if c.passes > 0 {
            '✓'
        } else {
            '-'
        };
        let rate = if c.total() == 0 {
            "-".to_string()
        } else {
            fmt_pct(c.pass_rate)
        };
        writeln!(
            w,
            "  {mark} {:<name_w$}  {rate:>7}  ✓ {p:>pw$}  ✗ {f:>fw$}",
            fit(name, name_w)
        )?;
    }
    Ok(())
}

fn write_table(s: &Summary, w: &mut impl Write) -> io::Result<()> {
    // (name, cells); None cells: a scenario heading.
    let mut rows: Vec<(String, Option<Vec<String>>)> = Vec::new();
    let mut last_scenario: Option<&str> = None;
    for st in s.request_steps() {
        if last_scenario != Some(st.scenario.as_str()) {
            rows.push((scenario_heading(s, &st.scenario), None));
            last_scenario = Some(&st.scenario);
        }
        let cells = row_cells(
            st.requests,
            (st.rps, st.rps_active),
            st.failure_rate,
            &st.latency_ms,
        );
        rows.push((format!("  {}", st.name), Some(cells)));
    }
    let t = &s.totals;
    rows.push((
        "total".into(),
        // The run's active time is the run.
        Some(row_cells(
            t.requests,
            (t.rps, Some(t.rps)),
            t.failure_rate,
            &t.latency_ms,
        )),
    ));
    writeln!(w, "latency in ms, from the intended start of each request")?;
    write_rows(&HEADS, &rows, "step", w)?;
    writeln!(w, "{RATES_NOTE}")
}

/// A scenario's heading row; with its own rate when it ran for part of the run only.
fn scenario_heading(s: &Summary, name: &str) -> String {
    let Some(sc) = s.scenarios.iter().find(|sc| sc.name == name) else {
        return name.to_string();
    };
    match (sc.rps_active, sc.active_s) {
        (Some(rate), Some(active)) if active + 0.5 < s.run.duration_s => format!(
            "{name}  (active {active:.0} s of {:.1}: {} req/s over its active time, {} over the run)",
            s.run.duration_s,
            fmt_rate(rate),
            fmt_rate(sc.rps)
        ),
        _ => name.to_string(),
    }
}

/// A table: a name column (`first` as its heading) and `heads`; rows without cells are
/// headings; a row named `total` gets a rule above it.
fn write_rows(
    heads: &[&str],
    rows: &[(String, Option<Vec<String>>)],
    first: &str,
    w: &mut impl Write,
) -> io::Result<()> {
    let mut widths: Vec<usize> = heads.iter().map(|h| h.len()).collect();
    for (_, cells) in rows {
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

    write!(w, "{first:<name_w$}")?;
    for (h, wd) in heads.iter().zip(&widths) {
        write!(w, "{sep}{h:>wd$}")?;
    }
    writeln!(w)?;
    for (name, cells) in rows {
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
        if i > 0 && (s.len() - i).is_multiple_of(3) {
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
