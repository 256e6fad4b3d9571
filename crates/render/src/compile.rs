//! Validating a snapshot and deriving what every node needs from it: interface names, table ids,
//! compiled selectors. Every problem is reported at once, naming the object, field and fix.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use ipnet::IpNet;
use netrollout_api::{
    Layer2Config, NamedInput, PrefixItem, RoutingTableConfig, Snapshot, VRFRouteConfigurationSpec,
    VrfConfig, VrfPolicy,
};

use crate::selector::Selector;
use crate::{Invalid, Result};

/// Kind name of VRF inputs, as used in problems.
pub const VRF_KIND: &str = "VRFRouteConfiguration";
/// Kind name of layer-2 inputs, as used in problems.
pub const LAYER2_KIND: &str = "Layer2NetworkConfiguration";
/// Kind name of routing-table inputs, as used in problems.
pub const TABLE_KIND: &str = "RoutingTable";
/// Longest Linux interface name in bytes.
pub const MAX_IFNAME: usize = 15;
/// Loopback interface names must carry this prefix so the agent knows it manages them.
pub const LOOPBACK_PREFIX: &str = "lo.";
/// VRFs without a VNI get a table id in `[base, base + span)` derived from their name.
const DERIVED_TABLE_BASE: u32 = 100_000_000;
const DERIVED_TABLE_SPAN: u32 = 100_000_000;

/// A validated snapshot, ready to be rendered for any set of nodes.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    pub(crate) selectors: Vec<Selector>,
    pub(crate) vrfs: Vec<VrfConfig>,
    pub(crate) policies: Vec<Policy>,
    pub(crate) layer2s: Vec<Layer2>,
    pub(crate) tables: Vec<Table>,
}

/// What one `VRFRouteConfiguration` adds to its VRF on the nodes it selects.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    pub(crate) vrf: usize,
    pub(crate) selector: usize,
    pub(crate) policy: VrfPolicy,
    pub(crate) sbr_prefixes: Vec<String>,
    pub(crate) loopbacks: Vec<(String, IpNet)>,
}

#[derive(Clone, Debug)]
pub(crate) struct Layer2 {
    pub(crate) config: Layer2Config,
    pub(crate) selector: usize,
    pub(crate) vrf: Option<usize>,
}

#[derive(Clone, Debug)]
pub(crate) struct Table {
    pub(crate) config: RoutingTableConfig,
    pub(crate) selector: usize,
}

/// Validates a snapshot and derives names and table ids.
///
/// # Errors
/// [`crate::Error::Invalid`] listing every problem found.
pub fn compile(snapshot: &Snapshot) -> Result<Compiled> {
    let mut c = Compiler::default();
    c.vrfs(&snapshot.vrf_route_configurations);
    c.layer2s(&snapshot.layer2_network_configurations);
    c.tables(&snapshot.routing_tables);
    let Compiler { out, invalid, .. } = c;
    invalid.into_result(out)
}

#[derive(Default)]
struct Compiler {
    out: Compiled,
    invalid: Invalid,
    selector_ids: HashMap<Selector, usize>,
    /// Table id → who owns it, for clash messages.
    table_owners: BTreeMap<u32, String>,
    /// VNI → who owns it.
    vni_owners: BTreeMap<u32, String>,
    /// Loopback name → owning input.
    loopback_owners: BTreeMap<String, String>,
}

impl Compiler {
    fn selector(
        &mut self,
        kind: &'static str,
        name: &str,
        sel: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    ) -> usize {
        match Selector::compile(sel) {
            Ok(sel) => {
                let next = self.out.selectors.len();
                let id = *self.selector_ids.entry(sel.clone()).or_insert(next);
                if id == next {
                    self.out.selectors.push(sel);
                }
                id
            }
            Err(problems) => {
                for (field, message) in problems {
                    self.invalid
                        .push(kind, name, format!("spec.nodeSelector.{field}"), message);
                }
                0
            }
        }
    }

    fn vrfs(&mut self, inputs: &[NamedInput<VRFRouteConfigurationSpec>]) {
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
            if route_target.is_some() && vni.is_none() {
                let message = "a route target needs the VRF's layer-3 VNI (it is an EVPN attribute); set spec.vni or remove spec.routeTarget".to_string();
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
                vrf_interface: format!("vr.{vrf}"),
                bridge_interface: has_vni.then(|| format!("br.{vrf}")),
                vxlan_interface: has_vni.then(|| format!("vx.{vrf}")),
                veth_default_interface: format!("vd.{vrf}"),
                veth_vrf_interface: format!("vv.{vrf}"),
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
            && vrf.len() <= 12
            && vrf
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            self.invalid.push(VRF_KIND, object, "spec.vrf", format!("VRF name {vrf:?} must be 1 to 12 letters, digits, '-' or '_' so that its interface names (e.g. \"vr.{vrf}\") fit the kernel's {MAX_IFNAME} bytes"));
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
            self.prefix_seqs(name, list, items);
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
            if !is_community(community) {
                self.invalid.push(
                    VRF_KIND,
                    name,
                    format!("spec.communities[{i}]"),
                    format!("{community:?} is not a BGP community; write AS:number (each 0 to 65535, e.g. 65000:100) or a well-known name such as no-export"),
                );
            }
        }
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
            if !lo.name.starts_with(LOOPBACK_PREFIX)
                || lo.name.len() > MAX_IFNAME
                || lo.name.len() <= LOOPBACK_PREFIX.len()
            {
                self.invalid.push(VRF_KIND, name, format!("{field}.name"), format!("loopback name {:?} must start with {LOOPBACK_PREFIX:?} and be at most {MAX_IFNAME} bytes, e.g. \"lo.mirror\"", lo.name));
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

    /// The sequence numbers FRR gets (an item's `seq`, else its position from 1) must be unique
    /// per prefix list and address family: FRR would silently replace the earlier entry.
    fn prefix_seqs(&mut self, object: &str, list: &str, items: &[PrefixItem]) {
        let mut seen: BTreeMap<(bool, i64), usize> = BTreeMap::new();
        for (i, item) in items.iter().enumerate() {
            let seq = item.seq.unwrap_or(i as i64 + 1);
            let v6 = item.cidr.contains(':');
            if let Some(first) = seen.insert((v6, seq), i) {
                self.invalid.push(VRF_KIND, object, format!("spec.{list}[{i}].seq"), format!("sequence {seq} is also used by spec.{list}[{first}] (an item without seq gets its position, counted from 1); give every item of the same address family its own seq"));
            }
        }
    }

    fn vni(&mut self, kind: &'static str, object: &str, field: &str, vni: i64) -> Option<u32> {
        let vni = in_range(&mut self.invalid, kind, object, field, vni, 1, 16_777_215)?;
        if let Some(owner) = self.vni_owners.get(&vni) {
            self.invalid.push(kind, object, field, format!("VNI {vni} is also used by {owner}; give each VRF and layer-2 network its own VNI"));
            return None;
        }
        self.vni_owners.insert(vni, format!("{kind} {object:?}"));
        Some(vni)
    }

    fn claim_table(
        &mut self,
        table: u32,
        what: String,
        kind: &'static str,
        object: &str,
        field: &str,
    ) {
        if let Some(owner) = self.table_owners.get(&table) {
            self.invalid.push(
                kind,
                object,
                field,
                format!(
                    "routing table {table} ({what}) is also {owner}; choose another table id or VNI"
                ),
            );
        } else {
            self.table_owners.insert(table, what);
        }
    }

    fn layer2s(&mut self, inputs: &[NamedInput<netrollout_api::Layer2NetworkConfigurationSpec>]) {
        let mut ids: BTreeMap<u16, &str> = BTreeMap::new();
        for input in inputs {
            let (name, spec) = (input.name.as_str(), &input.spec);
            let id = in_range::<u16>(
                &mut self.invalid,
                LAYER2_KIND,
                name,
                "spec.id",
                spec.id.into(),
                1,
                4094,
            );
            if let Some(id) = id
                && let Some(other) = ids.insert(id, name)
            {
                let message = format!(
                    "VLAN {id} is also used by {LAYER2_KIND} {other:?}; \
                     give each layer-2 network its own VLAN id"
                );
                self.invalid.push(LAYER2_KIND, name, "spec.id", message);
            }
            let vni = self.vni(LAYER2_KIND, name, "spec.vni", spec.vni);
            let mtu = in_range(
                &mut self.invalid,
                LAYER2_KIND,
                name,
                "spec.mtu",
                spec.mtu.into(),
                1000,
                9000,
            );
            let anycast_mac = spec.anycast_mac.as_ref().and_then(|mac| {
                let ok = mac.len() == 17 && mac.split(':').all(|b| b.len() == 2 && b.bytes().all(|c| c.is_ascii_hexdigit()));
                if !ok {
                    self.invalid.push(LAYER2_KIND, name, "spec.anycastMac", format!("{mac:?} is not a MAC address; write six hex pairs, e.g. 1a:ee:cf:2f:a7:a8"));
                }
                ok.then(|| mac.to_ascii_lowercase())
            });
            for (i, gw) in spec.anycast_gateways.iter().enumerate() {
                if gw.parse::<IpNet>().is_err() {
                    self.invalid.push(
                        LAYER2_KIND,
                        name,
                        format!("spec.anycastGateways[{i}]"),
                        format!(
                            "{gw:?} is not an address with prefix length; write e.g. 10.250.0.1/24"
                        ),
                    );
                }
            }
            if spec.advertise_neighbors {
                self.invalid.push(LAYER2_KIND, name, "spec.advertiseNeighbors", "advertiseNeighbors is not supported: netrollout installs no host routes for local neighbours (the Go operator's anycast tracker); remove the field. EVPN type-2 MAC/IP routes already carry each neighbour to the other nodes of the network".to_string());
            }
            let vrf_name = spec.vrf.clone().filter(|v| !v.is_empty());
            let vrf = vrf_name.as_ref().and_then(|v| {
                let found = self.out.vrfs.iter().position(|c| &c.name == v);
                if found.is_none() {
                    self.invalid.push(LAYER2_KIND, name, "spec.vrf", format!("VRF {v:?} is not defined by any {VRF_KIND}; create one with `vrf: {v}` or remove the field"));
                }
                found
            });
            let selector = self.selector(LAYER2_KIND, name, spec.node_selector.as_ref());
            let (Some(id), Some(vni), Some(mtu)) = (id, vni, mtu) else {
                continue;
            };
            self.out.layer2s.push(Layer2 {
                config: Layer2Config {
                    source: name.to_string(),
                    id,
                    vni,
                    mtu,
                    bridge_interface: format!("l2.{id}"),
                    vxlan_interface: format!("lx.{id}"),
                    macvlan_interface: spec.create_macvlan_interface.then(|| format!("mv.{id}")),
                    vrf: vrf_name,
                    anycast_mac,
                    anycast_gateways: spec.anycast_gateways.clone(),
                    advertise_neighbors: spec.advertise_neighbors,
                    neigh_suppression: spec.neigh_suppression.unwrap_or(false),
                    disable_segmentation: spec.disable_segmentation,
                },
                selector,
                vrf,
            });
        }
        self.out.layer2s.sort_by_key(|l| l.config.id);
    }

    fn tables(&mut self, inputs: &[NamedInput<netrollout_api::RoutingTableSpec>]) {
        for input in inputs {
            let name = input.name.as_str();
            let Some(table) = in_range(
                &mut self.invalid,
                TABLE_KIND,
                name,
                "spec.tableId",
                input.spec.table_id,
                1,
                u32::MAX.into(),
            ) else {
                continue;
            };
            if (253..=255).contains(&table) {
                self.invalid.push(TABLE_KIND, name, "spec.tableId", format!("table {table} belongs to the kernel (253 default, 254 main, 255 local); choose another id"));
                continue;
            }
            self.claim_table(
                table,
                format!("{TABLE_KIND} {name:?}"),
                TABLE_KIND,
                name,
                "spec.tableId",
            );
            let selector = self.selector(TABLE_KIND, name, None);
            self.out.tables.push(Table {
                config: RoutingTableConfig {
                    source: name.to_string(),
                    table_id: table,
                    interface: format!("tb.{table}"),
                },
                selector,
            });
        }
        self.out.tables.sort_by_key(|t| t.config.table_id);
    }
}

/// Checks `min <= value <= max` and converts; reports a problem otherwise.
fn in_range<T: TryFrom<i64>>(
    invalid: &mut Invalid,
    kind: &'static str,
    object: &str,
    field: &str,
    value: i64,
    min: i64,
    max: i64,
) -> Option<T> {
    if (min..=max).contains(&value) {
        T::try_from(value).ok()
    } else {
        invalid.push(
            kind,
            object,
            field,
            format!("{value} is out of range; use a value from {min} to {max}"),
        );
        None
    }
}

/// Parses a network in CIDR notation without host bits.
fn network(
    invalid: &mut Invalid,
    kind: &'static str,
    object: &str,
    field: &str,
    cidr: &str,
) -> Option<IpNet> {
    match cidr.parse::<IpNet>() {
        Ok(net) if net.trunc() == net => Some(net),
        Ok(net) => {
            invalid.push(
                kind,
                object,
                field,
                format!(
                    "{cidr} has host bits set; write the network, {}",
                    net.trunc()
                ),
            );
            None
        }
        Err(_) => {
            invalid.push(
                kind,
                object,
                field,
                format!("{cidr:?} is not a CIDR; write e.g. 10.250.0.0/24 or fd94::/64"),
            );
            None
        }
    }
}

/// The route-target forms FRR accepts: `ASN2:u32`, `ASN4:u16`, `IPv4:u16`.
fn is_route_target(rt: &str) -> bool {
    let Some((admin, number)) = rt.split_once(':') else {
        return false;
    };
    match (admin.parse::<u32>(), admin.parse::<IpAddr>()) {
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

/// A standard BGP community as FRR's `set community` takes it: `AS:number` (both 0 to 65535),
/// a 32-bit number, or a well-known name.
fn is_community(c: &str) -> bool {
    if WELL_KNOWN_COMMUNITIES.contains(&c) || c.parse::<u32>().is_ok() {
        return true;
    }
    c.split_once(':')
        .is_some_and(|(a, n)| a.parse::<u16>().is_ok() && n.parse::<u16>().is_ok())
}

/// FNV-1a, for stable derived table ids.
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}
