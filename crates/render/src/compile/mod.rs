//! Validating a snapshot and deriving what every node needs from it: interface names, table ids,
//! compiled selectors. Every problem is reported at once, naming the object, field and fix.
//!
//! One module per input kind: [`vrf`] (`VRFRouteConfiguration`), [`layer2`]
//! (`Layer2NetworkConfiguration`) and [`table`] (`RoutingTable`). This module holds the compiled
//! result, the pass over a snapshot and what the kinds share: selectors, VNI and table-id
//! ownership, range and CIDR checks.

mod layer2;
pub(crate) mod loopback;
mod table;
mod vrf;

use std::collections::{BTreeMap, HashMap};

use ipnet::IpNet;
use netrollout_api::{Layer2Config, RoutingTableConfig, Snapshot, VrfConfig, VrfPolicy};

use crate::selector::Selector;
use crate::{Invalid, Result};

/// Kind name of VRF inputs, as used in problems.
pub const VRF_KIND: &str = "VRFRouteConfiguration";
/// Kind name of layer-2 inputs, as used in problems.
pub const LAYER2_KIND: &str = "Layer2NetworkConfiguration";
/// Kind name of routing-table inputs, as used in problems.
pub const TABLE_KIND: &str = "RoutingTable";
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
pub(super) struct Compiler {
    pub(super) out: Compiled,
    pub(super) invalid: Invalid,
    selector_ids: HashMap<Selector, usize>,
    /// Table id → who owns it, for clash messages.
    table_owners: BTreeMap<u32, String>,
    /// VNI → who owns it.
    vni_owners: BTreeMap<u32, String>,
    /// Loopback name → owning input.
    pub(super) loopback_owners: BTreeMap<String, String>,
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
        if let Some(owner) = self.vni_owners.get(&vni) {
            self.invalid.push(kind, object, field, format!("VNI {vni} is also used by {owner}; give each VRF and layer-2 network its own VNI"));
            return None;
        }
        self.vni_owners.insert(vni, format!("{kind} {object:?}"));
        Some(vni)
    }

    pub(super) fn claim_table(
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

/// Parses a network in CIDR notation without host bits.
pub(super) fn network(
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
