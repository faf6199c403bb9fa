//! onrush as a library: the whole command line, for the protocols a binary passes it.
//!
//! The shipped `onrush` binary is `onrush::main::<onrush_protocols::Protocols>()`. A binary
//! with a protocol of its own (docs/extending.md) is the same line with
//! `onrush_protocol::With<onrush_protocols::Protocols, MyProtocol>`, and every command
//! speaks the new step.
//!
//! Stable (semver) API: [`main`] and [`Allocator`]. The modules under [`cli`] are public for
//! onrush's own binary and tests; their items may change in any release.

mod alloc;
pub mod cli;
mod linked;
mod sys;

pub use alloc::Allocator;
pub use linked::main;
