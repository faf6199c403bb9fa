#!/usr/bin/env bash
# crates/onrush/tests/http3.rs runs its witness HTTP/3 server with Python's aioquic (a QUIC and
# HTTP/3 stack onrush did not write), pinned so that the server's behaviour does not move under
# the test. Idempotent and quiet: does nothing when aioquic imports already.
set -euo pipefail
VERSION=1.3.0
if python3 -c 'import aioquic' >/dev/null 2>&1; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
fi
# A Debian python3 refuses to install into the system's site-packages without the override
# (PEP 668); a python3 of its own (pyenv, a venv) accepts the plain install.
python3 -m pip install --quiet "aioquic==$VERSION" 2>/dev/null \
  || python3 -m pip install --quiet --break-system-packages "aioquic==$VERSION"
python3 -c 'import aioquic'
