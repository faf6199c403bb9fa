//! The plan and its files on a cluster: cut into parts spread over as many ConfigMaps as they
//! need, and put back together in the controller's pod by `onrush kube unpack` (an init
//! container of the same image).
//!
//! Why ConfigMaps and not Secrets: both are capped at 1 MiB each, so a Secret would not hold
//! more; plan files are data, not credentials, and a Secret would widen who must be allowed to
//! read Secrets in the namespace. The run's token and certificates stay in the one Secret.
//!
//! Why parts and an unpack step: a ConfigMap holds at most 1 MiB (the API server refuses more;
//! etcd's request limit is 1.5 MiB) and a file larger than that cannot be mounted from one.
//! Every part is a key of its own, unique across the ConfigMaps, so one projected volume shows
//! them all in one folder; `index.json` (in the first ConfigMap) lists each file's path, size,
//! SHA-256 and parts in order, and unpack checks each file's size and hash as it writes it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bundle::sha256_hex;

/// The most bytes of file content one ConfigMap carries. Half the API's 1 MiB, so that binary
/// parts (base64 in the object, 4/3 larger) stay under etcd's 1.5 MiB request limit too.
pub const PART_BYTES: usize = 512 * 1024;

/// The index's key in the first ConfigMap.
pub const INDEX_KEY: &str = "index.json";

/// The plan's files: (path relative to the plan's folder, bytes); the plan itself first, as
/// `plan.yaml`.
pub struct PlanFiles {
    pub entries: Vec<(String, Vec<u8>)>,
}

impl PlanFiles {
    /// The plan and `files`, which must all be inside the plan's folder (a pod sees only what
    /// the ConfigMaps hold).
    pub fn read(plan: &Path, files: &[PathBuf]) -> Result<PlanFiles, String> {
        let plan_abs = std::path::absolute(plan).map_err(|e| format!("{}: {e}", plan.display()))?;
        let base = plan_abs.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut entries = Vec::new();
        for (k, path) in std::iter::once(&plan_abs).chain(files.iter()).enumerate() {
            let abs = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let abs = normalise(&abs);
            let rel = abs.strip_prefix(&base).map_err(|_| {
                format!(
                    "{}: outside the plan's folder ({}); for Kubernetes, put every file the plan \
                     uses in its folder or below",
                    path.display(),
                    base.display()
                )
            })?;
            let bytes =
                std::fs::read(&abs).map_err(|e| format!("cannot read {}: {e}", abs.display()))?;
            let rel = if k == 0 {
                "plan.yaml".to_string()
            } else {
                rel.to_string_lossy().into_owned()
            };
            entries.push((rel, bytes));
        }
        Ok(PlanFiles { entries })
    }
}

/// `a/./b/../c` → `a/c` (no file system access).
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// What `index.json` says about one file.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct IndexEntry {
    pub path: String,
    pub size: u64,
    pub sha256: String,
    /// Keys of the parts, in order (each a file in the bundle folder).
    pub parts: Vec<String>,
}

/// One ConfigMap's content: text parts go to `data`, others to `binaryData`.
#[derive(Default)]
pub struct Part {
    pub text: BTreeMap<String, String>,
    pub binary: BTreeMap<String, Vec<u8>>,
    size: usize,
}

/// The files cut into parts and dealt into ConfigMaps of at most [`PART_BYTES`] each, in file
/// order; the first ConfigMap also holds the index.
pub fn pack(files: &PlanFiles) -> Vec<Part> {
    let mut maps = vec![Part::default()];
    let mut index = Vec::new();
    for (n, (path, bytes)) in files.entries.iter().enumerate() {
        let text = std::str::from_utf8(bytes).ok();
        let mut parts = Vec::new();
        let mut rest: &[u8] = bytes;
        loop {
            let room = PART_BYTES - maps.last().map_or(0, |m| m.size);
            // Start a new ConfigMap rather than leave a sliver: a small file stays whole.
            if room < PART_BYTES / 8 && room < rest.len() {
                maps.push(Part::default());
                continue;
            }
            let mut take = rest.len().min(room);
            if text.is_some() {
                // Cut text only between characters, so each part is valid UTF-8 (readable in
                // `data`, diffable by GitOps tools).
                while take < rest.len() && take > 0 && (rest[take] & 0xc0) == 0x80 {
                    take -= 1;
                }
            }
            let key = format!("f{n}.{}", parts.len());
            let map = maps.last_mut().expect("one map at least");
            let (chunk, tail) = rest.split_at(take);
            map.size += chunk.len();
            match text {
                Some(_) => {
                    let s = std::str::from_utf8(chunk).expect("cut at a character boundary");
                    map.text.insert(key.clone(), s.to_string());
                }
                None => {
                    map.binary.insert(key.clone(), chunk.to_vec());
                }
            }
            parts.push(key);
            rest = tail;
            if rest.is_empty() {
                break;
            }
            maps.push(Part::default());
        }
        index.push(IndexEntry {
            path: path.clone(),
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            parts,
        });
    }
    let index = serde_json::to_string_pretty(&index).expect("plain data");
    maps[0].text.insert(INDEX_KEY.into(), index);
    maps
}

/// `onrush kube unpack BUNDLE OUT`: writes each file of `BUNDLE/index.json` under `OUT` from
/// its parts, checking its size and SHA-256. Returns how many files were written.
pub fn unpack(bundle: &Path, out: &Path) -> Result<usize, String> {
    let index_path = bundle.join(INDEX_KEY);
    let text = std::fs::read_to_string(&index_path)
        .map_err(|e| format!("cannot read {}: {e}", index_path.display()))?;
    let index: Vec<IndexEntry> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not an onrush bundle index: {e}", index_path.display()))?;
    for entry in &index {
        let rel = Path::new(&entry.path);
        if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(format!(
                "{}: path {:?} must be relative and stay inside the folder",
                index_path.display(),
                entry.path
            ));
        }
        let dest = out.join(rel);
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let mut file = std::fs::File::create(&dest)
            .map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
        // Part by part, hashed as it goes: a file may be far larger than the init
        // container's memory limit.
        let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
        let mut size = 0u64;
        for key in &entry.parts {
            if key.contains('/') || key.starts_with('.') {
                return Err(format!("{}: bad part name {key:?}", index_path.display()));
            }
            let p = bundle.join(key);
            let part = std::fs::read(&p).map_err(|e| {
                format!(
                    "cannot read {} (part of {}): {e}; was a ConfigMap of this run not applied?",
                    p.display(),
                    entry.path
                )
            })?;
            hash.update(&part);
            size += part.len() as u64;
            file.write_all(&part)
                .map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
        }
        let sha256: String = hash
            .finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if size != entry.size || sha256 != entry.sha256 {
            let _ = std::fs::remove_file(&dest);
            return Err(format!(
                "{}: reassembled {size} bytes whose SHA-256 is not the index's ({} bytes, {}): \
                 the ConfigMaps are of different renders; apply one render's file whole",
                entry.path, entry.size, entry.sha256
            ));
        }
    }
    Ok(index.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kubelet does with a projected volume of the ConfigMaps: every key a file.
    fn mount(maps: &[Part], dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        for m in maps {
            for (k, v) in &m.text {
                std::fs::write(dir.join(k), v).unwrap();
            }
            for (k, v) in &m.binary {
                std::fs::write(dir.join(k), v).unwrap();
            }
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("onrush-kube-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn large_files_are_split_over_configmaps_under_the_limit_and_come_back_whole() {
        // 3 MiB of text with multi-byte characters (cuts must fall between them), 1.5 MiB of
        // binary, and small files that stay whole.
        let text: String = "héllo wörld ✓ ".repeat(3 * 1024 * 1024 / 18);
        let binary: Vec<u8> = (0..1_500_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let files = PlanFiles {
            entries: vec![
                ("plan.yaml".into(), b"target: http://x\n".to_vec()),
                ("data/big.csv".into(), text.clone().into_bytes()),
                ("body.bin".into(), binary.clone()),
                ("data/small.csv".into(), b"a\n".to_vec()),
            ],
        };
        let maps = pack(&files);
        assert!(maps.len() >= 9, "{} ConfigMaps", maps.len());
        let mut keys = std::collections::BTreeSet::new();
        for m in &maps {
            assert!(m.size <= PART_BYTES, "{}", m.size);
            for k in m.text.keys().chain(m.binary.keys()) {
                assert!(keys.insert(k.clone()), "key {k} twice");
            }
        }
        let bundle = tmp("bundle");
        let out = tmp("out");
        mount(&maps, &bundle);
        assert_eq!(unpack(&bundle, &out).unwrap(), 4);
        assert_eq!(
            std::fs::read_to_string(out.join("data/big.csv")).unwrap(),
            text
        );
        assert_eq!(std::fs::read(out.join("body.bin")).unwrap(), binary);
        assert_eq!(std::fs::read(out.join("data/small.csv")).unwrap(), b"a\n");
        // A part of another render: refused, naming the file.
        let first_big = maps.iter().find(|m| m.text.contains_key("f1.1")).unwrap();
        let mut other = first_big.text["f1.1"].clone();
        other.replace_range(0..1, "X");
        std::fs::write(bundle.join("f1.1"), other).unwrap();
        let e = unpack(&bundle, &tmp("out2")).unwrap_err();
        assert!(
            e.contains("data/big.csv") && e.contains("different renders"),
            "{e}"
        );
        std::fs::write(bundle.join("f1.1"), &first_big.text["f1.1"]).unwrap();
        // A missing part: named, with the likely cause.
        std::fs::remove_file(bundle.join("f2.0")).unwrap();
        let e = unpack(&bundle, &tmp("out3")).unwrap_err();
        assert!(e.contains("f2.0") && e.contains("not applied"), "{e}");
        for d in [bundle, out, tmp("out2"), tmp("out3")] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn an_index_that_climbs_out_of_the_folder_is_refused() {
        let bundle = tmp("climb");
        std::fs::create_dir_all(&bundle).unwrap();
        std::fs::write(
            bundle.join(INDEX_KEY),
            r#"[{"path":"../etc/passwd","size":0,"sha256":"","parts":[]}]"#,
        )
        .unwrap();
        let e = unpack(&bundle, &tmp("climb-out")).unwrap_err();
        assert!(e.contains("must be relative"), "{e}");
        let _ = std::fs::remove_dir_all(&bundle);
    }
}
