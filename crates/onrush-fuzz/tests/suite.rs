//! The fuzz targets' CI part: for each target, every corpus file replayed, then the target's
//! fixed number of mutated inputs from a fixed seed (so a failure reproduces exactly, with the
//! command it prints). The coverage-guided runs are local (bench/fuzz.sh, docs/fuzzing.md).

use onrush_fuzz::runner::{fuzz, replay};
use onrush_fuzz::{target, TARGETS};

/// The seed of the CI runs; change it to explore other mutations (`onrush-fuzz` takes one).
const SEED: u64 = 16;

fn replay_and_fuzz(name: &str) {
    let t = target(name).unwrap();
    let files = replay(t);
    assert!(files > 0, "{name}: no corpus files");
    fuzz(t, t.ci_execs, SEED);
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { replay_and_fuzz(stringify!($name)); })*

        #[test]
        fn every_target_has_a_test_here() {
            let tested = [$(stringify!($name)),*];
            for t in TARGETS {
                assert!(tested.contains(&t.name), "add `{}` to tests/suite.rs", t.name);
            }
        }
    };
}

targets!(
    plan,
    template,
    http1,
    http2,
    hpack,
    decompress,
    extract_body,
    extract_expr,
    feeder,
    results_intervals,
    results_summary,
    results_hist,
    jmx,
);
