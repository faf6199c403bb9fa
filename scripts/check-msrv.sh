#!/usr/bin/env bash
# Fails when the lockfile needs a newer Rust than the workspace declares.
#
# The declared MSRV is `rust-version` of [workspace.package] in the root Cargo.toml. Every locked
# dependency (every package of Cargo.lock, all platforms: the promise is for any host) whose own
# `rust-version` exceeds it is listed, and so is any workspace crate that declares a different
# `rust-version` than the workspace (an override that disagrees). A crate declaring none is only
# noted. Why: a `cargo update` can pull a dependency that needs a newer compiler than the one we
# say we support, and nothing else would notice until someone builds with that compiler.
#
#   bash scripts/check-msrv.sh
#
# Needs cargo and python3; `cargo metadata --locked` reads Cargo.lock as it is (it fails if the
# lockfile is out of date) and may fetch crate manifests from crates.io, nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

metadata=$(mktemp)
trap 'rm -f "$metadata"' EXIT
cargo metadata --format-version 1 --locked >"$metadata"

python3 - "$metadata" Cargo.toml <<'EOF'
import json
import re
import sys

metadata_path, manifest_path = sys.argv[1], sys.argv[2]


def version_key(v):
    """'1.89' and '1.89.0' compare equal; missing parts count as 0."""
    parts = [int(x) for x in re.findall(r"\d+", v)[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def declared_msrv(path):
    text = open(path, encoding="utf-8").read()
    try:
        import tomllib  # Python 3.11+

        return tomllib.loads(text)["workspace"]["package"]["rust-version"]
    except ImportError:
        # Older Python: the [workspace.package] table's rust-version line.
        section = re.search(r"^\[workspace\.package\](.*?)(^\[|\Z)", text, re.S | re.M)
        found = section and re.search(r'^rust-version\s*=\s*"([^"]+)"', section.group(1), re.M)
        if not found:
            raise KeyError("rust-version")
        return found.group(1)


try:
    declared = declared_msrv(manifest_path)
except KeyError:
    sys.exit("check-msrv: no rust-version in [workspace.package] of Cargo.toml")

meta = json.load(open(metadata_path, encoding="utf-8"))
members = set(meta["workspace_members"])
problems = []

too_new = sorted(
    (
        (p["rust_version"], p["name"], p["version"])
        for p in meta["packages"]
        if p["id"] not in members
        and p.get("rust_version")
        and version_key(p["rust_version"]) > version_key(declared)
    ),
    key=lambda r: version_key(r[0]),
    reverse=True,
)
SHOWN = 20  # the highest ones; the rest only counted
for rv, name, version in too_new[:SHOWN]:
    problems.append(f"dependency {name} {version} needs Rust {rv}")
if len(too_new) > SHOWN:
    problems.append(f"... and {len(too_new) - SHOWN} more dependencies above {declared}")

for p in sorted(meta["packages"], key=lambda p: p["name"]):
    if p["id"] not in members:
        continue
    rv = p.get("rust_version")
    if rv is None:
        print(
            f"check-msrv: note: crate {p['name']} declares no rust-version "
            "(add `rust-version.workspace = true`)",
            file=sys.stderr,
        )
    elif version_key(rv) != version_key(declared):
        problems.append(
            f"crate {p['name']} declares rust-version {rv}, the workspace {declared}"
        )

highest = max(
    (p["rust_version"] for p in meta["packages"] if p["id"] not in members and p.get("rust_version")),
    key=version_key,
    default=None,
)
if problems:
    print(f"check-msrv: the workspace declares rust-version {declared}, but:", file=sys.stderr)
    for line in problems:
        print(f"  {line}", file=sys.stderr)
    print(
        "Raise rust-version in [workspace.package] of Cargo.toml (and drop per-crate "
        "overrides), or pin the dependencies back (`cargo update -p NAME --precise VERSION`).",
        file=sys.stderr,
    )
    sys.exit(1)
print(f"check-msrv: ok: rust-version {declared}; the highest a locked dependency needs is {highest}")
EOF
