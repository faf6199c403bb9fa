#!/usr/bin/env bash
# Installs what building and testing onrush needs on a fresh Debian machine: a Rust toolchain
# with rustfmt and clippy. Benchmarks need more (wrk, nginx): see bench/README.md.
set -euo pipefail
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo rustc >/dev/null
  fi
fi
if command -v rustup >/dev/null 2>&1; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi
cargo --version
