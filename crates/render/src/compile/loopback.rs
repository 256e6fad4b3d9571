//! VRF loopbacks reach the other nodes: each node's loopback address is a host route (`/32`,
//! `/128`) that the loopback's own policy exports. As the Go operator appends the address to the
//! VRF's export filter after the user's entries, render appends `permit ADDRESS/32` to the
//! policy's export list after the user's items, so an export item of the same policy that
//! matches the address first (e.g. `deny 10.9.0.0/24 le 32`) keeps it unexported.

use ipnet::IpNet;
use netrollout_api::{PrefixAction, PrefixItem};

use super::{Compiler, VRF_KIND};

impl Compiler {
    /// The prefix-list sequence of each loopback's export item: after every export item of the
    /// same address family (their `seq`, else their position from 1), in loopback order.
    /// `None` for a loopback whose family has no sequence left (a problem is reported).
    pub(super) fn loopback_seqs(
        &mut self,
        object: &str,
        export: &[PrefixItem],
        loopbacks: &[(String, IpNet)],
    ) -> Vec<Option<u32>> {
        let last = |v6: bool| {
            export
                .iter()
                .enumerate()
                .filter(|(_, item)| item.cidr.contains(':') == v6)
                .map(|(i, item)| item.seq.unwrap_or(i as i64 + 1))
                .max()
                .unwrap_or(0)
        };
        let mut next = [last(false) + 1, last(true) + 1];
        loopbacks
            .iter()
            .enumerate()
            .map(|(i, (name, net))| {
                let family = usize::from(matches!(net, IpNet::V6(_)));
                let seq = u32::try_from(next[family]).ok();
                next[family] += 1;
                if seq.is_none() {
                    self.invalid.push(VRF_KIND, object, format!("spec.loopbacks[{i}]"), format!("loopback {name:?} is exported with the prefix-list sequence after this policy's export items, but they use the highest sequence ({}); give them lower seq values", u32::MAX));
                }
                seq
            })
            .collect()
    }
}

/// A node's loopback address as a host route, e.g. `10.9.0.7/32`.
pub(crate) fn host_route(addr: std::net::IpAddr) -> String {
    let len = if addr.is_ipv4() { 32 } else { 128 };
    format!("{addr}/{len}")
}

/// The export item that announces a node's loopback address.
pub(crate) fn export_item(addr: std::net::IpAddr, seq: u32) -> PrefixItem {
    PrefixItem {
        cidr: host_route(addr),
        seq: Some(seq.into()),
        ge: None,
        le: None,
        action: PrefixAction::Permit,
    }
}
