//! The plan and every file it refers to, sent to each agent: read and hashed once on the
//! controller, written on the agent under a folder of its own at the same absolute paths,
//! so that every path the plan gives (relative, with `..`, or absolute) resolves there as it
//! did on the controller.

use std::path::{Component, Path, PathBuf};

use ring::digest;

use crate::wire::FileMeta;

/// The files of a bundle with their bytes, the plan first.
pub struct Bundle {
    pub files: Vec<(FileMeta, Vec<u8>)>,
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    digest::digest(&digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Bundle {
    /// Reads `plan` and `files` (as `Plan::files` lists them).
    pub fn read(plan: &Path, files: &[PathBuf]) -> Result<Bundle, String> {
        let mut out = Vec::new();
        for path in std::iter::once(plan).chain(files.iter().map(PathBuf::as_path)) {
            let absolute =
                std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let bytes = std::fs::read(&absolute).map_err(|e| {
                format!(
                    "cannot read {} to send it to the agents: {e}",
                    path.display()
                )
            })?;
            out.push((
                FileMeta {
                    path: absolute.to_string_lossy().into_owned(),
                    len: bytes.len() as u64,
                    sha256: sha256_hex(&bytes),
                },
                bytes,
            ));
        }
        Ok(Bundle { files: out })
    }

    /// The plan's path as the agent will find it (the first file).
    pub fn plan_path(&self) -> &str {
        &self.files[0].0.path
    }

    /// The bytes sent to each agent.
    pub fn len(&self) -> u64 {
        self.files.iter().map(|(m, _)| m.len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Where the controller's `path` goes under the agent's `root`; `None` for a path that is
/// not absolute or climbs out (`..` after normalisation), which a controller never sends.
pub fn place(root: &Path, path: &str) -> Option<PathBuf> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    let mut out = root.to_path_buf();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            Component::ParentDir => return None,
        }
    }
    Some(out)
}

/// Checks a received file against its announced hash and writes it under `root`.
pub fn write(root: &Path, meta: &FileMeta, bytes: &[u8]) -> Result<PathBuf, String> {
    if sha256_hex(bytes) != meta.sha256 {
        return Err(format!(
            "{}: the bytes received do not match the controller's hash",
            meta.path
        ));
    }
    let at = place(root, &meta.path)
        .ok_or_else(|| format!("{}: refused: not a plain absolute path", meta.path))?;
    if let Some(dir) = at.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&at, bytes).map_err(|e| format!("{}: {e}", at.display()))?;
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_placed_under_the_root_and_climbing_out_is_refused() {
        let root = Path::new("/tmp/agent");
        assert_eq!(
            place(root, "/home/u/plans/users.csv"),
            Some(PathBuf::from("/tmp/agent/home/u/plans/users.csv"))
        );
        assert_eq!(place(root, "/home/u/../../etc/passwd"), None);
        assert_eq!(place(root, "relative.csv"), None);
    }

    #[test]
    fn a_file_whose_hash_differs_is_refused() {
        let meta = FileMeta {
            path: "/x/a.csv".into(),
            len: 3,
            sha256: sha256_hex(b"abc"),
        };
        let root = std::env::temp_dir().join(format!(
            "onrush-bundle-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        assert!(write(&root, &meta, b"abd").unwrap_err().contains("hash"));
        let at = write(&root, &meta, b"abc").unwrap();
        assert_eq!(std::fs::read(&at).unwrap(), b"abc");
        let _ = std::fs::remove_dir_all(&root);
    }
}
