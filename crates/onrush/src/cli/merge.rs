//! `onrush merge`: several result directories into one, percentiles from merged histograms.

use std::path::PathBuf;

use clap::Args;

use super::exit;

#[derive(Args)]
pub struct MergeArgs {
    /// Result directories to merge (each holds intervals.jsonl).
    #[arg(required = true, num_args = 1..)]
    dirs: Vec<PathBuf>,
    /// Where to write the merged result (not one of the directories merged).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

pub fn run(args: MergeArgs) -> i32 {
    for dir in &args.dirs {
        super::note_dir_state(dir, true);
    }
    match onrush_metrics::merge(&args.dirs, &args.out) {
        Ok(summary) => {
            onrush_metrics::print_summary(&summary, &mut std::io::stdout().lock());
            println!("merged results: {}", args.out.display());
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::USAGE
        }
    }
}
