#!/usr/bin/env bash
# tests/har.rs records a HAR with a real Chromium (tests/servers/chromium_har_recorder.js):
# Debian's `chromium` (crates/onrush-report/tests/install-chromium.sh installs it) driven by
# playwright-core from npm, pinned so that the HAR writer does not move under the test (1.61 is
# the last that runs on Debian 12's Node 18).
# playwright-core downloads no browser; it goes into tests/servers/node_modules (git-ignored),
# where Node finds it from the recorder. Idempotent: does nothing when both are there.
set -euo pipefail
VERSION=1.61.1
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/../../onrush-report/tests/install-chromium.sh"
servers="$here/servers"
installed="$servers/node_modules/playwright-core/package.json"
if [ -f "$installed" ] && grep -q "\"version\": \"$VERSION\"" "$installed"; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
# --prefix puts node_modules in servers/; no package.json or lock file is written there.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$servers" --no-save --no-package-lock \
  --no-audit --no-fund --loglevel=error "playwright-core@$VERSION"
node -e "require('$servers/node_modules/playwright-core')" >/dev/null
