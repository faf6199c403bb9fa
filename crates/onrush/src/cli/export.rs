//! `onrush export DIR --csv`: saved results in other formats.

use std::path::PathBuf;

use clap::Args;

use super::exit;

#[derive(Args)]
pub struct ExportArgs {
    /// A results directory (holds intervals.jsonl).
    dir: PathBuf,
    /// The per-second intervals as CSV: one row per second per step, plus a total row.
    #[arg(long, required = true)]
    csv: bool,
    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(args: ExportArgs) -> i32 {
    super::note_dir_state(&args.dir, false);
    let result = match &args.out {
        Some(path) => std::fs::File::create(path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))
            .and_then(|f| {
                let mut w = std::io::BufWriter::new(f);
                onrush_export::export_csv(&args.dir, &mut w).map_err(|e| e.to_string())
            }),
        None => match onrush_export::export_csv(&args.dir, &mut std::io::stdout().lock()) {
            // `onrush export DIR --csv | head`: the reader has what it wanted. A command-line
            // tool ends quietly then, as `cat` does, with no error and code 0.
            Err(onrush_export::ExportError::Write(e))
                if e.kind() == std::io::ErrorKind::BrokenPipe =>
            {
                Ok(())
            }
            other => other.map_err(|e| e.to_string()),
        },
    };
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            exit::USAGE
        }
    }
}
