//! The agent's FRR settings for an FRR of the tests (and of `examples/frr-apply-bench`, which
//! includes this file): one version's vtysh, `frr-reload.py` and socket directory (as the
//! agent's `--frr-bindir`, `--frr-reload`, `--frr-vty-socket`), in a pathspace, with its files in
//! one directory.

use std::path::Path;

use netrollout_agent::frr::FrrSettings;
use netrollout_frr::daemons::Version;

/// The settings for FRR `version` in pathspace `pathspace` whose files (`base.conf`,
/// `frr.conf`, `frr-reload.py`'s temporary files) are in `dir`.
pub fn frr_settings(dir: &Path, pathspace: &str, version: Version) -> FrrSettings {
    FrrSettings {
        base_config: dir.join("base.conf"),
        config: dir.join("frr.conf"),
        pathspace: Some(pathspace.to_string()),
        vty_socket: version.vty_socket(),
        asn: None,
        // Differs from the base's 192.0.2.1: VRFs peer with the default VRF over iBGP.
        router_id: Some("192.0.2.101".parse().expect("an address")),
        vtep_ip: None,
        reload_script: version.reload_script(),
        bindir: version.bindir(),
        rundir: dir.to_path_buf(),
    }
}
