//! Render and write: the managed text, the full `frr.conf` text, and the atomic write that
//! hands it to `reload`.

use std::path::Path;

use netrollout_api::NodeConfig;

use super::conf::Conf;
use super::identity::check_clash;
use super::l3vni::new_l3_vnis;
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
    /// [`FrrError::Unavailable`] when zebra or bgpd does not answer before or after the change
    /// (nothing is written when it is before).
    ///
    /// The change is the agent's diff of FRR's running config against the text (see `sync`);
    /// `frr-reload.py` applies it when the diff does not bring FRR to the text.
    pub async fn apply(&self, full: &str) -> Result<u32, FrrError> {
        self.apply_by(full, Via::Diff).await
    }

    /// [`Frr::apply`] through `frr-reload.py` alone, as the agent applied before its own diff:
    /// the FRR benchmark's baseline (`hack/bench.d/62-frr-apply.sh`).
    pub async fn apply_with_reload_script(&self, full: &str) -> Result<u32, FrrError> {
        self.apply_by(full, Via::ReloadScript).await
    }

    async fn apply_by(&self, full: &str, via: Via) -> Result<u32, FrrError> {
        let mut loaded = self.loaded.lock().await;
        if loaded.as_deref() == Some(full) {
            return Ok(0);
        }
        let dir = self.confdir();
        let name = self
            .settings
            .config
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "frr.conf".into());
        let tmp = dir.join(format!(".{name}.netrollout.tmp"));
        write_synced(&tmp, full)?;
        // A daemon that is down would miss its lines without an error (frr-reload.py skips
        // it): ask first, and again after the change. The diff asks with the read of FRR's
        // running config, while the check runs (reads only).
        // The diff also starts its script's vtysh as soon as the read shows a change is due,
        // so that its start overlaps the check (`script`).
        let (up, checked) = match via {
            Via::Diff => {
                // FRR's running config is parsed once: for the early start and the diff.
                let read = async {
                    let running = Conf::parse(&self.running_config().await?);
                    let early = self.start_early(full, &running);
                    Ok((running, early))
                };
                tokio::join!(read, self.check_once(full, &tmp))
            }
            Via::ReloadScript => {
                let (up, checked) = tokio::join!(self.require_running(), self.check(&tmp));
                // frr-reload.py reads the text itself: FRR's parse only has to succeed.
                let checked = checked.map(|_| std::sync::Arc::new(Conf::default()));
                (up.map(|()| (Conf::default(), None)), checked)
            }
        };
        let ((running, early), marked) = match (up, checked) {
            (Ok(up), Ok(marked)) => (up, marked),
            (up, checked) => {
                let _ = std::fs::remove_file(&tmp);
                let e = match (up, checked) {
                    (Err(e), _) => e,
                    (Ok((_, early)), Err(e)) => {
                        if let Some(script) = early {
                            script.end().await;
                        }
                        e
                    }
                    (Ok(_), Ok(_)) => unreachable!("both succeeded above"),
                };
                return Err(e);
            }
        };
        if let Err(source) = std::fs::rename(&tmp, &self.settings.config) {
            if let Some(script) = early {
                script.end().await;
            }
            return Err(FrrError::Write {
                path: self.settings.config.clone(),
                source,
            });
        }
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        // From here FRR may hold part of the text: forget what it held.
        *loaded = None;
        let writes = match via {
            // Asks the daemons again with each read-back, and after frr-reload.py.
            Via::Diff => {
                let new_vnis = new_l3_vnis(full, &running);
                let writes = self.sync(full, &marked, running, early).await?;
                if !new_vnis.is_empty() && self.is_frr8() {
                    self.register_l3_vnis_again(&new_vnis).await?;
                }
                if writes > 0 {
                    self.repair_router_macs(full).await?;
                }
                writes
            }
            Via::ReloadScript => {
                let reloaded = self.reload_script_apply(full).await;
                // A daemon that died during the reload explains its failure better than the
                // reload's own output; one that died and left it "successful" is found here too.
                self.require_running().await?;
                reloaded?;
                1
            }
        };
        *loaded = Some(full.to_string());
        Ok(writes)
    }
}

/// How [`Frr::apply_by`] changes FRR.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// The agent's diff (`sync`), `frr-reload.py` when it does not converge.
    Diff,
    /// `frr-reload.py` alone.
    ReloadScript,
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
