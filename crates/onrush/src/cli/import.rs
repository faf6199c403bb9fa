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
    // The converted scripts' module goes beside the plan, named after it (or after the JMX
    // when the plan goes to standard output: relative paths then assume the JMX's folder).
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plan".into())
    };
    let (script_dir, script_file) = match &args.out {
        Some(out) => (dir_of(out), format!("{}.jmeter.js", stem(out))),
        None => (dir_of(&args.jmx), format!("{}.jmeter.js", stem(&args.jmx))),
    };
    let options = onrush_import::Options {
        base_dir: dir_of(&args.jmx),
        source_name: args.jmx.display().to_string(),
        plan_dir: args.out.as_deref().map(dir_of),
        script_file,
        check_js: Some(check_js),
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
    let written = written.and_then(|()| match &import.script {
        Some(m) => {
            let path = script_dir.join(&m.file);
            std::fs::write(&path, &m.source)
                .map(|()| eprintln!("wrote {} (the converted JMeter scripts)", path.display()))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        }
        None => Ok(()),
    });
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

/// Whether a converted script's function parses, with the engine plans run on (QuickJS): the
/// importer reports one that does not instead of writing a plan that fails to load.
fn check_js(function: &str) -> Result<(), String> {
    thread_local! {
        static ENGINE: std::cell::RefCell<Option<onrush_script::ScriptsBuilder>> =
            const { std::cell::RefCell::new(None) };
    }
    ENGINE.with(|e| {
        let mut e = e.borrow_mut();
        if e.is_none() {
            let builder = onrush_script::load(Path::new("."), &[], onrush_script::DEFAULT_TIMEOUT)
                .map_err(|e| e.to_string())?;
            *e = Some(builder);
        }
        let builder = e.as_mut().expect("made above");
        // Checked as statements: `export` belongs to the module's top level only.
        let code = function.replacen("export function", "function", 1);
        builder.inline(&code, false, "import").map(|_| ())
    })
}
