#!/usr/bin/env bash
# tests/bench.rs runs `onrush bench --compare wrk`: wrk on the same work, alone and at the same
# time as onrush, for the ratios the bench prints.
set -euo pipefail
if ! command -v wrk >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
