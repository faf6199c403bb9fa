//! `onrush`: the command-line entry point. Commands only parse flags and delegate.

mod alloc;
mod cli;
mod sys;

use std::process::ExitCode;

use clap::Parser;

/// glibc's malloc, with tokio's small 128-byte-aligned blocks (a socket registration per
/// connection) padded instead of `posix_memalign`ed: see `alloc.rs`.
#[global_allocator]
static ALLOCATOR: alloc::Allocator = alloc::Allocator;

fn main() -> ExitCode {
    onrush_protocols::install_plan_loaders();
    let cli = cli::Cli::parse();
    let code = cli::dispatch(cli);
    ExitCode::from(code as u8)
}
