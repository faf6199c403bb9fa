#!/usr/bin/env python3
"""Writes a one-layer container image of a root file system folder as one tar that both
`docker load` / `podman load` (docker-archive: manifest.json) and OCI tools (oci-layout,
index.json, blobs/sha256) read, without a container engine and without a base image.

    oci-image.py --rootfs DIR --tag onrush:0.1.0 --entrypoint /onrush --user 65532:65532 --out FILE

The layer is reproducible: entries sorted, owned by root (but for --own PATH=UID:GID), mtime
fixed (SOURCE_DATE_EPOCH or 0), so the same rootfs gives the same digests. Standard library
only (tarfile, hashlib, json)."""

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile


def layer_tar(rootfs, owners, mtime):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        paths = []
        for dirpath, dirnames, filenames in os.walk(rootfs):
            dirnames.sort()
            for name in dirnames + sorted(filenames):
                paths.append(os.path.join(dirpath, name))
        for full in sorted(paths):
            rel = os.path.relpath(full, rootfs)
            info = tar.gettarinfo(full, arcname=rel)
            info.uid, info.gid = owners.get("/" + rel, (0, 0))
            info.uname = info.gname = ""
            info.mtime = mtime
            if info.isreg():
                with open(full, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return buf.getvalue()


def sha(data):
    return hashlib.sha256(data).hexdigest()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rootfs", required=True)
    p.add_argument("--tag", required=True, help="NAME:VERSION")
    p.add_argument("--entrypoint", required=True)
    p.add_argument("--user", default="65532:65532")
    p.add_argument("--workdir", default="/")
    p.add_argument("--own", action="append", default=[], help="PATH=UID:GID (repeatable)")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if ":" not in a.tag:
        sys.exit(f"oci-image.py: --tag {a.tag!r}: expected NAME:VERSION")
    owners = {}
    for o in a.own:
        path, _, ids = o.partition("=")
        uid, _, gid = ids.partition(":")
        owners[path] = (int(uid), int(gid))
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    layer = layer_tar(a.rootfs, owners, mtime)
    layer_digest = sha(layer)
    created = "1970-01-01T00:00:00Z" if mtime == 0 else \
        __import__("datetime").datetime.fromtimestamp(mtime, __import__("datetime").timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    name, _, version = a.tag.rpartition(":")
    config = {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "User": a.user,
            "Entrypoint": [a.entrypoint],
            "WorkingDir": a.workdir,
            "Env": ["PATH=/"],
            "Labels": {"org.opencontainers.image.title": name,
                       "org.opencontainers.image.version": version},
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + layer_digest]},
        "history": [{"created": created, "created_by": "scripts/oci-image.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    config_digest = sha(config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:" + config_digest, "size": len(config_bytes)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": "sha256:" + layer_digest, "size": len(layer)}],
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    manifest_digest = sha(manifest_bytes)
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": "sha256:" + manifest_digest, "size": len(manifest_bytes),
                       "annotations": {"io.containerd.image.name": a.tag,
                                       "org.opencontainers.image.ref.name": version}}],
    }
    # docker load reads manifest.json; its paths may point into the OCI blobs (Docker 25+
    # writes `docker save` this way), so each blob is stored once.
    docker_manifest = [{"Config": "blobs/sha256/" + config_digest,
                        "RepoTags": [a.tag],
                        "Layers": ["blobs/sha256/" + layer_digest]}]
    files = [
        ("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
        ("index.json", json.dumps(index, sort_keys=True).encode()),
        ("manifest.json", json.dumps(docker_manifest).encode()),
        ("blobs/sha256/" + config_digest, config_bytes),
        ("blobs/sha256/" + manifest_digest, manifest_bytes),
        ("blobs/sha256/" + layer_digest, layer),
    ]
    tmp = a.out + ".tmp"
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ["blobs", "blobs/sha256"]:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(info)
        for path, data in files:
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, mtime
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, a.out)
    print(f"{a.out}: {a.tag}, manifest sha256:{manifest_digest}, layer {len(layer)} bytes")


if __name__ == "__main__":
    main()
