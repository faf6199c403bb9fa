#!/usr/bin/env bash
# crates/onrush/tests/grpc.rs runs its witness server with Python's grpcio (the reference gRPC
# implementation's C core), and generates the server's stubs at test time with grpcio-tools'
# protoc; crates/onrush/tests/grpc_reflection.rs serves reflection with grpcio-reflection; all
# pinned so that the server's behaviour does not move under the test.
set -euo pipefail
VERSION=1.76.0
if python3 -c 'import grpc, grpc_tools, grpc_reflection' >/dev/null 2>&1; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
fi
PACKAGES=("grpcio==$VERSION" "grpcio-tools==$VERSION" "grpcio-reflection==$VERSION")
# A Debian python3 refuses to install into the system's site-packages without the override
# (PEP 668); a python3 of its own (pyenv, a venv) accepts the plain install.
python3 -m pip install --quiet "${PACKAGES[@]}" 2>/dev/null \
  || python3 -m pip install --quiet --break-system-packages "${PACKAGES[@]}"
python3 -c 'import grpc, grpc_tools, grpc_reflection'
