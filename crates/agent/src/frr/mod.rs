//! FRR: the node's routing daemon, configured as one step of the agent's transaction.
//!
//! The node operator owns a base file (`--frr-base-config`: underlay sessions, ASN, router id);
//! the agent owns the managed sections rendered from the `NodeConfig` by `netrollout-frr`. The
//! full text (base + managed) is written to the `frr.conf` FRR reads (`--frr-config`) atomically
//! (temporary file, fsync, rename); the agent then sends FRR the difference between its running
//! config and the text (`sync`, one `vtysh -f`) and reads the running config back (straight from
//! the daemons' vty sockets, no process start: `vty`, `merge`), and FRR's own
//! `frr-reload.py --reload` applies the file when that does not converge (counted in
//! [`Frr::fallbacks`]); FRR is never restarted. Lines FRR accepts and never shows (defaults of
//! its `frr defaults` profile) are no difference when they are listed for FRR's version
//! (`defaults`); any other line FRR does not show stays one.
//!
//! FRR 8.4 and 10.3 are supported: the version is read from the daemons' own `frr version`
//! line with every read of the running config ([`Frr::version`], logged when it changes), and
//! decides how their texts are joined (`merge`), which daemons must answer (FRR 10's mgmtd
//! too) and which defaults FRR hides.
//!
//! Before a write the new text is checked with `vtysh -m -f` (a parse, no change): a line FRR
//! does not know fails the attempt with FRR's own error line and leaves `frr.conf` and FRR as
//! they were. A line a daemon rejects while loading fails the same way (the restore then loads
//! the last-known-good text again).
//!
//! FRR 8.4's `frr-reload.py` puts a new VRF's ` vni N` on the default VRF (see
//! `Frr::add_new_vrf_vnis`); the agent writes VRF blocks first and configures new VRF VNIs
//! itself before the reload.
//!
//! Unchanged text makes no FRR write at all: the process remembers the text FRR last loaded
//! successfully; after a (re)start the first apply compares the text with FRR's running config
//! and writes only a difference, if any.
//!
//! Layout, one file per verb (as rtnetlink splits its handles):
//! - `write`: render the managed text, join it to the base, write `frr.conf` atomically;
//! - `reload`: check it (`vtysh -m -f`, the same text once) and the fallback (new VRF VNIs, `frr-reload.py --reload`);
//! - `sync`: the diff sent, FRR's running config read back;
//! - `script`: the `vtysh -f` that sends the diff, started while the check runs;
//! - `read`: FRR's running config and whether zebra and bgpd answer: over the vty sockets,
//!   through vtysh when they cannot be used;
//! - `vty`: the daemons' vty sockets (FRR's vtysh protocol);
//! - `merge`: the daemons' texts joined as vtysh joins them, per FRR version (pure);
//! - `conf`: a config text read as FRR's contexts (pure);
//! - `defaults`: the lines FRR hides, per FRR version and profile (pure);
//! - `diff`: the script between two of them (pure);
//! - `query`: ask FRR (`vtysh -c ...`);
//! - `parse`: read FRR's texts (error lines, VRF VNIs, the base's `router bgp`);
//! - `identity`: settle the managed ASN and router id from flags and the base file;
//! - `error`: [`FrrError`].

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Mutex;

mod conf;
mod defaults;
mod diff;
mod error;
mod identity;
mod l3vni;
mod merge;
mod parse;
mod query;
mod read;
mod reload;
mod rmac;
mod script;
mod sync;
mod vty;
mod write;

pub use conf::read_as_diff;

/// The lines of `router bgp` FRR of major version `major` accepts and never shows under the
/// `frr defaults` profile `datacenter` (else `traditional`): the defaults the diff counts as
/// there (the real-FRR test of the list reads them here).
pub fn listed_defaults(major: u32, datacenter: bool) -> Vec<&'static str> {
    defaults::Defaults::listed(major, datacenter)
}
pub use error::FrrError;
pub use parse::error_lines;

/// Where FRR lives and how the agent reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrrSettings {
    /// The operator's base config (underlay, ASN, router id).
    pub base_config: PathBuf,
    /// The `frr.conf` FRR reads; written by the agent.
    pub config: PathBuf,
    /// FRR pathspace (`-N NAME`) when FRR runs with one (the lab, tests).
    pub pathspace: Option<String>,
    /// vtysh's socket directory, when not FRR's default.
    pub vty_socket: Option<PathBuf>,
    /// The ASN of the managed `router bgp` sections; read from the base file when `None`.
    pub asn: Option<u32>,
    /// The router id of the managed `router bgp` instances (`--router-id`). It must differ from
    /// the base file's default-VRF router id; see `identity::routing_settings` for the default.
    pub router_id: Option<Ipv4Addr>,
    /// The node's VTEP address (`--vtep-ip`): the managed router id when `--router-id` is not
    /// given and it is IPv4 and differs from the base file's router id (the Go operator's choice).
    pub vtep_ip: Option<IpAddr>,
    /// FRR's `frr-reload.py`.
    pub reload_script: PathBuf,
    /// Directory holding `vtysh`.
    pub bindir: PathBuf,
    /// Where `frr-reload.py` writes its temporary files (the agent's state directory: FRR's
    /// `/var/run/frr` is not the agent's to write).
    pub rundir: PathBuf,
}

/// The node's FRR.
#[derive(Debug)]
pub struct Frr {
    settings: FrrSettings,
    routing: netrollout_frr::Settings,
    /// Why `routing.router_id` equals the base file's default-VRF router id, when it does: a
    /// config with VRFs is then refused (instances without a session to the default VRF, the
    /// routing tables', are fine with it).
    clash: Option<String>,
    /// The full text FRR last loaded successfully from this process.
    loaded: Mutex<Option<String>>,
    /// Applies the agent's diff did not bring to the text, which `frr-reload.py` then applied.
    fallbacks: AtomicU64,
    /// The daemons' vty sockets (FRR's running config read without a process start).
    vty: vty::Vty,
    /// Reads of FRR (running config, daemons answering) that went through vtysh because the
    /// vty sockets could not be used.
    vty_fallbacks: AtomicU64,
    /// Layer-3 VNIs registered again because FRR 8.x's zebra lost their routes' router MACs
    /// (`rmac`).
    rmac_repairs: AtomicU64,
    /// FRR's parse (`vtysh -m -f`) of the texts checked last, read as the diff reads it, newest
    /// last: the same text is not parsed again.
    marks: std::sync::Mutex<std::collections::VecDeque<(String, std::sync::Arc<conf::Conf>)>>,
    /// The FRR version the daemons showed last (their `frr version` line).
    version: std::sync::Mutex<Option<String>>,
}

impl Frr {
    /// Reads the base file once to settle the ASN and the managed router id; an explicit
    /// `--router-id` equal to the base file's is refused here.
    pub fn new(settings: FrrSettings) -> Result<Self, FrrError> {
        let base = write::read_base(&settings.base_config)?;
        let (routing, clash) = identity::routing_settings(&settings, &base)?;
        Ok(Self {
            vty: vty::Vty::new(&settings),
            settings,
            routing,
            clash,
            loaded: Mutex::new(None),
            fallbacks: AtomicU64::new(0),
            vty_fallbacks: AtomicU64::new(0),
            rmac_repairs: AtomicU64::new(0),
            marks: std::sync::Mutex::default(),
            version: std::sync::Mutex::default(),
        })
    }

    /// How many applies of this process fell back to `frr-reload.py` because the agent's diff
    /// did not bring FRR's running config to the text (each is logged with what was left).
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// How many reads of FRR (its running config, whether zebra and bgpd answer) of this
    /// process went through vtysh because the daemons' vty sockets could not be used (each is
    /// logged with the reason).
    pub fn vty_fallbacks(&self) -> u64 {
        self.vty_fallbacks.load(Ordering::Relaxed)
    }

    /// How many layer-3 VNIs this process registered again because FRR 8.x's zebra had lost
    /// the router MACs of their VRF's routes (each logged).
    pub fn rmac_repairs(&self) -> u64 {
        self.rmac_repairs.load(Ordering::Relaxed)
    }

    /// The FRR version the daemons showed in the last read of their running config (`None`
    /// before the first).
    pub fn version(&self) -> Option<String> {
        // A poisoned lock only means a panic elsewhere while it was held; the value is whole.
        self.version
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records the FRR version a read showed (from its `frr version` line); logs it when it is
    /// new to this process or changed (FRR upgraded under the agent).
    fn saw_version(&self, version: &str, read: &str) {
        let mut seen = self.version.lock().unwrap_or_else(|e| e.into_inner());
        if seen.as_deref() != Some(version) {
            tracing::info!(
                version,
                was = seen.as_deref().unwrap_or("unknown"),
                read,
                "FRR version detected"
            );
            *seen = Some(version.to_string());
        }
    }

    /// FRR's major version, once a read showed it.
    fn major(&self) -> Option<u32> {
        self.version()
            .and_then(|v| v.split('.').next().and_then(|m| m.parse().ok()))
    }

    /// The daemons that must answer: zebra and bgpd, and mgmtd when FRR is 10 or later (it
    /// holds the route maps, prefix lists and VRFs).
    fn required(&self) -> &'static [&'static str] {
        if self.major().is_some_and(|m| m >= 10) {
            &query::DAEMONS_10
        } else {
            &query::DAEMONS
        }
    }

    /// The ASN and router id of the managed sections.
    pub fn routing(&self) -> netrollout_frr::Settings {
        self.routing
    }

    /// The settings.
    pub fn settings(&self) -> &FrrSettings {
        &self.settings
    }

    /// The directory of `frr.conf`: FRR's config directory (`--confdir`, `--config_dir`).
    fn confdir(&self) -> PathBuf {
        self.settings
            .config
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()
    }
}
