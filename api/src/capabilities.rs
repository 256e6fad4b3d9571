//! Node capabilities: the kernel drivers and routing daemons a node's rendered config needs,
//! as the agent reports them in `status.capabilities` and the configurator compares them with
//! what a revision needs before it dispatches it (docs/contract.md, "Pre-flight").
//!
//! On the wire each capability is a short word ([`Capability::as_str`]); an agent may report
//! words this version does not know (a newer agent), and the configurator ignores them.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Condition type on a revision: `False` while a node it targets lacks what the revision's
/// config for that node needs (reason [`NODES_LACK_CAPABILITIES`], the message naming each node
/// and capability); `True` (reason `AllNodesCapable`) once none does; `Unknown` (reason
/// [`NOT_ROLLING_OUT`]) when the revision stopped rolling out while it was `False`.
pub const NODES_CAPABLE_CONDITION: &str = "NodesCapable";
/// Reason of [`NODES_CAPABLE_CONDITION`] while it is `False`, and of its Warning Event.
pub const NODES_LACK_CAPABILITIES: &str = "NodesLackCapabilities";
/// Reason of [`NODES_CAPABLE_CONDITION`] once the revision stopped rolling out (Superseded,
/// Failed or Blocked) while it was `False`: no longer checked, the message keeping
/// what the last check said.
pub const NOT_ROLLING_OUT: &str = "NotRollingOut";

/// What a node's agent found it can do, detected at start (and again while something is
/// missing). Only `missing` holds a node back; a capability in neither list was not checked.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeCapabilities {
    /// Capabilities the agent checked and found, sorted (e.g. `bridge`, `vxlan`).
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub present: Vec<String>,
    /// Capabilities the agent checked and did not find, sorted (e.g. `vrf`).
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub missing: Vec<String>,
    /// The FRR version the node's daemons run (e.g. `8.4.4`, `10.3`), from their `frr version`
    /// line, as the agent read it at start (and again at each re-detection); absent without FRR
    /// support or while FRR does not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub frr_version: Option<String>,
}

impl NodeCapabilities {
    /// The capabilities of `needs` this node reported missing, in the order of `needs`.
    pub fn lacking<'a>(&self, needs: impl IntoIterator<Item = &'a Capability>) -> Vec<Capability> {
        needs
            .into_iter()
            .filter(|c| self.missing.iter().any(|m| m == c.as_str()))
            .copied()
            .collect()
    }
}

/// One thing a node's config may need from the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// VRF devices (`ip link add NAME type vrf table T`): the `vrf` kernel module.
    Vrf,
    /// Bridges: the `bridge` kernel module.
    Bridge,
    /// VXLAN devices: the `vxlan` kernel module.
    Vxlan,
    /// Veth pairs: the `veth` kernel module.
    Veth,
    /// Macvlan devices: the `macvlan` kernel module.
    Macvlan,
    /// Dummy devices (VRF loopbacks): the `dummy` kernel module.
    Dummy,
    /// 802.1Q VLAN devices: the `8021q` kernel module.
    Vlan,
    /// Bridge VLAN filtering (`vlan_filtering 1`): the kernel's `CONFIG_BRIDGE_VLAN_FILTERING`.
    VlanFiltering,
    /// FRR's `bgpd` running (BGP per VRF, EVPN).
    Bgpd,
    /// FRR's `bfdd` running (BFD on BGP sessions: a `BGPPeering` with `enableBFD`).
    Bfdd,
}

impl Capability {
    /// Every capability, in wire order.
    pub const ALL: [Capability; 10] = [
        Capability::Vrf,
        Capability::Bridge,
        Capability::Vxlan,
        Capability::Veth,
        Capability::Macvlan,
        Capability::Dummy,
        Capability::Vlan,
        Capability::VlanFiltering,
        Capability::Bgpd,
        Capability::Bfdd,
    ];

    /// The word on the wire (`status.capabilities`).
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Vrf => "vrf",
            Capability::Bridge => "bridge",
            Capability::Vxlan => "vxlan",
            Capability::Veth => "veth",
            Capability::Macvlan => "macvlan",
            Capability::Dummy => "dummy",
            Capability::Vlan => "8021q",
            Capability::VlanFiltering => "vlan_filtering",
            Capability::Bgpd => "bgpd",
            Capability::Bfdd => "bfdd",
        }
    }

    /// What it is, for people: "kernel module", "kernel option" or "FRR daemon".
    pub fn kind(self) -> &'static str {
        match self {
            Capability::VlanFiltering => "kernel option CONFIG_BRIDGE_VLAN_FILTERING",
            Capability::Bgpd | Capability::Bfdd => "FRR daemon",
            _ => "kernel module",
        }
    }

    /// What a node's operator does about it missing.
    pub fn remedy(self) -> String {
        match self {
            Capability::VlanFiltering => {
                "boot a kernel built with CONFIG_BRIDGE_VLAN_FILTERING".into()
            }
            Capability::Bgpd | Capability::Bfdd => format!(
                "enable {} in /etc/frr/daemons and restart FRR on the node",
                self.as_str()
            ),
            other => format!(
                "load it (modprobe {}) or install the kernel's modules package",
                other.as_str()
            ),
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no capability this version knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCapability(pub String);

impl fmt::Display for UnknownCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        write!(
            f,
            "unknown capability {:?}; known: {}",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownCapability {}

impl FromStr for Capability {
    type Err = UnknownCapability;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCapability(s.to_string()))
    }
}

/// One line of a pre-flight verdict: "node N lacks vrf (kernel module; load it ...)".
pub fn lacks_sentence(node: &str, missing: &[Capability]) -> String {
    let each: Vec<String> = missing
        .iter()
        .map(|c| format!("{c} ({}; {})", c.kind(), c.remedy()))
        .collect();
    format!("node {node} lacks {}", each.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_reads_back_from_its_wire_word_and_unknown_words_are_named() {
        for c in Capability::ALL {
            assert_eq!(c.as_str().parse::<Capability>(), Ok(c));
        }
        let e = "ipvlan".parse::<Capability>().unwrap_err();
        assert!(e.to_string().contains("\"ipvlan\""), "{e}");
    }

    #[test]
    fn a_node_lacks_only_what_it_reported_missing_and_unchecked_words_never_count() {
        let caps = NodeCapabilities {
            present: vec!["bridge".into()],
            missing: vec!["vrf".into(), "some-future-word".into()],
            frr_version: None,
        };
        let needs = [Capability::Bridge, Capability::Vrf, Capability::Bgpd];
        assert_eq!(caps.lacking(&needs), vec![Capability::Vrf]);
        assert_eq!(NodeCapabilities::default().lacking(&needs), vec![]);
    }

    #[test]
    fn the_verdict_sentence_names_the_node_each_capability_its_kind_and_the_fix() {
        let s = lacks_sentence("lab-node-2", &[Capability::Vrf, Capability::Bgpd]);
        assert_eq!(
            s,
            "node lab-node-2 lacks vrf (kernel module; load it (modprobe vrf) or install the kernel's modules package), bgpd (FRR daemon; enable bgpd in /etc/frr/daemons and restart FRR on the node)"
        );
        assert_eq!(
            lacks_sentence("n", &[Capability::Bfdd]),
            "node n lacks bfdd (FRR daemon; enable bfdd in /etc/frr/daemons and restart FRR on the node)"
        );
    }
}
