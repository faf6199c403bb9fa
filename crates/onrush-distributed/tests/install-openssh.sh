#!/usr/bin/env bash
# Installs OpenSSH's server and client (Debian: openssh-server, openssh-client), which the
# `--launch ssh` test runs against: the test starts its own sshd on a private port, with its
# own host key and authorized key, inside a network namespace it creates (or on loopback
# where namespaces cannot be made), and never uses or starts the package's system service.
# Under CI=true the test fails when sshd is missing; elsewhere it is skipped with a message.
#
# Idempotent; needs root (or sudo) and Debian's package archive.
set -euo pipefail

if [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1; then
  echo "install-openssh: $(ssh -V 2>&1) is already installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-openssh: need root (or sudo) to apt-get install openssh-server" >&2
    exit 1
  fi
fi
# Another installer may hold dpkg's lock for a while: wait for it rather than fail.
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
  --no-install-recommends openssh-server openssh-client >/dev/null
# The test runs its own sshd; don't leave the package's service listening on port 22.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  $SUDO systemctl disable --now ssh >/dev/null 2>&1 || true
fi
[ -x /usr/sbin/sshd ] || { echo "install-openssh: /usr/sbin/sshd is still missing" >&2; exit 1; }
echo "install-openssh: $(ssh -V 2>&1)"
