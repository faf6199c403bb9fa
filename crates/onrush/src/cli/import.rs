//! `onrush import jmx PLAN.jmx [-o plan.yaml] [--report FILE.json] [--strict]`: converts a
//! JMeter plan with onrush-import and writes the plan and the report where the flags say.
//! `onrush import har` (browser recordings) is in `import_har.rs`, `onrush import curl` in
//! `import_curl.rs`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::exit;

#[derive(Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    format: ImportFormat,
}

#[derive(Subcommand)]
enum ImportFormat {
    /// An Apache JMeter plan (.jmx): writes an onrush plan and a conversion report (on stderr).
    Jmx(JmxArgs),
    /// A browser recording (.har): one step per request, grouped by page, with think times and
    /// correlation (values the server sent and the browser sent back become extractors).
    Har(super::import_har::HarArgs),
    /// A pasted curl command: one request step, as a new plan or appended to one (--append).
    Curl(super::import_curl::CurlArgs),
}

#[derive(Args)]
struct JmxArgs {
    /// The JMeter plan.
    jmx: PathBuf,
    /// Write the plan to FILE instead of standard output.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the conversion report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Exit with code 1 when an element was not converted (for CI).
    #[arg(long)]
    strict: bool,
}

pub fn run(args: ImportArgs) -> i32 {
    let args = match args.format {
        ImportFormat::Jmx(args) => args,
        ImportFormat::Har(args) => return super::import_har::run(args),
        ImportFormat::Curl(args) => return super::import_curl::run(args),
    };
    let text = match std::fs::read(&args.jmx) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", args.jmx.display());
            return exit::USAGE;
        }
    };
    let dir_of = |p: &Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let options = onrush_import::Options {
        base_dir: dir_of(&args.jmx),
        source_name: args.jmx.display().to_string(),
        plan_dir: args.out.as_deref().map(dir_of),
    };
    let import = match onrush_import::import_jmx(&text, &options) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {}:{e}", args.jmx.display());
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
    if args.strict && import.report.has_not_converted() {
        eprintln!("--strict: some elements were not converted");
        return exit::THRESHOLDS;
    }
    exit::OK
}
