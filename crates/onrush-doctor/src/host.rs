//! The host being inspected: a root under which `proc/...` and `sys/...` are read.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The machine to inspect. [`Host::live`] reads `/proc` and `/sys` and asks the kernel for this
/// process's limits; [`Host::at`] reads a fake tree (`ROOT/proc/...`, `ROOT/sys/...`), for tests.
#[derive(Debug, Clone)]
pub struct Host {
    root: PathBuf,
    live: bool,
    sample_interval: Duration,
    second_sample: Option<PathBuf>,
}

impl Host {
    /// This machine: root `/`; open-files limits from `getrlimit`; CPU sampled over 200 ms.
    pub fn live() -> Host {
        Host {
            root: PathBuf::from("/"),
            live: true,
            sample_interval: Duration::from_millis(200),
            second_sample: None,
        }
    }

    /// A fake tree rooted at `root`: everything, the open-files limits too
    /// (`ROOT/proc/self/limits`), is read from files under it. "This process" (excluded from
    /// the busy processes) is the pid in `ROOT/proc/self/stat`.
    pub fn at(root: impl Into<PathBuf>) -> Host {
        Host {
            root: root.into(),
            live: false,
            sample_interval: Duration::from_millis(200),
            second_sample: None,
        }
    }

    /// How long to wait between the two CPU samples (default 200 ms).
    pub fn with_sample_interval(mut self, interval: Duration) -> Host {
        self.sample_interval = interval;
        self
    }

    /// Takes the second CPU sample (`proc/stat`, `proc/[pid]/stat`) from another tree instead
    /// of reading the same files again after the interval: a fake tree is a snapshot, so a test
    /// gives "the same host, a moment later" as a second tree. No wait happens then.
    pub fn with_second_sample(mut self, root: impl Into<PathBuf>) -> Host {
        self.second_sample = Some(root.into());
        self
    }

    /// The root the files are read under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn is_live(&self) -> bool {
        self.live
    }

    pub(crate) fn sample_interval(&self) -> Duration {
        self.sample_interval
    }

    /// The root of the second CPU sample, if it is another tree.
    pub(crate) fn second_sample(&self) -> Option<&Path> {
        self.second_sample.as_deref()
    }

    /// `ROOT/rel`, `rel` being like "proc/stat".
    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// Reads `ROOT/rel` as text.
    pub(crate) fn read(&self, rel: &str) -> Result<String, Unreadable> {
        read_at(&self.path(rel))
    }

    /// Reads a sysctl by its dotted name ("net.ipv4.tcp_tw_reuse"), trimmed.
    pub(crate) fn sysctl(&self, name: &str) -> Result<String, Unreadable> {
        let rel = format!("proc/sys/{}", name.replace('.', "/"));
        self.read(&rel).map(|s| s.trim().to_string())
    }

    /// A sysctl holding one integer.
    pub(crate) fn sysctl_u64(&self, name: &str) -> Result<u64, Unreadable> {
        let text = self.sysctl(name)?;
        text.parse().map_err(|_| Unreadable {
            path: self.path(&format!("proc/sys/{}", name.replace('.', "/"))),
            why: format!("not a number: {text:?}"),
            missing: false,
        })
    }
}

pub(crate) fn read_at(path: &Path) -> Result<String, Unreadable> {
    std::fs::read_to_string(path).map_err(|e| Unreadable {
        path: path.to_path_buf(),
        missing: e.kind() == io::ErrorKind::NotFound,
        why: e.to_string(),
    })
}

/// A file that could not be read or parsed; becomes a `Warn` finding "cannot read ...".
#[derive(Debug, Clone)]
pub(crate) struct Unreadable {
    pub path: PathBuf,
    pub why: String,
    /// The file does not exist (as opposed to unreadable or malformed).
    pub missing: bool,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot read {}: {}", self.path.display(), self.why)
    }
}
