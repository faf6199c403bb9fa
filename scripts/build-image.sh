#!/usr/bin/env bash
# Builds a minimal container image of onrush without a container engine and without pulling a
# base image: the onrush binary (static, or with exactly the shared libraries it loads), an
# /etc/passwd and /etc/group naming the non-root user 65532 (`onrush`), /tmp and /work, and
# nothing else: no shell, no package manager. Written as one tar that `docker load`,
# `podman load` (docker-archive) and OCI tools (an OCI layout in the same tar) read, tagged
# onrush:<version>.
#
#   scripts/build-image.sh                      # release build, then dist/onrush-<version>.tar
#   scripts/build-image.sh --binary PATH        # an existing onrush binary instead
#   scripts/build-image.sh --out FILE --tag NAME:VERSION
#
# The release build is static (musl) when the x86_64-unknown-linux-musl target is installed
# (`rustup target add x86_64-unknown-linux-musl`); otherwise it is glibc's, and the image holds
# the loader and libraries `ldd` lists (glibc >= 2.34 resolves names through /etc/hosts and
# DNS without loading NSS modules, so the agents find the controller's Service).
#
# Checks, before it says done: the image runs `onrush --version` from its own root file system
# (chroot, as root, or inside `unshare -r`), and `crane validate --tarball` (go-containerregistry
# v0.22.1, built from the Go module proxy into ~/.cache/onrush-tools/bin when missing) reads the
# tar, checks every digest and the layer's diff id. Push it with docs/distributed.md's commands.
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
binary="" out="" tag="onrush:$version"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    *) echo "build-image.sh: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
  esac
done
out="${out:-dist/onrush-$version.tar}"
mkdir -p "$(dirname "$out")"
if [ -z "$binary" ]; then
  if rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
    cargo build --release -p onrush --bin onrush --target x86_64-unknown-linux-musl
    binary="${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/onrush"
  else
    cargo build --release -p onrush --bin onrush
    binary="${CARGO_TARGET_DIR:-target}/release/onrush"
  fi
fi
[ -x "$binary" ] || { echo "build-image.sh: $binary is not an executable" >&2; exit 2; }
said="$("$binary" --version)"
case "$said" in
  *"$version"*) ;;
  *) echo "build-image.sh: $binary says '$said', not version $version" >&2; exit 2 ;;
esac

root="$(mktemp -d)"
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
install -m 0755 "$binary" "$root/onrush"
# A dynamic binary takes its loader and libraries along, at the paths it looks for them.
if ldd "$binary" >/dev/null 2>&1; then
  for lib in $(ldd "$binary" | grep -o '/[^ ]*' | sort -u); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  kind="dynamic (glibc), with $(ldd "$binary" | grep -c '/') libraries"
else
  kind="static"
fi
mkdir -p "$root/etc" "$root/tmp" "$root/work"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/:/nonexistent\nonrush:x:65532:65532:onrush:/work:/nonexistent\n' > "$root/etc/passwd"
printf 'root:x:0:\nonrush:x:65532:\n' > "$root/etc/group"
printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"

python3 scripts/oci-image.py --rootfs "$root" --tag "$tag" --entrypoint /onrush \
  --user 65532:65532 --workdir /work --own /work=65532:65532 --out "$out"

crane="$(command -v crane || true)"
tools="${ONRUSH_TOOLS:-$HOME/.cache/onrush-tools}"
if [ -z "$crane" ]; then
  crane="$tools/bin/crane"
  if [ ! -x "$crane" ]; then
    mkdir -p "$tools/bin"
    GOBIN="$tools/bin" GOTOOLCHAIN=auto go install github.com/google/go-containerregistry/cmd/crane@v0.22.1
  fi
fi
"$crane" validate --tarball "$out"
# It runs from the image's own layer alone, as its user: nothing of the host is reachable.
unpacked="$(mktemp -d)"
trap 'rm -rf "$root" "$unpacked"' EXIT
layer="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Layers"][0])' \
  <(tar -xOf "$out" manifest.json))"
tar -xOf "$out" "$layer" | tar -xf - -C "$unpacked"
chmod 0755 "$unpacked"
if [ "$(id -u)" -eq 0 ]; then
  inside="$(chroot --userspec=65532:65532 "$unpacked" /onrush --version)"
else
  inside="$(unshare -r chroot "$unpacked" /onrush --version)"
fi
[ "$inside" = "$said" ] || { echo "build-image.sh: in the image, onrush said '$inside'" >&2; exit 1; }
echo "build-image.sh: $out: $tag ($kind; ran '$inside' as user 65532 from its own layer; $(du -h "$out" | cut -f1))"
echo "  docker load -i $out && docker tag $tag REGISTRY/onrush:$version && docker push REGISTRY/onrush:$version"
echo "  skopeo copy docker-archive:$out docker://REGISTRY/onrush:$version"
