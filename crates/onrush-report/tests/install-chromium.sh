#!/usr/bin/env bash
# Installs headless Chromium (Debian package `chromium`) for onrush-report's browser test
# (tests/browser.rs, tests/timing.rs). Idempotent: does nothing when /usr/bin/chromium exists.
# The project's CI setup calls it; the tests themselves never install anything.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium.sh: no apt-get here; install Chromium so that /usr/bin/chromium exists" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version 2>/dev/null || true
