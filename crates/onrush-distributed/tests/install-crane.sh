#!/usr/bin/env bash
# Builds go-containerregistry's `crane` v0.22.1 from the Go module proxy into
# ${ONRUSH_TOOLS:-$HOME/.cache/onrush-tools}/bin/crane: the image test (and
# scripts/build-image.sh) check the image tar with `crane validate --tarball`, a reader onrush
# did not write. Idempotent: does nothing when that crane is there. Under CI=true the test fails
# when it is missing; elsewhere it is skipped with a message.
set -euo pipefail
tools="${ONRUSH_TOOLS:-$HOME/.cache/onrush-tools}"
if [ -x "$tools/bin/crane" ] && [ "$("$tools/bin/crane" version 2>/dev/null)" = "v0.22.1" ]; then
  echo "install-crane: $tools/bin/crane v0.22.1 is already installed"
  exit 0
fi
export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"
command -v go >/dev/null 2>&1 || bash "$(dirname "$0")/install-kube-validate.sh" >/dev/null
mkdir -p "$tools/bin"
GOBIN="$tools/bin" GOTOOLCHAIN=auto GOFLAGS= go install \
  github.com/google/go-containerregistry/cmd/crane@v0.22.1 2>/dev/null
echo "install-crane: built $tools/bin/crane $("$tools/bin/crane" version)"
