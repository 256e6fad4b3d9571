//! A disk with a page cache, for the crash points: writes, renames and removals reach the cache
//! at once and the disk only when synced ([`DiskStep::Sync`], [`DiskStep::SyncDir`]); a crash
//! keeps what its [`CrashMode`] says.

use std::collections::BTreeMap;

use crate::state::{self, DiskStep, FAILED_FILE, JOURNAL_FILE, LKG_FILE};
use crate::txn::Disk;

/// What a crash leaves on the disk of writes not yet synced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// The process died, the machine did not: the page cache reaches the disk (kill -9).
    Process,
    /// Power loss: only what was synced is there; unsynced names and data are lost.
    Lost,
    /// Power loss mid-flush: unsynced names reached the disk, unsynced data only in part.
    Torn,
}

impl CrashMode {
    pub const ALL: [CrashMode; 3] = [CrashMode::Process, CrashMode::Lost, CrashMode::Torn];
}

#[derive(Clone, Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    cached: Vec<u8>,
}

/// A directory on a disk with a page cache.
#[derive(Clone, Debug, Default)]
pub struct ModelDisk {
    inodes: Vec<Inode>,
    cached_dir: BTreeMap<String, usize>,
    durable_dir: BTreeMap<String, usize>,
}

impl ModelDisk {
    pub fn apply(&mut self, step: &DiskStep) {
        match step {
            DiskStep::Write { file, bytes } => {
                self.inodes.push(Inode {
                    durable: Vec::new(),
                    cached: bytes.clone(),
                });
                self.cached_dir.insert(file.clone(), self.inodes.len() - 1);
            }
            DiskStep::Sync { file } => {
                let id = self.cached_dir[file];
                self.inodes[id].durable = self.inodes[id].cached.clone();
            }
            DiskStep::Rename { from, to } => {
                let id = self
                    .cached_dir
                    .remove(from)
                    .expect("rename of a missing file");
                self.cached_dir.insert(to.clone(), id);
            }
            DiskStep::Remove { file } => {
                self.cached_dir.remove(file);
            }
            DiskStep::SyncDir => self.durable_dir = self.cached_dir.clone(),
        }
    }

    /// What is on the disk after a crash, read back by the next process.
    pub fn crash(&self, mode: CrashMode) -> ModelDisk {
        let dir = match mode {
            CrashMode::Process | CrashMode::Torn => &self.cached_dir,
            CrashMode::Lost => &self.durable_dir,
        };
        let mut out = ModelDisk::default();
        for (name, &id) in dir {
            let inode = &self.inodes[id];
            let data = match mode {
                CrashMode::Process => inode.cached.clone(),
                CrashMode::Lost => inode.durable.clone(),
                CrashMode::Torn if inode.durable == inode.cached => inode.durable.clone(),
                CrashMode::Torn => inode.cached[..inode.cached.len() / 2].to_vec(),
            };
            out.inodes.push(Inode {
                durable: data.clone(),
                cached: data,
            });
            out.cached_dir.insert(name.clone(), out.inodes.len() - 1);
        }
        out.durable_dir = out.cached_dir.clone();
        out
    }

    /// The content of `file`, as a read sees it.
    pub fn read(&self, file: &str) -> Option<&[u8]> {
        self.cached_dir
            .get(file)
            .map(|&id| self.inodes[id].cached.as_slice())
    }

    /// The state records, as the store reads them; `Err` names a corrupt file.
    pub fn state(&self) -> Result<Disk, String> {
        fn read<T: serde::de::DeserializeOwned>(
            d: &ModelDisk,
            f: &str,
        ) -> Result<Option<T>, String> {
            d.read(f)
                .map(|b| state::decode(b).map_err(|e| format!("{f} is corrupt: {e}")))
                .transpose()
        }
        Ok(Disk {
            lkg: read(self, LKG_FILE)?.unwrap_or_default(),
            has_lkg: self.read(LKG_FILE).is_some(),
            journal: read(self, JOURNAL_FILE)?,
            failures: read(self, FAILED_FILE)?.unwrap_or_default(),
            stopped: None,
        })
    }
}
