//! The bench's node: its config of N VRFs in netrollout's shape, the agent's FRR settings for
//! a version, and FRR of that version started with the base config alone in a namespace of its
//! own (stopped and the namespace deleted on drop).

use std::path::Path;
use std::time::Duration;

use netrollout_api::{NodeConfig, PrefixAction, PrefixItem, VrfConfig, VrfPolicy};
use netrollout_frr::daemons::{Daemons, Log, Start, Version};
use netrollout_testkit::cmd::run;

pub const BASE: &str = "frr defaults datacenter\nhostname bench\n!\nrouter bgp 65000\n \
    bgp router-id 192.0.2.1\nexit\n!\n";

/// N VRFs, each with import, export, aggregate and community policies; `changed` moves VRF
/// t7's export and community.
pub fn config(vrfs: u32, changed: bool) -> NodeConfig {
    let item = |cidr: String| PrefixItem {
        cidr,
        seq: None,
        ge: None,
        le: Some(28),
        action: PrefixAction::Permit,
    };
    NodeConfig {
        vrfs: (0..vrfs)
            .map(|i| {
                let bump = u32::from(changed && i == 7);
                VrfConfig {
                    name: format!("t{i}"),
                    table_id: 100 + i,
                    vrf_interface: format!("vr.t{i}"),
                    veth_default_interface: format!("vd.t{i}"),
                    veth_vrf_interface: format!("vv.t{i}"),
                    policies: vec![VrfPolicy {
                        source: format!("t{i}"),
                        seq: 10,
                        // Valid addresses for any count: 128 VRFs per /16 of exports.
                        import: vec![item(format!("10.{}.{}.0/24", i / 256, i % 256))],
                        export: vec![item(format!(
                            "172.{}.{}.0/24",
                            16 + i / 128,
                            (i % 128) * 2 + bump
                        ))],
                        aggregate: vec![format!("172.{}.{}.0/23", 16 + i / 128, (i % 128) * 2)],
                        communities: vec![format!("65000:{}", 100 + i + bump)],
                    }],
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}

/// The agent's FRR settings for FRR `version` of `pathspace` (the tests' own, shared).
#[path = "../../tests/common/frr_settings.rs"]
mod frr_settings;
pub use frr_settings::frr_settings as settings;

/// FRR in a namespace of its own (named like its pathspace).
pub struct Node {
    daemons: Option<Daemons>,
    pub ns: String,
}

impl Node {
    /// FRR `version` in a new namespace `ns` running the base config (`dir/base.conf`).
    pub fn start(ns: &str, dir: &Path, version: Version) -> Node {
        run("ip", &["netns", "add", ns]);
        run("ip", &["-n", ns, "link", "set", "lo", "up"]);
        let mut node = Node {
            daemons: None,
            ns: ns.to_string(),
        };
        let base = dir.join("base.conf");
        node.daemons = Some(
            Start {
                config: Some(&base),
                log: Log::Syslog,
                timeout: Duration::from_secs(60),
                version,
                ..Start::new(ns, ns)
            }
            .start(),
        );
        node
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        drop(self.daemons.take());
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.ns])
            .status();
    }
}
