//! The agent's state directory (default `/var/lib/netrollout`, a hostPath): the last-known-good
//! config, the journal of the apply in progress, and the memory of revisions that failed here.
//!
//! Every file is written atomically (temporary file, fsync, rename, fsync of the directory) and
//! starts with a header line holding the SHA-256 of the JSON body that follows:
//! `netrollout-state v1 sha256=<hex>`. A file whose header or checksum does not match, or whose
//! body does not parse, is corrupt: reading it is an error ([`StoreError::Corrupt`]) and nothing
//! is ever applied from it. A person recovers by inspecting and deleting the file.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use netrollout_api::NodeConfig;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::reason::FailureReason;

/// File of the last-known-good config.
pub const LKG_FILE: &str = "last-known-good.json";
/// File of the journal ("applying R").
pub const JOURNAL_FILE: &str = "journal.json";
/// File of the revisions that failed on this node.
pub const FAILED_FILE: &str = "failed.json";

const HEADER: &str = "netrollout-state v1 sha256=";

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
    /// The file system refused a read or write.
    #[error("state file {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
}

/// The config the node restores when an apply fails.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LastKnownGood {
    /// The revision it came from; `None` before the first success (then it is the empty config:
    /// no managed objects).
    pub revision: Option<String>,
    /// The config.
    pub config: NodeConfig,
    /// The full `frr.conf` text (base + managed) FRR ran when it was committed (`None` without
    /// FRR support, or in state written before it: then it is rendered from `config` and the
    /// current base file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frr: Option<String>,
}

/// "Applying R": written before the dataplane is touched, removed after commit or restore.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// The revision being applied.
    pub revision: String,
    /// How many times the agent has started applying it in a row without finishing.
    pub attempt: u32,
    /// The node's retry annotation when the attempt started.
    #[serde(default)]
    pub retry: Option<String>,
}

/// A revision that failed on this node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Why it failed.
    pub reason: FailureReason,
    /// What happened.
    pub message: String,
    /// When (RFC 3339).
    pub at: String,
    /// The node's retry annotation when it failed; a different value asks for one more try.
    pub retry: Option<String>,
}

/// Every revision that failed on this node, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failures {
    /// Failures by revision name.
    pub revisions: BTreeMap<String, Failure>,
}

impl Failures {
    /// Failed revisions remembered; the oldest are forgotten past this, and a forgotten one
    /// would be tried again if it were dispatched to this node again.
    pub const LIMIT: usize = 50;

    /// Records a failure, forgetting the oldest past [`Failures::LIMIT`].
    pub fn record(&mut self, revision: &str, failure: Failure) {
        self.revisions.insert(revision.to_string(), failure);
        while self.revisions.len() > Self::LIMIT {
            let oldest = self
                .revisions
                .iter()
                .min_by_key(|(_, f)| f.at.parse::<jiff::Timestamp>().ok())
                .map(|(rev, _)| rev.clone());
            match oldest {
                Some(rev) => self.revisions.remove(&rev),
                None => break,
            };
        }
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
        self.remove(JOURNAL_FILE)
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
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        let corrupt = |reason: String| StoreError::Corrupt {
            path: path.clone(),
            reason,
        };
        let Some(newline) = bytes.iter().position(|&b| b == b'\n') else {
            return Err(corrupt("no header line (truncated?)".into()));
        };
        let (header, body) = (&bytes[..newline], &bytes[newline + 1..]);
        let Some(want) = std::str::from_utf8(header)
            .ok()
            .and_then(|h| h.strip_prefix(HEADER))
        else {
            return Err(corrupt("missing checksum header".into()));
        };
        let have = checksum(body);
        if have != want {
            return Err(corrupt(format!(
                "checksum mismatch: header says {want}, content has {have} (truncated or modified)"
            )));
        }
        serde_json::from_slice(body)
            .map(Some)
            .map_err(|e| corrupt(format!("content does not parse: {e}")))
    }

    fn write<T: Serialize>(&self, name: &str, value: &T) -> Result<(), StoreError> {
        let path = self.dir.join(name);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        let body = serde_json::to_vec(value).map_err(|e| StoreError::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(format!("{HEADER}{}\n", checksum(&body)).as_bytes())
            .and_then(|()| f.write_all(&body))
            .and_then(|()| f.sync_all())
            .map_err(io(&tmp))?;
        drop(f);
        fs::rename(&tmp, &path).map_err(io(&path))?;
        self.sync_dir()
    }

    fn remove(&self, name: &str) -> Result<(), StoreError> {
        let path = self.dir.join(name);
        match fs::remove_file(&path) {
            Ok(()) => self.sync_dir(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }

    fn sync_dir(&self) -> Result<(), StoreError> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| StoreError::Io {
                path: self.dir.clone(),
                source,
            })
    }
}

fn checksum(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn only_the_newest_failures_are_remembered() {
        let mut failures = Failures::default();
        for i in 0..Failures::LIMIT + 3 {
            let at = jiff::Timestamp::from_second(1_000 + i as i64).unwrap();
            let failure = Failure {
                reason: FailureReason::ProbeFailed,
                message: String::new(),
                at: at.to_string(),
                retry: None,
            };
            failures.record(&format!("rev-{i}"), failure);
        }
        assert_eq!(failures.revisions.len(), Failures::LIMIT);
        assert!(!failures.revisions.contains_key("rev-2"));
        assert!(failures.revisions.contains_key("rev-3"));
    }

    #[test]
    fn state_written_before_frr_support_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let write = |name: &str, body: &str| {
            let text = format!("{HEADER}{}\n{body}", checksum(body.as_bytes()));
            fs::write(dir.path().join(name), text).unwrap();
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
