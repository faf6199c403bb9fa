//! The format version of the result files, and what a reader says when it differs.
//!
//! `intervals.jsonl` carries it in its header line and `summary.json` at its top level, both
//! as `"onrush_results"`. A file without it was written before the field existed (version 1).
//! The number changes only when a reader of the previous version would misread a file of the
//! new one (a field changing meaning or type); new fields and new line kinds do not change it,
//! since readers ignore what they do not know.

/// Format version of the result files this onrush writes and reads (`onrush_results`).
pub const RESULTS_FORMAT_VERSION: u32 = 1;

/// The version of a file without `onrush_results` (written before the field existed).
pub(crate) fn absent_version() -> u32 {
    1
}

/// What to tell someone whose file is of version `found` when this onrush reads `supported`.
pub(crate) fn mismatch_message(found: u32, supported: u32) -> String {
    if found > supported {
        format!(
            "results format {found} is newer than this onrush reads ({supported}): the file was \
             written by a newer onrush; upgrade onrush to read it, or re-run the test with this one"
        )
    } else {
        format!(
            "results format {found} is older than this onrush reads ({supported}): the file was \
             written by an older onrush; read it with the onrush that wrote it, or re-run the \
             test with this one"
        )
    }
}
