//! `onrush-redis`: onrush's command line, with Redis added to onrush's own protocols.

use std::process::ExitCode;

use onrush_protocol::With;

#[global_allocator]
static ALLOCATOR: onrush::Allocator = onrush::Allocator;

fn main() -> ExitCode {
    onrush::main::<With<onrush_protocols::Protocols, onrush_redis::Redis>>()
}
