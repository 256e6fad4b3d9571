//! The agent's state directory (default `/var/lib/netrollout`, a hostPath): the last-known-good
//! config, the journal of the apply in progress, and the memory of revisions that failed here.
//!
//! The records and their encoding live in [`crate::state`] (pure); this module runs its write
//! plans ([`crate::state::write_steps`]: temporary file, fsync, rename, fsync of the directory)
//! on the real file system, step by step in the plan's order. A file whose header or checksum
//! does not match, or whose body does not parse, is corrupt: reading it is an error
//! ([`StoreError::Corrupt`]) and nothing is ever applied from it. A person recovers by
//! inspecting and deleting the file.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::state::{self, DiskStep};
pub use crate::state::{
    FAILED_FILE, Failure, Failures, JOURNAL_FILE, Journal, LKG_FILE, LastKnownGood,
};

/// Reading or writing the state directory failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but its checksum, header or content is wrong.
    #[error(
        "state file {path} is corrupt ({reason}); nothing is applied from it. Inspect it, then delete it to let the agent start over"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file system refused a read or write (full, read-only, no permission, ...). The
    /// message names the file, its directory and the errno, and says what to do.
    #[error(
        "cannot {op} state file {path}: {}. The agent changes the network only with its \
         last-known-good backup and journal safely on disk, so it stops here and changes \
         nothing; free space in {} or make it writable (the agent tries again every 5 s)",
        errno(source),
        dir.display()
    )]
    Io {
        /// What was done: `read`, `write`, `sync`, `rename`, `remove`, `create`.
        op: &'static str,
        /// The state directory.
        dir: PathBuf,
        /// The file or directory.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// The file system did not finish a read or write by the agent's deadline
    /// (`--disk-deadline`): a hung or very slow disk. The step goes on in the background; the
    /// next read or write waits for it.
    #[error(
        "the state directory {} did not finish `{what}` within {} s. The agent changes the \
         network only with its last-known-good backup and journal safely on disk, so it stops \
         here; it tries again every 5 s, once the disk has finished the step",
        dir.display(),
        waited.as_secs()
    )]
    TimedOut {
        /// The step, e.g. `write journal.json`.
        what: String,
        /// The state directory.
        dir: PathBuf,
        /// The deadline.
        waited: std::time::Duration,
    },
}

/// The system error with its errno's name, e.g. `No space left on device (os error 28,
/// ENOSPC)`.
fn errno(e: &std::io::Error) -> String {
    let name = match e.raw_os_error() {
        Some(1) => "EPERM",
        Some(5) => "EIO",
        Some(13) => "EACCES",
        Some(28) => "ENOSPC",
        Some(30) => "EROFS",
        Some(122) => "EDQUOT",
        _ => return e.to_string(),
    };
    let text = e.to_string();
    match text.strip_suffix(')') {
        Some(t) => format!("{t}, {name})"),
        None => format!("{text} ({name})"),
    }
}

/// The state directory.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// Opens (creating it if needed) the state directory.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|source| StoreError::Io {
            op: "create",
            dir: dir.clone(),
            path: dir.clone(),
            source,
        })?;
        Ok(Self { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The last-known-good config; the empty config when none was ever committed.
    pub fn last_known_good(&self) -> Result<LastKnownGood, StoreError> {
        Ok(self.read(LKG_FILE)?.unwrap_or_default())
    }

    /// Whether a last-known-good file exists.
    pub fn has_last_known_good(&self) -> bool {
        self.dir.join(LKG_FILE).exists()
    }

    /// Writes the last-known-good config.
    pub fn set_last_known_good(&self, lkg: &LastKnownGood) -> Result<(), StoreError> {
        self.write(LKG_FILE, lkg)
    }

    /// The journal, if an apply was in progress.
    pub fn journal(&self) -> Result<Option<Journal>, StoreError> {
        self.read(JOURNAL_FILE)
    }

    /// Writes the journal.
    pub fn set_journal(&self, journal: &Journal) -> Result<(), StoreError> {
        self.write(JOURNAL_FILE, journal)
    }

    /// Removes the journal (the apply finished).
    pub fn clear_journal(&self) -> Result<(), StoreError> {
        self.run(state::remove_steps(JOURNAL_FILE))
    }

    /// The revisions that failed on this node.
    pub fn failures(&self) -> Result<Failures, StoreError> {
        Ok(self.read(FAILED_FILE)?.unwrap_or_default())
    }

    /// Writes the revisions that failed on this node.
    pub fn set_failures(&self, failures: &Failures) -> Result<(), StoreError> {
        self.write(FAILED_FILE, failures)
    }

    fn read<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StoreError> {
        let path = self.dir.join(name);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(self.io("read", path)(source)),
        };
        state::decode(&bytes)
            .map(Some)
            .map_err(|reason| StoreError::Corrupt { path, reason })
    }

    /// Replaces `name` by `value` through its write plan. A plan that fails leaves the old
    /// whole record: the temporary file it may have half-written (a full disk) is removed.
    fn write<T: Serialize>(&self, name: &str, value: &T) -> Result<(), StoreError> {
        let bytes = state::encode(value)
            .map_err(|e| self.io("encode", self.dir.join(name))(std::io::Error::other(e)))?;
        let written = self.run(state::write_steps(name, bytes));
        if written.is_err() {
            // Best effort: on a read-only directory there is nothing to remove, and a leftover
            // temporary file is never read (the next write truncates it).
            let _ = fs::remove_file(self.dir.join(state::temp_name(name)));
        }
        written
    }

    /// Runs a plan's steps in order; the first that fails stops it.
    fn run(&self, steps: Vec<DiskStep>) -> Result<(), StoreError> {
        for step in steps {
            self.step(step)?;
        }
        Ok(())
    }

    /// The error of `op` on `path` in this directory.
    fn io(&self, op: &'static str, path: PathBuf) -> impl FnOnce(std::io::Error) -> StoreError {
        let dir = self.dir.clone();
        move |source| StoreError::Io {
            op,
            dir,
            path,
            source,
        }
    }

    fn step(&self, step: DiskStep) -> Result<(), StoreError> {
        match step {
            DiskStep::Write { file, bytes } => {
                let path = self.dir.join(file);
                File::create(&path)
                    .and_then(|mut f| f.write_all(&bytes))
                    .map_err(self.io("write", path))
            }
            DiskStep::Sync { file } => {
                let path = self.dir.join(file);
                File::options()
                    .write(true)
                    .open(&path)
                    .and_then(|f| f.sync_all())
                    .map_err(self.io("sync", path))
            }
            DiskStep::Rename { from, to } => fs::rename(self.dir.join(from), self.dir.join(&to))
                .map_err(self.io("rename", self.dir.join(to))),
            DiskStep::Remove { file } => {
                let path = self.dir.join(file);
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        Err(self.io("remove", path)(e))
                    }
                    _ => Ok(()),
                }
            }
            DiskStep::SyncDir => File::open(&self.dir)
                .and_then(|d| d.sync_all())
                .map_err(self.io("sync", self.dir.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reason::FailureReason;
    use netrollout_api::NodeConfig;

    fn lkg() -> LastKnownGood {
        LastKnownGood {
            revision: Some("rev-1".into()),
            config: NodeConfig::default(),
            frr: Some("router bgp 65000 vrf vr.x\n".into()),
        }
    }

    #[test]
    fn written_state_reads_back_and_a_missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.last_known_good().unwrap(), LastKnownGood::default());
        assert_eq!(store.journal().unwrap(), None);
        store.set_last_known_good(&lkg()).unwrap();
        let journal = Journal {
            revision: "rev-2".into(),
            attempt: 1,
            retry: None,
        };
        store.set_journal(&journal).unwrap();
        assert_eq!(store.last_known_good().unwrap(), lkg());
        assert_eq!(store.journal().unwrap(), Some(journal));
        store.clear_journal().unwrap();
        assert_eq!(store.journal().unwrap(), None);
    }

    #[test]
    fn a_refused_write_names_the_file_its_directory_the_errno_and_what_to_do() {
        let err = StoreError::Io {
            op: "write",
            dir: "/var/lib/netrollout".into(),
            path: "/var/lib/netrollout/.journal.json.tmp".into(),
            source: std::io::Error::from_raw_os_error(28),
        };
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "cannot write state file /var/lib/netrollout/.journal.json.tmp: No space left on \
                 device (os error 28, ENOSPC). "
            ) && msg.contains("free space in /var/lib/netrollout or make it writable"),
            "{msg}"
        );
    }

    #[test]
    fn a_truncated_file_is_reported_corrupt_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.set_last_known_good(&lkg()).unwrap();
        let path = dir.path().join(LKG_FILE);
        let text = fs::read(&path).unwrap();
        fs::write(&path, &text[..text.len() - 5]).unwrap();
        let err = store.last_known_good().unwrap_err();
        assert!(matches!(&err, StoreError::Corrupt { reason, .. } if reason.contains("checksum")));
        assert!(err.to_string().contains(LKG_FILE));
        fs::write(&path, &text[..20]).unwrap();
        assert!(matches!(
            store.last_known_good(),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn state_written_before_frr_support_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let write = |name: &str, body: &str| {
            let value: serde_json::Value = serde_json::from_str(body).unwrap();
            fs::write(dir.path().join(name), state::encode(&value).unwrap()).unwrap();
        };
        write(LKG_FILE, r#"{"revision":"rev-1","config":{}}"#);
        write(
            FAILED_FILE,
            r#"{"revisions":{"rev-2":{"reason":"ProbeFailed","message":"m","at":"2026-01-01T00:00:00Z","retry":null}}}"#,
        );
        let lkg = store.last_known_good().unwrap();
        assert_eq!((lkg.revision.as_deref(), lkg.frr), (Some("rev-1"), None));
        let failures = store.failures().unwrap();
        assert_eq!(
            failures.revisions["rev-2"].reason,
            FailureReason::ProbeFailed
        );
    }

    #[test]
    fn a_modified_body_fails_the_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .set_journal(&Journal {
                revision: "rev-2".into(),
                attempt: 1,
                retry: None,
            })
            .unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let text = fs::read_to_string(&path).unwrap().replace("rev-2", "rev-3");
        fs::write(&path, text).unwrap();
        assert!(matches!(
            store.journal(),
            Err(StoreError::Corrupt { reason, .. }) if reason.contains("mismatch")
        ));
    }
}
