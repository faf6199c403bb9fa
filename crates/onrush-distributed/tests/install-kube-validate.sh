#!/usr/bin/env bash
# Builds kube-validate (tests/kube-validate: a Go program over the Kubernetes API's own types,
# k8s.io/api and k8s.io/apimachinery v0.37.2, pinned by its go.sum), which the kube test feeds
# every object `onrush kube render` writes. Modules come from the Go module proxy; a Go
# toolchain too when Debian's is older than the module needs (GOTOOLCHAIN=auto).
#
# The binary goes to ${ONRUSH_TOOLS:-$HOME/.cache/onrush-tools}/bin/kube-validate. Idempotent:
# rebuilt only when its sources change. Under CI=true the test fails when it is missing;
# elsewhere it is skipped with a message.
set -euo pipefail
src="$(cd "$(dirname "$0")/kube-validate" && pwd)"
tools="${ONRUSH_TOOLS:-$HOME/.cache/onrush-tools}"
bin="$tools/bin/kube-validate"
stamp="$tools/bin/kube-validate.sha256"
want="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -d' ' -f1)"
if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "install-kube-validate: $bin is up to date"
  exit 0
fi
export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"
if ! command -v go >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-kube-validate: need root (or sudo) to apt-get install golang-go" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends golang-go >/dev/null
fi
mkdir -p "$tools/bin"
# -mod=readonly: go.sum is the truth; a module that does not match it is an error, not an update.
(cd "$src" && GOTOOLCHAIN=auto GOFLAGS=-mod=readonly go build -trimpath -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
echo "$want" > "$stamp"
echo "install-kube-validate: built $bin ($(cd "$src" && GOTOOLCHAIN=auto go version))"
