//! `BGPPeering`s: the layer-2 network a peering listens on (it must exist and have anycast
//! gateways; its gateways' subnets are the listen ranges, in its VRF) or the loopback addresses
//! it peers with, the AS number, the timers, the prefix limit and the import and export lists.
//! No two peerings may listen on overlapping ranges or peer with the same address in one VRF:
//! FRR would give the sessions to one of them only.

use std::collections::BTreeMap;

use ipnet::IpNet;
use netrollout_api::{BGPPeeringSpec, BgpPeeringConfig, NamedInput};

use super::blame::Owner;
use super::{Compiler, LAYER2_KIND, PEERING_KIND, Peering, in_range};

impl Compiler {
    pub(super) fn peerings(&mut self, inputs: &[NamedInput<BGPPeeringSpec>]) {
        // VRF (empty: the default VRF) → the ranges and addresses claimed in it.
        let mut claimed: BTreeMap<String, Vec<(IpNet, Owner)>> = BTreeMap::new();
        for input in inputs {
            let (name, spec) = (input.name.as_str(), &input.spec);
            let asn = in_range::<u32>(
                &mut self.invalid,
                PEERING_KIND,
                name,
                "spec.remoteASN",
                spec.remote_asn,
                1,
                u32::MAX.into(),
            );
            let maximum_prefixes = spec.maximum_prefixes.and_then(|m| {
                in_range::<u32>(
                    &mut self.invalid,
                    PEERING_KIND,
                    name,
                    "spec.maximumPrefixes",
                    m,
                    1,
                    u32::MAX.into(),
                )
            });
            let (keepalive, hold) = self.timers(name, spec);
            for (list, items) in [("import", &spec.import), ("export", &spec.export)] {
                for (i, item) in items.iter().enumerate() {
                    self.prefix_item(PEERING_KIND, name, &format!("spec.{list}[{i}]"), item);
                }
                self.prefix_seqs(PEERING_KIND, name, list, items);
            }
            let mut config = BgpPeeringConfig {
                source: name.to_string(),
                remote_asn: asn.unwrap_or_default(),
                bfd: spec.enable_bfd,
                maximum_prefixes,
                keepalive_seconds: keepalive,
                hold_seconds: hold,
                import: spec.import.clone(),
                export: spec.export.clone(),
                ..BgpPeeringConfig::default()
            };
            // (range or address, field) claimed in the peering's VRF.
            let mut claims: Vec<(IpNet, String)> = Vec::new();
            let mut layer2 = None;
            match (&spec.peering_vlan, &spec.loopback_peer) {
                (Some(_), Some(_)) => self.invalid.push(PEERING_KIND, name, "spec.loopbackPeer", "peeringVlan and loopbackPeer exclude each other (the Go operator used peeringVlan and ignored loopbackPeer); keep one of them, or write two BGPPeerings"),
                (None, None) => self.invalid.push(PEERING_KIND, name, "spec.peeringVlan", "a BGPPeering needs peeringVlan (workloads on a layer-2 network) or loopbackPeer (workloads at fixed addresses); set one of them"),
                (Some(vlan), None) => {
                    let found = self.out.layer2s.iter().position(|l| l.config.source == vlan.name);
                    match found {
                        None => self.invalid.push(PEERING_KIND, name, "spec.peeringVlan.name", format!("no {LAYER2_KIND} is named {:?}; name the layer-2 network whose workloads peer (its metadata.name)", vlan.name)),
                        Some(l) if self.out.layer2s[l].config.anycast_gateways.is_empty() => self.invalid.push(PEERING_KIND, name, "spec.peeringVlan.name", format!("{LAYER2_KIND} {:?} has no anycastGateways, so there is no subnet to listen on; give it gateways or peer over loopbackPeer", vlan.name)),
                        Some(l) => {
                            let l2 = &self.out.layer2s[l].config;
                            config.vrf = l2.vrf.clone();
                            for gw in &l2.anycast_gateways {
                                // Validated with the layer-2 network; a bad one is reported there.
                                if let Ok(net) = crate::net::parse_cidr(gw) {
                                    claims.push((net.trunc(), "spec.peeringVlan.name".into()));
                                    config.listen_ranges.push(net.trunc().to_string());
                                }
                            }
                            layer2 = Some(l);
                        }
                    }
                }
                (None, Some(lo)) => {
                    if lo.ip_addresses.is_empty() {
                        self.invalid.push(PEERING_KIND, name, "spec.loopbackPeer.ips", "list the workloads' addresses: one IPv4 and/or one IPv6 address");
                    }
                    if lo.ip_addresses.len() > 2 {
                        self.invalid.push(PEERING_KIND, name, "spec.loopbackPeer.ips", "loopbackPeer.ips holds one IPv4 and/or one IPv6 address; write another BGPPeering for more workloads");
                    }
                    let mut families = Vec::new();
                    for (i, ip) in lo.ip_addresses.iter().enumerate() {
                        let field = format!("spec.loopbackPeer.ips[{i}]");
                        match crate::net::parse_ip(ip) {
                            Err(e) => self.invalid.push(PEERING_KIND, name, field, e.to_string()),
                            Ok(addr) if families.contains(&addr.is_ipv4()) => self.invalid.push(PEERING_KIND, name, field, "loopbackPeer.ips holds one IPv4 and/or one IPv6 address, not two of one family"),
                            Ok(addr) => {
                                families.push(addr.is_ipv4());
                                claims.push((IpNet::from(addr), field));
                                config.neighbors.push(addr.to_string());
                            }
                        }
                    }
                }
            }
            let vrf_key = config.vrf.clone().unwrap_or_default();
            let taken = claimed.entry(vrf_key.clone()).or_default();
            for (net, field) in claims {
                let clash = taken.iter().find(|(other, _)| {
                    other.contains(&net.network()) || net.contains(&other.network())
                });
                if let Some((other, owner)) = clash {
                    let in_vrf = if vrf_key.is_empty() {
                        "the default VRF".to_string()
                    } else {
                        format!("VRF {vrf_key:?}")
                    };
                    let message = format!(
                        "{net} overlaps {other}, where {} ({}) already peers in {in_vrf}; FRR would give the sessions to one peering only: merge the two peerings or peer on other networks",
                        owner.what, owner.field
                    );
                    self.invalid.push(PEERING_KIND, name, field, message);
                    continue;
                }
                taken.push((
                    net,
                    Owner {
                        kind: PEERING_KIND,
                        object: name.to_string(),
                        field,
                        what: format!("{PEERING_KIND} {name:?}"),
                    },
                ));
            }
            let selector = self.selector(PEERING_KIND, name, spec.node_selector.as_ref());
            self.out.peerings.push(Peering {
                config,
                selector,
                layer2,
            });
        }
        self.out
            .peerings
            .sort_by(|a, b| a.config.source.cmp(&b.config.source));
    }

    /// `(keepalive, hold)` in seconds: both or neither, whole seconds, keepalive 0 to 65535,
    /// hold 0 or 3 to 65535 (RFC 4271).
    fn timers(&mut self, name: &str, spec: &BGPPeeringSpec) -> (Option<u32>, Option<u32>) {
        let mut seconds = |field: &str, text: &Option<String>, min: u32| {
            let text = text.as_deref()?;
            let Some(secs) = whole_seconds(text) else {
                self.invalid.push(
                    PEERING_KIND,
                    name,
                    field,
                    format!("{text:?} is not a duration in whole seconds; write e.g. 90s or 1m30s"),
                );
                return None;
            };
            if secs > 65535 || (secs != 0 && secs < u64::from(min)) {
                let lowest = if min > 0 {
                    format!("0s or from {min}s")
                } else {
                    "from 0s".into()
                };
                self.invalid.push(
                    PEERING_KIND,
                    name,
                    field,
                    format!("{text} is out of range; use {lowest} to 65535s"),
                );
                return None;
            }
            Some(secs as u32)
        };
        let keepalive = seconds("spec.keepaliveTime", &spec.keepalive_time, 0);
        let hold = seconds("spec.holdTime", &spec.hold_time, 3);
        if spec.hold_time.is_some() != spec.keepalive_time.is_some() {
            self.invalid.push(PEERING_KIND, name, "spec.holdTime", "holdTime and keepaliveTime are set together (FRR's `neighbor timers` takes both; the Go operator ignored one alone); set both or neither");
            return (None, None);
        }
        (keepalive, hold)
    }
}

/// Seconds of a Go duration written in whole hours, minutes and seconds (`1h`, `1m30s`, `90s`,
/// `0s`), the form the CRD's pattern admits; `None` for anything else.
pub(crate) fn whole_seconds(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    let (mut total, mut digits, mut last_unit) = (0u64, String::new(), 0u8);
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let (rank, factor) = match c {
            'h' => (1, 3600),
            'm' => (2, 60),
            's' => (3, 1),
            _ => return None,
        };
        if digits.is_empty() || digits.len() > 5 || rank <= last_unit {
            return None;
        }
        total += digits.parse::<u64>().ok()? * factor;
        digits.clear();
        last_unit = rank;
    }
    digits.is_empty().then_some(total)
}

#[cfg(test)]
mod tests {
    use super::whole_seconds;

    #[test]
    fn whole_seconds_reads_go_durations_of_hours_minutes_and_seconds() {
        assert_eq!(whole_seconds("90s"), Some(90));
        assert_eq!(whole_seconds("1m30s"), Some(90));
        assert_eq!(whole_seconds("1h"), Some(3600));
        assert_eq!(whole_seconds("0s"), Some(0));
        for bad in [
            "", "90", "1.5s", "30s1m", "1s1s", "500ms", "-3s", "s", "123456s",
        ] {
            assert_eq!(whole_seconds(bad), None, "{bad}");
        }
    }
}
