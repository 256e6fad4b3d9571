//! `VRFRouteConfiguration`s: inputs grouped by VRF name, the values a VRF's inputs must agree
//! on, each input's policy (prefix lists, communities, loopbacks), and the VRF's interface names
//! and table id.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use netrollout_api::naming::{
    LOOPBACK_PREFIX, MAX_IFNAME, MAX_VRF_NAME, VETH_DEFAULT_PREFIX, VETH_VRF_PREFIX,
    VRF_BRIDGE_PREFIX, VRF_PREFIX, VRF_VXLAN_PREFIX, interface,
};
use netrollout_api::{NamedInput, PrefixItem, VRFRouteConfigurationSpec, VrfConfig, VrfPolicy};

use super::{Compiler, Policy, VRF_KIND, in_range, network};

/// VRFs without a VNI get a table id in `[base, base + span)` derived from their name.
const DERIVED_TABLE_BASE: u32 = 100_000_000;
const DERIVED_TABLE_SPAN: u32 = 100_000_000;

impl Compiler {
    pub(super) fn vrfs(&mut self, inputs: &[NamedInput<VRFRouteConfigurationSpec>]) {
        // Group inputs by VRF name; inputs are sorted by object name already.
        let mut groups: BTreeMap<&str, Vec<&NamedInput<VRFRouteConfigurationSpec>>> =
            BTreeMap::new();
        for input in inputs {
            if self.vrf_name_ok(&input.name, &input.spec.vrf) {
                groups
                    .entry(input.spec.vrf.as_str())
                    .or_default()
                    .push(input);
            }
        }
        for (vrf, members) in groups {
            let index = self.out.vrfs.len();
            let vni = self.shared(members.as_slice(), "spec.vni", |s| s.vni);
            let route_target = self.shared(members.as_slice(), "spec.routeTarget", |s| {
                s.route_target.clone()
            });
            let mtu = self.shared(members.as_slice(), "spec.mtu", |s| s.mtu);
            let first = members[0].name.as_str();
            let vni = vni.and_then(|v| self.vni(VRF_KIND, first, "spec.vni", v));
            let mtu = mtu.and_then(|m| {
                in_range(
                    &mut self.invalid,
                    VRF_KIND,
                    first,
                    "spec.mtu",
                    m.into(),
                    1000,
                    9000,
                )
            });
            if let Some(rt) = &route_target
                && !is_route_target(rt)
            {
                let message = format!(
                    "{rt:?} is not a route target; write ASN:number or IPv4:number, e.g. 65188:2026"
                );
                self.invalid
                    .push(VRF_KIND, first, "spec.routeTarget", message);
            }
            let table_id =
                vni.unwrap_or_else(|| DERIVED_TABLE_BASE + fnv1a(vrf) % DERIVED_TABLE_SPAN);
            self.claim_table(
                table_id,
                format!("the table of VRF {vrf:?}"),
                VRF_KIND,
                first,
                "spec.vrf",
            );
            let has_vni = vni.is_some();
            self.out.vrfs.push(VrfConfig {
                name: vrf.to_string(),
                table_id,
                vrf_interface: interface(VRF_PREFIX, vrf),
                bridge_interface: has_vni.then(|| interface(VRF_BRIDGE_PREFIX, vrf)),
                vxlan_interface: has_vni.then(|| interface(VRF_VXLAN_PREFIX, vrf)),
                veth_default_interface: interface(VETH_DEFAULT_PREFIX, vrf),
                veth_vrf_interface: interface(VETH_VRF_PREFIX, vrf),
                vni,
                route_target,
                mtu,
                ..VrfConfig::default()
            });
            let mut seqs: BTreeMap<i32, &str> = BTreeMap::new();
            for input in members {
                if let Some(other) = seqs.insert(input.spec.seq, &input.name) {
                    self.invalid.push(VRF_KIND, &input.name, "spec.seq", format!("seq {} is also used by {VRF_KIND} {other:?} for VRF {vrf:?}; give each policy of a VRF its own seq", input.spec.seq));
                }
                self.policy(index, input);
            }
        }
        self.out.policies.sort_by_key(|p| (p.vrf, p.policy.seq));
    }

    fn vrf_name_ok(&mut self, object: &str, vrf: &str) -> bool {
        let ok = !vrf.is_empty()
            && vrf.len() <= MAX_VRF_NAME
            && vrf
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            self.invalid.push(VRF_KIND, object, "spec.vrf", format!("VRF name {vrf:?} must be 1 to {MAX_VRF_NAME} letters, digits, '-' or '_' so that its interface names (e.g. {:?}) fit the kernel's {MAX_IFNAME} bytes", interface(VRF_PREFIX, vrf)));
        }
        ok
    }

    /// A value every input of one VRF must agree on; the first one set wins, others that differ
    /// are problems.
    fn shared<T: PartialEq + std::fmt::Debug>(
        &mut self,
        members: &[&NamedInput<VRFRouteConfigurationSpec>],
        field: &str,
        get: impl Fn(&VRFRouteConfigurationSpec) -> Option<T>,
    ) -> Option<T> {
        let mut chosen: Option<(T, &str)> = None;
        for input in members {
            let Some(value) = get(&input.spec) else {
                continue;
            };
            match &chosen {
                Some((first, owner)) if *first != value => self.invalid.push(VRF_KIND, &input.name, field, format!("{value:?} differs from {first:?} set by {VRF_KIND} {owner:?} for the same VRF {:?}; set it the same in both or in one only", input.spec.vrf)),
                Some(_) => {}
                None => chosen = Some((value, &input.name)),
            }
        }
        chosen.map(|(v, _)| v)
    }

    fn policy(&mut self, vrf: usize, input: &NamedInput<VRFRouteConfigurationSpec>) {
        let (name, spec) = (input.name.as_str(), &input.spec);
        in_range::<i32>(
            &mut self.invalid,
            VRF_KIND,
            name,
            "spec.seq",
            spec.seq.into(),
            1,
            65534,
        );
        for (list, items) in [("import", &spec.import), ("export", &spec.export)] {
            for (i, item) in items.iter().enumerate() {
                self.prefix_item(name, &format!("spec.{list}[{i}]"), item);
            }
        }
        for (list, cidrs) in [
            ("aggregate", &spec.aggregate),
            ("sbrPrefixes", &spec.sbr_prefixes),
        ] {
            for (i, cidr) in cidrs.iter().enumerate() {
                network(
                    &mut self.invalid,
                    VRF_KIND,
                    name,
                    &format!("spec.{list}[{i}]"),
                    cidr,
                );
            }
        }
        let communities: Vec<String> = spec
            .community
            .iter()
            .chain(&spec.communities)
            .cloned()
            .collect();
        for (i, community) in communities.iter().enumerate() {
            if community.is_empty()
                || community.len() > 64
                || community.contains(char::is_whitespace)
            {
                self.invalid.push(
                    VRF_KIND,
                    name,
                    format!("spec.communities[{i}]"),
                    format!("{community:?} is not a BGP community; write e.g. 65000:100"),
                );
            }
        }
        let mut loopbacks = Vec::new();
        for (i, lo) in spec.loopbacks.iter().enumerate() {
            let field = format!("spec.loopbacks[{i}]");
            if !lo.name.starts_with(LOOPBACK_PREFIX)
                || !netrollout_api::naming::fits(&lo.name)
                || lo.name.len() <= LOOPBACK_PREFIX.len()
            {
                self.invalid.push(VRF_KIND, name, format!("{field}.name"), format!("loopback name {:?} must start with {LOOPBACK_PREFIX:?} and be at most {MAX_IFNAME} bytes, e.g. {:?}", lo.name, interface(LOOPBACK_PREFIX, "mirror")));
            } else if let Some(owner) = self
                .loopback_owners
                .insert(lo.name.clone(), name.to_string())
            {
                self.invalid.push(VRF_KIND, name, format!("{field}.name"), format!("loopback {:?} is also defined by {VRF_KIND} {owner:?}; interface names must be unique on a node", lo.name));
            }
            match lo.subnet.parse::<IpNet>() {
                Ok(net) => loopbacks.push((lo.name.clone(), net.trunc())),
                Err(_) => self.invalid.push(
                    VRF_KIND,
                    name,
                    format!("{field}.subnet"),
                    format!("{:?} is not a CIDR; write e.g. 10.9.0.0/24", lo.subnet),
                ),
            }
        }
        let selector = self.selector(VRF_KIND, name, spec.node_selector.as_ref());
        self.out.policies.push(Policy {
            vrf,
            selector,
            policy: VrfPolicy {
                source: name.to_string(),
                seq: spec.seq,
                import: spec.import.clone(),
                export: spec.export.clone(),
                aggregate: spec.aggregate.clone(),
                communities,
            },
            sbr_prefixes: spec.sbr_prefixes.clone(),
            loopbacks,
        });
    }

    fn prefix_item(&mut self, object: &str, field: &str, item: &PrefixItem) {
        let Some(net) = network(
            &mut self.invalid,
            VRF_KIND,
            object,
            &format!("{field}.cidr"),
            &item.cidr,
        ) else {
            return;
        };
        if let Some(seq) = item.seq {
            in_range::<u32>(
                &mut self.invalid,
                VRF_KIND,
                object,
                &format!("{field}.seq"),
                seq,
                1,
                u32::MAX.into(),
            );
        }
        let (len, max) = (i64::from(net.prefix_len()), i64::from(net.max_prefix_len()));
        for (name, value) in [("ge", item.ge), ("le", item.le)] {
            if let Some(v) = value {
                in_range::<u8>(
                    &mut self.invalid,
                    VRF_KIND,
                    object,
                    &format!("{field}.{name}"),
                    v.into(),
                    len,
                    max,
                );
            }
        }
        if let (Some(ge), Some(le)) = (item.ge, item.le)
            && ge > le
        {
            self.invalid.push(
                VRF_KIND,
                object,
                format!("{field}.ge"),
                format!("ge {ge} is greater than le {le}; ge must not exceed le"),
            );
        }
    }
}

fn is_route_target(rt: &str) -> bool {
    let Some((admin, number)) = rt.split_once(':') else {
        return false;
    };
    let admin_ok =
        admin.parse::<u32>().is_ok() || admin.parse::<IpAddr>().is_ok_and(|a| a.is_ipv4());
    admin_ok && number.parse::<u32>().is_ok()
}

/// FNV-1a, for stable derived table ids.
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}
