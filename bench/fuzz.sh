#!/usr/bin/env bash
# Coverage-guided fuzzing of one onrush fuzz target with AFL++ (cargo-afl), for SECONDS.
#
#   bench/fuzz.sh TARGET SECONDS [--merge]
#
# TARGET is one of `cargo run -p onrush-fuzz --release -- --list`. Needs cargo-afl
# (`cargo install cargo-afl`; it builds AFL++ with the machine's C compiler on first use). The
# target's corpus (fuzz/corpus/TARGET) is the starting queue; the run's output is in
# target/fuzz-afl/TARGET. At the end it prints AFL's executions, rate, crashes, hangs and queue
# size, and lists the crashes (replay one with `onrush-fuzz TARGET --replay FILE`).
# --merge: minimise the queue (afl-cmin) and add the inputs it keeps that are new to the
# corpus as fuzz/corpus/TARGET/afl-<hash> (the smallest 200 at most), so that `cargo test`
# replays them from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: bench/fuzz.sh TARGET SECONDS [--merge]"
target=${1:?$usage}
seconds=${2:?$usage}
merge=${3:-}
export PATH="$HOME/.cargo/bin:$PATH"
if ! cargo afl --version >/dev/null 2>&1; then
  echo "cargo-afl is not installed: cargo install cargo-afl" >&2
  exit 2
fi
# Instrumented builds have their own target folder: they never mix with the normal ones.
base=${CARGO_TARGET_DIR:-$PWD/target}
out=$PWD/target/fuzz-afl/$target
mkdir -p "$out"
CARGO_TARGET_DIR=$base cargo build -q --release -p onrush-fuzz
"$base/release/onrush-fuzz" --dict "$target" >"$out.dict"
(cd fuzz/afl && CARGO_TARGET_DIR=$base/afl cargo afl build -q --release)
bin=$base/afl/release/onrush-fuzz-afl
rm -rf "$out"
# No CPU-frequency or core-pattern checks (a shared machine); -t: an input that takes over 2 s
# is a hang (the targets promise bounded time).
AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 \
  ONRUSH_FUZZ_TARGET=$target \
  cargo afl fuzz -i "fuzz/corpus/$target" -o "$out" -x "$out.dict" -t 2000 -V "$seconds" \
  -- "$bin" >"$out.log" 2>&1 || { tail -20 "$out.log"; exit 1; }
stats=$out/default/fuzzer_stats
field() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
echo "$target: $(field execs_done) executions in $(field run_time) s ($(field execs_per_sec)/s)," \
  "$(field saved_crashes) crashes, $(field saved_hangs) hangs, queue $(field corpus_count)," \
  "edges $(field edges_found)"
for crash in "$out"/default/crashes/id:*; do
  [ -e "$crash" ] && echo "crash: $crash"
done
if [ "$merge" = "--merge" ]; then
  min=$out.cmin
  rm -rf "$min"
  ONRUSH_FUZZ_TARGET=$target AFL_SKIP_CPUFREQ=1 \
    cargo afl cmin -i "$out/default/queue" -o "$min" -t 2000 -- "$bin" >"$out.cmin.log" 2>&1
  existing=$(sha256sum "fuzz/corpus/$target"/* | cut -d' ' -f1)
  added=0
  # The smallest first, at most ONRUSH_FUZZ_MERGE_MAX (200) new files: the corpus lives in
  # the repository and CI replays it, so it stays small.
  for f in $(ls -Sr "$min"/*); do
    [ "$added" -ge "${ONRUSH_FUZZ_MERGE_MAX:-200}" ] && break
    hash=$(sha256sum "$f" | cut -d' ' -f1)
    if ! grep -qx "$hash" <<<"$existing"; then
      cp "$f" "fuzz/corpus/$target/afl-${hash:0:16}"
      added=$((added + 1))
    fi
  done
  echo "$target: afl-cmin kept $(ls "$min" | wc -l) inputs; $added new ones added to fuzz/corpus/$target"
fi
