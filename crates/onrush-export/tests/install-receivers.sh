#!/usr/bin/env bash
# Installs the real metric receivers that onrush-export's tests run against, from Debian's
# packages: `prometheus` (the server, which scrapes the exporter, and `promtool`, which checks
# the exposition text) and `influxdb` (InfluxDB 1.x: `influxd`, which takes the line-protocol
# writes and answers InfluxQL queries).
#
# The tests start their own instances on 127.0.0.1 with random ports and temporary data
# directories; nothing here configures or needs the packages' system services, which are
# stopped and disabled where systemd runs them. Under CI=true the tests fail when a receiver
# is missing; elsewhere they are skipped with a loud message.
#
# Idempotent: does nothing when the binaries are already there. Needs root (or sudo) and
# Debian's package archive.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 \
  && command -v influxd >/dev/null 2>&1; then
  echo "install-receivers: prometheus, promtool and influxd are already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-receivers: need root (or sudo) to apt-get install prometheus influxdb" >&2
    exit 1
  fi
fi

$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  prometheus influxdb >/dev/null

# The tests run their own instances; don't leave the packages' services listening.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  $SUDO systemctl disable --now prometheus influxdb >/dev/null 2>&1 || true
fi

for bin in prometheus promtool influxd; do
  if ! command -v "$bin" >/dev/null 2>&1; then
    echo "install-receivers: $bin is still missing after the install" >&2
    exit 1
  fi
done
echo "install-receivers: $(prometheus --version 2>&1 | head -n1); $(influxd version 2>&1 | head -n1)"
