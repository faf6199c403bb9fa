#!/usr/bin/env bash
# crates/onrush/tests/thrift.rs runs its witness servers with Apache Thrift's own Python library,
# on code that Apache's `thrift` compiler generates from the test IDL at test time. Both pinned
# (the compiler to Debian's release, the library to one PyPI version) so that the servers'
# behaviour does not move under the tests.
set -euo pipefail
VERSION=0.20.0
if ! command -v thrift >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq thrift-compiler >/dev/null
fi
thrift --version
if python3 -c 'import thrift, sys; sys.exit(0 if thrift.__version__ == "'"$VERSION"'" else 1)' >/dev/null 2>&1; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
fi
# A Debian python3 refuses to install into the system's site-packages without the override
# (PEP 668); a python3 of its own (pyenv, a venv) accepts the plain install.
python3 -m pip install --quiet "thrift==$VERSION" 2>/dev/null \
  || python3 -m pip install --quiet --break-system-packages "thrift==$VERSION"
python3 -c 'import thrift.protocol.TCompactProtocol, thrift.TMultiplexedProcessor'
