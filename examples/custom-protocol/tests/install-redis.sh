#!/usr/bin/env bash
# examples/custom-protocol's tests run against Debian's real redis-server, and its benchmark
# (bench/redis.sh) against redis-benchmark from the same package.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi
# The package starts a system-wide server on port 6379 where systemd runs; the tests start
# their own on free ports and need none.
redis-server --version
