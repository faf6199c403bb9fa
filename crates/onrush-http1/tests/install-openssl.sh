#!/bin/sh
# Installs the openssl command-line tool, which tests/tls_options.rs uses to make PKCS#12 files
# the way users make them (`openssl pkcs12 -export`, with and without `-legacy`), so that onrush
# is tested against real OpenSSL output and not only against its PKCS#12 library's own writer.
# CI setup (scripts/setup.sh) calls this before `cargo test`; under CI=true the test fails when
# openssl is missing. Debian/Ubuntu: package openssl.
set -eu

if command -v openssl >/dev/null 2>&1; then
    echo "openssl is installed: $(command -v openssl)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-openssl.sh: not root and no sudo; install openssl yourself" >&2
        exit 1
    fi
fi

if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    # Try without refreshing the package lists first (fast when they are current).
    $SUDO apt-get install -y --no-install-recommends openssl \
        || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends openssl; }
elif command -v dnf >/dev/null 2>&1; then
    $SUDO dnf install -y openssl
elif command -v yum >/dev/null 2>&1; then
    $SUDO yum install -y openssl
elif command -v apk >/dev/null 2>&1; then
    $SUDO apk add --no-cache openssl
elif command -v brew >/dev/null 2>&1; then
    brew install openssl
else
    echo "install-openssl.sh: no known package manager; install openssl yourself" >&2
    exit 1
fi

command -v openssl >/dev/null 2>&1 || {
    echo "install-openssl.sh: openssl is still not on PATH" >&2
    exit 1
}
echo "openssl is installed: $(command -v openssl)"
