#!/usr/bin/env bash
# tests/curl_import.rs compares what `onrush import curl` sends with what real curl sends.
set -euo pipefail
if ! command -v curl >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null
fi
