//! What FRR said about its sessions and VNIs ([`crate::routing::state`] asks it): read by the
//! routing probes (`crate::routing`) and the peering probe (`crate::peering`) alike.

use std::collections::{BTreeMap, BTreeSet};

/// What FRR said about its sessions and VNIs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoutingState {
    /// Why FRR did not answer; `None` when it did.
    pub unanswered: Option<String>,
    /// BGP session (`VRF PEER`) → its state, e.g. `Established`, `Active`.
    pub sessions: BTreeMap<String, String>,
    /// BGP session (`VRF PEER`) → the most prefixes it received in one address family.
    pub received: BTreeMap<String, u64>,
    /// The sessions of workloads' peerings of the config the node ran when this was read
    /// ([`crate::routing::mark_peerings`]): judged by the `peering` probe, not by `bgp VRF PEER`.
    pub peering_sessions: BTreeSet<String>,
    /// VNI → its type (`L2`, `L3`) for every VNI FRR's EVPN knows (`show evpn vni json`).
    pub vnis: BTreeMap<u32, String>,
    /// VRF → its layer-3 VNI (`show vrf vni json`).
    pub vrf_vnis: BTreeMap<String, u32>,
}

impl RoutingState {
    /// The sessions in state `Established`.
    pub fn established(&self) -> BTreeSet<String> {
        self.sessions
            .iter()
            .filter(|(_, s)| s.as_str() == "Established")
            .map(|(k, _)| k.clone())
            .collect()
    }
}
