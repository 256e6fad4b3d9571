//! Validating a snapshot and deriving what every node needs from it: interface names, table ids,
//! compiled selectors. Every problem is reported at once, naming the object, field and fix.
//!
//! One module per input kind: [`vrf`] (`VRFRouteConfiguration`), [`layer2`]
//! (`Layer2NetworkConfiguration`), [`table`] (`RoutingTable`) and [`peering`] (`BGPPeering`,
//! after the layer-2 networks it names). This module holds the compiled
//! result, the pass over a snapshot and what the kinds share: selectors, VNI and table-id
//! ownership, range and CIDR checks.

mod blame;
mod layer2;
pub(crate) mod loopback;
mod peering;
mod table;
mod vrf;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ipnet::IpNet;
use netrollout_api::{
    BgpPeeringConfig, Layer2Config, RoutingTableConfig, Snapshot, VrfConfig, VrfPolicy,
};

use crate::selector::Selector;
use crate::{Invalid, Result};
use blame::Owner;
pub use blame::compile_against;

/// Kind name of VRF inputs, as used in problems.
pub const VRF_KIND: &str = "VRFRouteConfiguration";
/// Kind name of layer-2 inputs, as used in problems.
pub const LAYER2_KIND: &str = "Layer2NetworkConfiguration";
/// Kind name of routing-table inputs, as used in problems.
pub const TABLE_KIND: &str = "RoutingTable";
/// Kind name of BGP peering inputs, as used in problems.
pub const PEERING_KIND: &str = "BGPPeering";
/// Loopback interface names must carry this prefix so the agent knows it manages them.
pub use netrollout_api::naming::LOOPBACK_PREFIX;
/// Longest Linux interface name in bytes (the API's naming rule).
pub use netrollout_api::naming::MAX_IFNAME;

/// A validated snapshot, ready to be rendered for any set of nodes.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    pub(crate) selectors: Vec<Selector>,
    pub(crate) vrfs: Vec<VrfConfig>,
    pub(crate) policies: Vec<Policy>,
    pub(crate) layer2s: Vec<Layer2>,
    pub(crate) tables: Vec<Table>,
    pub(crate) peerings: Vec<Peering>,
}

/// What one `VRFRouteConfiguration` adds to its VRF on the nodes it selects.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    pub(crate) vrf: usize,
    pub(crate) selector: usize,
    pub(crate) policy: VrfPolicy,
    pub(crate) sbr_prefixes: Vec<String>,
    pub(crate) loopbacks: Vec<(String, IpNet)>,
    /// The export prefix-list sequence of each loopback's host route (see [`loopback`]).
    pub(crate) loopback_seqs: Vec<Option<u32>>,
}

#[derive(Clone, Debug)]
pub(crate) struct Layer2 {
    pub(crate) config: Layer2Config,
    pub(crate) selector: usize,
    pub(crate) vrf: Option<usize>,
}

/// One `BGPPeering`: its node config (the same on every node it selects) and the layer-2
/// network it listens on (an index into `Compiled::layer2s`), which must be on those nodes too.
#[derive(Clone, Debug)]
pub(crate) struct Peering {
    pub(crate) config: BgpPeeringConfig,
    pub(crate) selector: usize,
    pub(crate) layer2: Option<usize>,
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
    c.peerings(&snapshot.bgp_peerings);
    let Compiler { out, invalid, .. } = c;
    crate::error::checked(invalid, out)
}

pub(super) struct Compiler {
    pub(super) out: Compiled,
    pub(super) invalid: Invalid,
    selector_ids: HashMap<Selector, usize>,
    /// Table id → who owns it, for clash messages.
    table_owners: BTreeMap<u32, Owner>,
    /// VNI → who owns it.
    vni_owners: BTreeMap<u32, Owner>,
    /// The inputs unchanged since the last revision (kind, name): see [`compile_against`].
    established: BTreeSet<(&'static str, String)>,
    /// Loopback name → owning input.
    pub(super) loopback_owners: BTreeMap<String, Owner>,
    /// VRF name (empty: the default VRF) → anycast gateway subnets with their input and field.
    pub(super) gateway_subnets: BTreeMap<String, Vec<(IpNet, String, String)>>,
}

impl Default for Compiler {
    fn default() -> Self {
        Self {
            out: Compiled::default(),
            invalid: crate::revision::none(),
            selector_ids: HashMap::new(),
            table_owners: BTreeMap::new(),
            vni_owners: BTreeMap::new(),
            established: BTreeSet::new(),
            loopback_owners: BTreeMap::new(),
            gateway_subnets: BTreeMap::new(),
        }
    }
}

impl Compiler {
    pub(super) fn selector(
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

    pub(super) fn vni(
        &mut self,
        kind: &'static str,
        object: &str,
        field: &str,
        vni: i64,
    ) -> Option<u32> {
        let vni = in_range(&mut self.invalid, kind, object, field, vni, 1, 16_777_215)?;
        let me = Owner {
            kind,
            object: object.to_string(),
            field: field.to_string(),
            what: format!("{kind} {object:?}"),
        };
        if let Some(owner) = self.vni_owners.get(&vni).cloned() {
            let (guilty, innocent) = self.blame(owner, me);
            let message = format!(
                "VNI {vni} is also used by {} ({}){}; give each VRF and layer-2 network its own VNI",
                innocent.what,
                innocent.field,
                self.standing(&innocent)
            );
            self.invalid
                .push(guilty.kind, &guilty.object, &guilty.field, message);
            let mine = innocent.kind == kind && innocent.object == object;
            if mine {
                self.vni_owners.insert(vni, innocent);
            }
            return mine.then_some(vni);
        }
        self.vni_owners.insert(vni, me);
        Some(vni)
    }

    /// Claims routing table `table` for `what`; refuses the kernel's own tables
    /// ([`RESERVED_TABLES`](netrollout_api::naming::RESERVED_TABLES)) and tables already taken.
    pub(super) fn claim_table(
        &mut self,
        table: u32,
        what: String,
        kind: &'static str,
        object: &str,
        field: &str,
    ) -> bool {
        if let Some(name) = netrollout_api::naming::reserved_table(table) {
            self.invalid.push(
                kind,
                object,
                field,
                format!("routing table {table} ({what}) is the kernel's own table {name:?}; ids 0, 252 (compat), 253 (default), 254 (main) and 255 (local) are reserved, choose another table id or VNI"),
            );
            return false;
        }
        let me = Owner {
            kind,
            object: object.to_string(),
            field: field.to_string(),
            what,
        };
        if let Some(owner) = self.table_owners.get(&table).cloned() {
            let (guilty, innocent) = self.blame(owner, me);
            let message = format!(
                "routing table {table} ({}) is also {}, set by {} {:?} in {}{}; choose another table id or VNI",
                guilty.what,
                innocent.what,
                innocent.kind,
                innocent.object,
                innocent.field,
                self.standing(&innocent)
            );
            self.invalid
                .push(guilty.kind, &guilty.object, &guilty.field, message);
            let mine = innocent.kind == kind && innocent.object == object;
            if mine {
                self.table_owners.insert(table, innocent);
            }
            mine
        } else {
            self.table_owners.insert(table, me);
            true
        }
    }
}

/// Checks `min <= value <= max` and converts; reports a problem otherwise.
pub(super) fn in_range<T: TryFrom<i64>>(
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

/// Parses a network in CIDR notation (by Kubernetes' rules, [`crate::net`]) without host bits.
pub(super) fn network(
    invalid: &mut Invalid,
    kind: &'static str,
    object: &str,
    field: &str,
    cidr: &str,
) -> Option<IpNet> {
    match crate::net::parse_cidr(cidr) {
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
        Err(e) => {
            invalid.push(kind, object, field, e.to_string());
            None
        }
    }
}
