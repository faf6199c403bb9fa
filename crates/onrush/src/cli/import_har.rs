//! `onrush import har FILE.har [-o plan.yaml] [--report FILE.json]`: a browser recording into a
//! plan (onrush-import's `har`), the report on stderr.

use std::path::PathBuf;

use clap::Args;

use super::exit;

#[derive(Args)]
pub struct HarArgs {
    /// The recording (HAR 1.2, as a browser's "Save all as HAR" writes it).
    har: PathBuf,
    /// Write the plan to FILE instead of standard output.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the report (left out, dropped headers, correlations) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Multiply the recorded gaps between requests by F (think times).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    think_scale: f64,
    /// Cap each think time at DUR (e.g. 5s, 500ms).
    #[arg(long, value_name = "DUR", default_value = "10s")]
    think_max: String,
    /// No think times at all.
    #[arg(long)]
    no_think: bool,
    /// Keep static assets (scripts, stylesheets, images, fonts, media).
    #[arg(long)]
    keep_static: bool,
    /// Keep requests to every host (by default only the first page's host and --host ones).
    #[arg(long)]
    keep_third_party: bool,
    /// Keep requests to HOST too (repeatable).
    #[arg(long = "host", value_name = "HOST")]
    hosts: Vec<String>,
}

fn millis(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?);
    let n: f64 = num.parse().ok()?;
    let factor = match unit {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        _ => return None,
    };
    Some((n * factor).round() as u64)
}

pub fn run(args: HarArgs) -> i32 {
    let Some(think_max_ms) = millis(&args.think_max) else {
        eprintln!(
            "error: --think-max {:?}: expected a duration such as 5s or 500ms",
            args.think_max
        );
        return exit::USAGE;
    };
    if !(args.think_scale.is_finite() && args.think_scale >= 0.0) {
        eprintln!(
            "error: --think-scale {}: expected a number ≥ 0 (0.5 halves the gaps)",
            args.think_scale
        );
        return exit::USAGE;
    }
    let text = match std::fs::read(&args.har) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", args.har.display());
            return exit::USAGE;
        }
    };
    let options = onrush_import::har::HarOptions {
        source_name: args.har.display().to_string(),
        think_scale: args.think_scale,
        think_max_ms,
        no_think: args.no_think,
        keep_static: args.keep_static,
        keep_third_party: args.keep_third_party,
        hosts: args.hosts,
    };
    let import = match onrush_import::har::import_har(&text, &options) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {}:{e}", args.har.display());
            return exit::USAGE;
        }
    };
    eprint!("{}", import.report.to_text());
    let written = match &args.out {
        Some(path) => std::fs::write(path, &import.yaml)
            .map(|()| eprintln!("wrote {}", path.display()))
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => {
            print!("{}", import.yaml);
            Ok(())
        }
    };
    let report = match &args.report {
        Some(path) => std::fs::write(path, import.report.to_json())
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => Ok(()),
    };
    if let Err(e) = written.and(report) {
        eprintln!("error: {e}");
        return exit::RUNTIME;
    }
    exit::OK
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_parse() {
        assert_eq!(super::millis("5s"), Some(5000));
        assert_eq!(super::millis("250ms"), Some(250));
        assert_eq!(super::millis("1.5s"), Some(1500));
        assert_eq!(super::millis("soon"), None);
    }
}
