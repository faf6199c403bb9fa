//! Running a target over its corpus and over mutations of it, in-process (for `cargo test`
//! and the `onrush-fuzz` binary). A failing input is written to a file first, so that it can
//! be replayed (`onrush-fuzz TARGET --replay FILE`) and kept as a regression input.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use crate::mutate::{mutate, Rng};
use crate::Target;

/// The folder of `target`'s corpus in the repository.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// The files of `target`'s corpus, sorted by name (so runs are reproducible).
pub fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Runs `target` on `input`; on a panic, saves the input under `target/fuzz-failures/` and
/// panics again with its path and `what` (which corpus file or seed produced it).
pub fn run_one(target: &Target, input: &[u8], what: &str) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| (target.run)(input))) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-failures");
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(format!("{}-{:016x}", target.name, fnv(input)));
        let _ = std::fs::write(&file, input);
        let msg = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(not a string)");
        panic!(
            "fuzz target {} failed on {what}: {msg}\n  input saved to {}",
            target.name,
            file.display()
        );
    }
}

/// Replays every corpus file; returns how many there were.
pub fn replay(target: &Target) -> usize {
    let files = corpus(target.name);
    for (path, bytes) in &files {
        run_one(target, bytes, &path.display().to_string());
    }
    files.len()
}

/// Runs `execs` mutations of the corpus, from `seed`.
pub fn fuzz(target: &Target, execs: usize, seed: u64) {
    let files: Vec<Vec<u8>> = corpus(target.name).into_iter().map(|(_, b)| b).collect();
    assert!(!files.is_empty(), "{}: empty corpus", target.name);
    let mut rng = Rng::new(seed);
    let mut input = Vec::with_capacity(target.max_len);
    for i in 0..execs {
        input.clear();
        input.extend_from_slice(&files[rng.below(files.len())]);
        let other = &files[rng.below(files.len())];
        mutate(&mut input, other, target.dict, target.max_len, &mut rng);
        run_one(
            target,
            &input,
            &format!(
                "mutation {i} of seed {seed} (`onrush-fuzz {} {execs} {seed}`)",
                target.name
            ),
        );
    }
}

/// FNV-1a, to name saved inputs.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
