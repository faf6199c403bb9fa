//! The IDL reader: `lexer` (text → tokens), `parse` (tokens → one file's syntax tree),
//! `resolve` (files and their includes → a [`Schema`](resolve::Schema)).

mod lexer;
pub(crate) mod parse;
pub(crate) mod resolve;
