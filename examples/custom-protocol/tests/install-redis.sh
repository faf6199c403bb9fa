#!/usr/bin/env bash
# examples/custom-protocol's tests run against Debian's real redis-server (its TLS test with a
# CA that the openssl tool makes), and its benchmark (bench/redis.py) against redis-benchmark
# from the same packages.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1 \
  || ! command -v openssl >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools openssl >/dev/null
fi
# The tests start their own servers on free loopback ports (killed by their PIDs): they need
# no system-wide one.
redis-server --version
