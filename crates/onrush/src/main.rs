//! `onrush`: the command-line entry point. Commands only parse flags and delegate.

mod cli;
mod sys;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    onrush_protocols::install_plan_loaders();
    let cli = cli::Cli::parse();
    let code = cli::dispatch(cli);
    ExitCode::from(code as u8)
}
