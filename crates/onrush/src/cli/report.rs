//! `onrush report DIR`: the self-contained HTML report of saved results, optionally against a
//! baseline run.

use std::path::PathBuf;

use clap::Args;
use onrush_report::{write_report, ReportOptions};

use super::exit;

#[derive(Args)]
pub struct ReportArgs {
    /// A results directory (summary.json + intervals.jsonl; of a run that was killed,
    /// intervals.jsonl alone: the summary is rebuilt from it).
    dir: PathBuf,
    /// Another results directory to compare with: figures side by side, regressions flagged.
    #[arg(long, value_name = "DIR")]
    baseline: Option<PathBuf>,
    /// Where to write the report [default: DIR/report.html].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Show where the run was made: full local paths (results, baseline, plan) and the load
    /// generator's hostname. Without it, directories and the plan are named by their last
    /// component and the hostname is left out, so the report can be handed to others.
    #[arg(long)]
    show_host: bool,
}

pub fn run(args: ReportArgs) -> i32 {
    super::note_dir_state(&args.dir, true);
    if let Some(baseline) = &args.baseline {
        super::note_dir_state(baseline, true);
    }
    let options = ReportOptions {
        baseline: args.baseline,
        out: args.out,
        show_host: args.show_host,
        live: false,
    };
    match write_report(&args.dir, &options) {
        Ok(path) => {
            println!("report: {}", path.display());
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::USAGE
        }
    }
}
