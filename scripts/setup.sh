#!/usr/bin/env bash
# Installs what building and testing onrush needs on a fresh Debian machine: a Rust toolchain with
# rustfmt and clippy, and the real peers the tests run against (xmllint for the JUnit schema,
# Prometheus and InfluxDB receivers, Chromium for the HTML report and, with playwright-core, for
# recording the HAR that `onrush import har` is tested on, valgrind for the instructions that
# `onrush bench` counts, wrk for its `--compare wrk`). Benchmarks need more (nginx): see
# bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo rustc >/dev/null
fi
if command -v rustup >/dev/null 2>&1; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi
for script in crates/*/tests/install-*.sh examples/*/tests/install-*.sh; do
  [ -f "$script" ] && bash "$script"
done
cargo --version
