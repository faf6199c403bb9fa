//! The integration tests of onrush-import, in one binary (one link instead of one per file).

#[path = "corpus.rs"]
mod corpus;
#[path = "mappings.rs"]
mod mappings;
