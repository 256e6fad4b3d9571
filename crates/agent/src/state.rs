//! The records of the agent's state directory and how they reach the disk, without touching it
//! (pure: [`crate::store`] runs these plans on the real file system, the core's crash tests on a
//! model disk that loses or tears what was not synced).
//!
//! Every file is one record: a header line `netrollout-state v1 sha256=<hex>` holding the
//! SHA-256 of the JSON body that follows ([`encode`], [`decode`]). A file is written by the plan
//! of [`write_steps`]: write a temporary file, fsync it, rename it over the file, fsync the
//! directory. Only in that order does a crash at any point leave either the old whole record or
//! the new whole record: the rename is made durable only after the data it points to.

use std::collections::BTreeMap;

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

/// One step of writing the state directory. Each is one system call (or one fsync).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskStep {
    /// Create (truncate) `file` and write `bytes` to it; not durable until [`DiskStep::Sync`].
    Write {
        /// The file name in the state directory.
        file: String,
        /// Its whole content.
        bytes: Vec<u8>,
    },
    /// `fsync(file)`: its data is durable (its name is not, until [`DiskStep::SyncDir`]).
    Sync {
        /// The file name.
        file: String,
    },
    /// `rename(from, to)`: atomic, durable after [`DiskStep::SyncDir`].
    Rename {
        /// The temporary name.
        from: String,
        /// The final name.
        to: String,
    },
    /// `unlink(file)`; a missing file is no error.
    Remove {
        /// The file name.
        file: String,
    },
    /// `fsync` of the directory: names created, renamed or removed are durable.
    SyncDir,
}

/// The temporary name `file` is written under before its rename.
pub fn temp_name(file: &str) -> String {
    format!(".{file}.tmp")
}

/// The plan that replaces `file` with `bytes` atomically: write a temporary file, fsync it,
/// rename it over `file`, fsync the directory.
pub fn write_steps(file: &str, bytes: Vec<u8>) -> Vec<DiskStep> {
    let tmp = temp_name(file);
    vec![
        DiskStep::Write {
            file: tmp.clone(),
            bytes,
        },
        DiskStep::Sync { file: tmp.clone() },
        DiskStep::Rename {
            from: tmp,
            to: file.to_string(),
        },
        DiskStep::SyncDir,
    ]
}

/// The plan that removes `file` durably.
pub fn remove_steps(file: &str) -> Vec<DiskStep> {
    vec![
        DiskStep::Remove {
            file: file.to_string(),
        },
        DiskStep::SyncDir,
    ]
}

/// The bytes of a record: the checksum header line, then the JSON body.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let body = serde_json::to_vec(value)?;
    let mut out = format!("{HEADER}{}\n", checksum(&body)).into_bytes();
    out.extend_from_slice(&body);
    Ok(out)
}

/// Reads a record back; `Err` says why the bytes are corrupt (nothing is applied from them).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let Some(newline) = bytes.iter().position(|&b| b == b'\n') else {
        return Err("no header line (truncated?)".into());
    };
    let (header, body) = (&bytes[..newline], &bytes[newline + 1..]);
    let Some(want) = std::str::from_utf8(header)
        .ok()
        .and_then(|h| h.strip_prefix(HEADER))
    else {
        return Err("missing checksum header".into());
    };
    let have = checksum(body);
    if have != want {
        return Err(format!(
            "checksum mismatch: header says {want}, content has {have} (truncated or modified)"
        ));
    }
    serde_json::from_slice(body).map_err(|e| format!("content does not parse: {e}"))
}

fn checksum(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_a_torn_or_edited_one_is_corrupt() {
        let journal = Journal {
            revision: "rev-2".into(),
            attempt: 1,
            retry: None,
        };
        let bytes = encode(&journal).unwrap();
        assert_eq!(decode::<Journal>(&bytes).unwrap(), journal);
        let torn = &bytes[..bytes.len() - 3];
        assert!(decode::<Journal>(torn).unwrap_err().contains("mismatch"));
        assert!(
            decode::<Journal>(&bytes[..10])
                .unwrap_err()
                .contains("header")
        );
        let edited = String::from_utf8(bytes).unwrap().replace("rev-2", "rev-3");
        assert!(decode::<Journal>(edited.as_bytes()).is_err());
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
}
