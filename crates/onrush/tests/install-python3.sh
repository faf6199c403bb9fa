#!/usr/bin/env bash
# tests/tcp.rs runs its witness server with Python's socketserver (tests/servers/line_server.py).
set -euo pipefail
if ! command -v python3 >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null
fi
