#!/usr/bin/env bash
# tests/bench.rs checks the instructions per request that `onrush bench` counts with valgrind
# (cachegrind) where it is installed.
set -euo pipefail
if ! command -v valgrind >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
fi
