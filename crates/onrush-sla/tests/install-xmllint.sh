#!/bin/sh
# Installs xmllint, which tests/junit.rs uses to validate onrush's JUnit XML against
# tests/junit.xsd. CI setup calls this before `cargo test`; under CI=true the test fails when
# xmllint is missing. Debian/Ubuntu: package libxml2-utils.
set -eu

if command -v xmllint >/dev/null 2>&1; then
    echo "xmllint is installed: $(command -v xmllint)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-xmllint.sh: not root and no sudo; install xmllint (Debian/Ubuntu: libxml2-utils) yourself" >&2
        exit 1
    fi
fi

if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    # Try without refreshing the package lists first (fast when they are current).
    $SUDO apt-get install -y --no-install-recommends libxml2-utils \
        || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends libxml2-utils; }
elif command -v dnf >/dev/null 2>&1; then
    $SUDO dnf install -y libxml2
elif command -v yum >/dev/null 2>&1; then
    $SUDO yum install -y libxml2
elif command -v apk >/dev/null 2>&1; then
    $SUDO apk add --no-cache libxml2-utils
elif command -v brew >/dev/null 2>&1; then
    brew install libxml2
else
    echo "install-xmllint.sh: no known package manager; install xmllint (libxml2) yourself" >&2
    exit 1
fi

command -v xmllint >/dev/null 2>&1 || {
    echo "install-xmllint.sh: xmllint is still not on PATH" >&2
    exit 1
}
echo "xmllint is installed: $(command -v xmllint)"
