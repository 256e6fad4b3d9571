//! Render and write: the managed text, the full `frr.conf` text, and the atomic write that
//! hands it to `reload`.

use std::path::Path;

use netrollout_api::NodeConfig;

use super::identity::check_clash;
use super::{Frr, FrrError};

impl Frr {
    /// The managed FRR text of `config` (deterministic). A config with VRFs fails when the
    /// managed router id equals the default VRF's ([`FrrError::RouterIdClash`]).
    pub fn managed(&self, config: &NodeConfig) -> Result<String, FrrError> {
        check_clash(&self.settings, &self.routing, self.clash.as_deref(), config)?;
        Ok(netrollout_frr::render(config, &self.routing))
    }

    /// The full `frr.conf` text: the current base file and `managed`, with the managed VRF
    /// blocks (`vrf NAME` / ` vni N` / `exit-vrf`) ahead of the base
    /// ([`netrollout_frr::with_base`] says why).
    pub fn full(&self, managed: &str) -> Result<String, FrrError> {
        let base = read_base(&self.settings.base_config)?;
        Ok(netrollout_frr::with_base(&base, managed))
    }

    /// Makes FRR run `full`; returns the number of FRR writes (0 when FRR already runs it).
    /// [`FrrError::Unavailable`] when zebra or bgpd does not answer before or after the reload
    /// (nothing is written when it is before).
    pub async fn apply(&self, full: &str) -> Result<u32, FrrError> {
        let mut loaded = self.loaded.lock().await;
        if loaded.as_deref() == Some(full) {
            return Ok(0);
        }
        // A daemon that is down would miss its lines without an error (frr-reload.py skips
        // it): ask first, and again after the reload.
        self.require_running().await?;
        let dir = self.confdir();
        let name = self
            .settings
            .config
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "frr.conf".into());
        let tmp = dir.join(format!(".{name}.netrollout.tmp"));
        write_synced(&tmp, full)?;
        if let Err(e) = self.check(&tmp).await {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, &self.settings.config).map_err(|source| FrrError::Write {
            path: self.settings.config.clone(),
            source,
        })?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        // From here FRR may hold part of the text: forget what it held.
        *loaded = None;
        let reloaded = match self.add_new_vrf_vnis(full).await {
            Ok(()) => self.reload().await,
            Err(e) => Err(e),
        };
        // A daemon that died during the reload explains its failure better than the reload's
        // own output; one that died and left the reload "successful" is found here too.
        self.require_running().await?;
        reloaded?;
        *loaded = Some(full.to_string());
        Ok(1)
    }
}

pub(super) fn read_base(path: &Path) -> Result<String, FrrError> {
    std::fs::read_to_string(path).map_err(|source| FrrError::Base {
        path: path.to_path_buf(),
        source,
    })
}

fn write_synced(path: &Path, text: &str) -> Result<(), FrrError> {
    use std::io::Write;
    let err = |source| FrrError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::create(path).map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)?;
    f.sync_all().map_err(err)
}
