//! `onrush`: the command line with onrush's own protocols.

use std::process::ExitCode;

/// glibc's malloc, with tokio's small 128-byte-aligned blocks (a socket registration per
/// connection) padded instead of `posix_memalign`ed: see `alloc.rs`.
#[global_allocator]
static ALLOCATOR: onrush::Allocator = onrush::Allocator;

fn main() -> ExitCode {
    onrush::main::<onrush_protocols::Protocols>()
}
