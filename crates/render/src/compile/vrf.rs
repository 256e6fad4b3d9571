//! `VRFRouteConfiguration`s: inputs grouped by VRF name, the values a VRF's inputs must agree
//! on, each input's policy (prefix lists, communities, loopbacks), and the VRF's interface names
//! and table id.

use std::collections::BTreeMap;

use netrollout_api::naming::{
    LOOPBACK_PREFIX, MAX_IFNAME, MAX_VRF_NAME, VETH_DEFAULT_PREFIX, VETH_VRF_PREFIX,
    VRF_BRIDGE_PREFIX, VRF_PREFIX, VRF_VXLAN_PREFIX, interface,
};
use netrollout_api::{NamedInput, PrefixItem, VRFRouteConfigurationSpec, VrfConfig, VrfPolicy};

use super::{Compiler, Owner, Policy, VRF_KIND, in_range, network};

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
            // Problems of a shared value name the input that set it.
            let vni_owner = vni.as_ref().map_or(first, |(_, o)| *o);
            let vni = vni.and_then(|(v, o)| self.vni(VRF_KIND, o, "spec.vni", v));
            let mtu = mtu.and_then(|(m, o)| {
                in_range(
                    &mut self.invalid,
                    VRF_KIND,
                    o,
                    "spec.mtu",
                    m.into(),
                    1000,
                    9000,
                )
            });
            if let Some((rt, owner)) = &route_target
                && !is_route_target(rt)
            {
                let message = format!(
                    "{rt:?} is not a route target; write ASN:number or IPv4:number, e.g. 65188:2026"
                );
                self.invalid
                    .push(VRF_KIND, owner, "spec.routeTarget", message);
            }
            if let Some((_, owner)) = &route_target
                && vni.is_none()
            {
                let message = "a route target needs the VRF's layer-3 VNI (it is an EVPN attribute); set spec.vni or remove spec.routeTarget".to_string();
                self.invalid
                    .push(VRF_KIND, owner, "spec.routeTarget", message);
            }
            let route_target = route_target.map(|(rt, _)| rt);
            let table_id =
                vni.unwrap_or_else(|| DERIVED_TABLE_BASE + fnv1a(vrf) % DERIVED_TABLE_SPAN);
            let table_field = if vni.is_some() {
                "spec.vni"
            } else {
                "spec.vrf"
            };
            self.claim_table(
                table_id,
                format!("the table of VRF {vrf:?}"),
                VRF_KIND,
                vni_owner,
                table_field,
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

    /// A value every input of one VRF must agree on, with the input that set it; the first one
    /// set wins, others that differ are problems.
    fn shared<'m, T: PartialEq + std::fmt::Debug>(
        &mut self,
        members: &[&'m NamedInput<VRFRouteConfigurationSpec>],
        field: &str,
        get: impl Fn(&VRFRouteConfigurationSpec) -> Option<T>,
    ) -> Option<(T, &'m str)> {
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
        chosen
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
                self.prefix_item(VRF_KIND, name, &format!("spec.{list}[{i}]"), item);
            }
            self.prefix_seqs(VRF_KIND, name, list, items);
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
        // Each community is reported under the field it was written in.
        let written: Vec<(String, &String)> = spec
            .community
            .iter()
            .map(|c| ("spec.community".to_string(), c))
            .chain(
                spec.communities
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (format!("spec.communities[{i}]"), c)),
            )
            .collect();
        for (field, community) in &written {
            if !is_community(community) {
                self.invalid.push(
                    VRF_KIND,
                    name,
                    field.clone(),
                    format!("{community:?} is not a BGP community; write AS:number (each 0 to 65535, e.g. 65000:100), a large community a:b:c (each 0 to 4294967295, e.g. 4200000000:1:2) or a well-known name such as no-export"),
                );
            }
        }
        let communities: Vec<String> = written.into_iter().map(|(_, c)| c.clone()).collect();
        if !communities.is_empty() && spec.export.is_empty() {
            let field = if spec.community.is_some() {
                "spec.community"
            } else {
                "spec.communities"
            };
            self.invalid.push(VRF_KIND, name, field, "communities are set on exported routes, but this policy exports nothing; add spec.export entries or remove the communities".to_string());
        }
        let mut loopbacks = Vec::new();
        for (i, lo) in spec.loopbacks.iter().enumerate() {
            let field = format!("spec.loopbacks[{i}]");
            if !netrollout_api::naming::is_user_ifname(&lo.name) {
                self.invalid.push(VRF_KIND, name, format!("{field}.name"), format!("loopback name {:?} must start with {LOOPBACK_PREFIX:?}, go on with letters, digits, '.', '_' or '-' (Linux refuses '/', ':' and whitespace in interface names) and be at most {MAX_IFNAME} bytes, e.g. {:?}", lo.name, interface(LOOPBACK_PREFIX, "mirror")));
            } else {
                let me = Owner {
                    kind: VRF_KIND,
                    object: name.to_string(),
                    field: format!("{field}.name"),
                    what: format!("{VRF_KIND} {name:?}"),
                };
                if let Some(owner) = self.loopback_owners.get(&lo.name).cloned() {
                    let (guilty, innocent) = self.blame(owner, me);
                    let message = format!(
                        "loopback {:?} is also defined by {} in {}{}; interface names must be unique on a node",
                        lo.name,
                        innocent.what,
                        innocent.field,
                        self.standing(&innocent)
                    );
                    self.invalid
                        .push(VRF_KIND, &guilty.object, &guilty.field, message);
                    self.loopback_owners.insert(lo.name.clone(), innocent);
                } else {
                    self.loopback_owners.insert(lo.name.clone(), me);
                }
            }
            // One rule for every network field: host bits are refused, never dropped.
            if let Some(net) = network(
                &mut self.invalid,
                VRF_KIND,
                name,
                &format!("{field}.subnet"),
                &lo.subnet,
            ) {
                loopbacks.push((lo.name.clone(), net));
            }
        }
        let loopback_seqs = self.loopback_seqs(name, &spec.export, &loopbacks);
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
            loopback_seqs,
        });
    }

    /// The sequence numbers FRR gets (an item's `seq`, else its position from 1) must be unique
    /// per prefix list and address family: FRR would silently replace the earlier entry.
    pub(super) fn prefix_seqs(
        &mut self,
        kind: &'static str,
        object: &str,
        list: &str,
        items: &[PrefixItem],
    ) {
        let mut seen: BTreeMap<(bool, i64), usize> = BTreeMap::new();
        for (i, item) in items.iter().enumerate() {
            let seq = item.seq.unwrap_or(i as i64 + 1);
            let v6 = item.cidr.contains(':');
            if let Some(first) = seen.insert((v6, seq), i) {
                self.invalid.push(kind, object, format!("spec.{list}[{i}].seq"), format!("sequence {seq} is also used by spec.{list}[{first}] (an item without seq gets its position, counted from 1); give every item of the same address family its own seq"));
            }
        }
    }

    pub(super) fn prefix_item(
        &mut self,
        kind: &'static str,
        object: &str,
        field: &str,
        item: &PrefixItem,
    ) {
        let Some(net) = network(
            &mut self.invalid,
            kind,
            object,
            &format!("{field}.cidr"),
            &item.cidr,
        ) else {
            return;
        };
        if let Some(seq) = item.seq {
            in_range::<u32>(
                &mut self.invalid,
                kind,
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
                    kind,
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
                kind,
                object,
                format!("{field}.ge"),
                format!("ge {ge} is greater than le {le}; ge must not exceed le"),
            );
        }
    }
}

/// The route-target forms FRR accepts: `ASN2:u32`, `ASN4:u16`, `IPv4:u16`.
fn is_route_target(rt: &str) -> bool {
    let Some((admin, number)) = rt.split_once(':') else {
        return false;
    };
    match (admin.parse::<u32>(), crate::net::parse_ip(admin)) {
        (Ok(asn), _) if asn <= u32::from(u16::MAX) => number.parse::<u32>().is_ok(),
        (Ok(_), _) => number.parse::<u16>().is_ok(),
        (_, Ok(ip)) => ip.is_ipv4() && number.parse::<u16>().is_ok(),
        _ => false,
    }
}

/// Well-known community names FRR's `set community` accepts.
const WELL_KNOWN_COMMUNITIES: &[&str] = &[
    "internet",
    "graceful-shutdown",
    "accept-own",
    "llgr-stale",
    "no-llgr",
    "blackhole",
    "no-export",
    "no-advertise",
    "local-AS",
    "no-peer",
];

/// A community FRR's route maps take: a standard one for `set community` (`AS:number`, both 0
/// to 65535, a 32-bit number, or a well-known name) or a large one for `set large-community`
/// (`a:b:c`, each 0 to 4294967295; RFC 8092).
fn is_community(c: &str) -> bool {
    if WELL_KNOWN_COMMUNITIES.contains(&c) || c.parse::<u32>().is_ok() {
        return true;
    }
    let parts: Vec<&str> = c.split(':').collect();
    match parts.as_slice() {
        [a, n] => a.parse::<u16>().is_ok() && n.parse::<u16>().is_ok(),
        [a, b, n] => [a, b, n].iter().all(|p| p.parse::<u32>().is_ok()),
        _ => false,
    }
}

/// FNV-1a, for stable derived table ids.
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}
