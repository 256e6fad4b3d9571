//! Whom a clash is blamed on. Two inputs that claim the same VNI or table id are both part of
//! the problem, but only one of them is new: when the inputs are checked against the snapshot
//! of the last revision ([`compile_against`]), an input that is in that revision unchanged is
//! *established*, and a clash between it and a newcomer is the newcomer's problem. The
//! established input keeps its claim and is not marked invalid for a change it did not make.
//! Clashes within one kind are blamed the same way by checking established inputs first.

use std::collections::BTreeSet;

use netrollout_api::{NamedInput, Snapshot};

use super::{Compiled, Compiler, LAYER2_KIND, PEERING_KIND, TABLE_KIND, VRF_KIND};
use crate::Result;

/// Validates `snapshot` like [`compile`](super::compile), blaming newcomers: `accepted` is the
/// snapshot of the last revision. Whether the inputs are valid does not depend on `accepted`,
/// only which input each clash is reported on.
///
/// # Errors
/// [`crate::Error::Invalid`] listing every problem found.
pub fn compile_against(snapshot: &Snapshot, accepted: &Snapshot) -> Result<Compiled> {
    let mut established = BTreeSet::new();
    established.extend(unchanged(
        VRF_KIND,
        &snapshot.vrf_route_configurations,
        &accepted.vrf_route_configurations,
    ));
    established.extend(unchanged(
        LAYER2_KIND,
        &snapshot.layer2_network_configurations,
        &accepted.layer2_network_configurations,
    ));
    established.extend(unchanged(
        TABLE_KIND,
        &snapshot.routing_tables,
        &accepted.routing_tables,
    ));
    let vrfs = established_first(&snapshot.vrf_route_configurations, VRF_KIND, &established);
    let layer2s = established_first(
        &snapshot.layer2_network_configurations,
        LAYER2_KIND,
        &established,
    );
    established.extend(unchanged(
        PEERING_KIND,
        &snapshot.bgp_peerings,
        &accepted.bgp_peerings,
    ));
    let tables = established_first(&snapshot.routing_tables, TABLE_KIND, &established);
    let peerings = established_first(&snapshot.bgp_peerings, PEERING_KIND, &established);
    let mut c = Compiler {
        established,
        ..Compiler::default()
    };
    c.vrfs(&vrfs);
    c.layer2s(&layer2s);
    c.tables(&tables);
    c.peerings(&peerings);
    let Compiler { out, invalid, .. } = c;
    crate::error::checked(invalid, out)
}

/// `inputs` with the established ones first, each part in its order.
fn established_first<S: Clone>(
    inputs: &[NamedInput<S>],
    kind: &'static str,
    established: &BTreeSet<(&'static str, String)>,
) -> Vec<NamedInput<S>> {
    let mut out = inputs.to_vec();
    out.sort_by_key(|i| !established.contains(&(kind, i.name.clone())));
    out
}

/// The names of the inputs of `now` that `before` holds with the same spec.
fn unchanged<'a, S: PartialEq>(
    kind: &'static str,
    now: &'a [NamedInput<S>],
    before: &'a [NamedInput<S>],
) -> impl Iterator<Item = (&'static str, String)> + 'a {
    now.iter()
        .filter(|n| before.iter().any(|b| b.name == n.name && b.spec == n.spec))
        .map(move |n| (kind, n.name.clone()))
}

/// Who holds a VNI or a table id.
#[derive(Clone, Debug)]
pub(crate) struct Owner {
    pub(super) kind: &'static str,
    pub(super) object: String,
    pub(super) field: String,
    /// For messages, e.g. `the table of VRF "blue"`.
    pub(super) what: String,
}

impl Compiler {
    /// Of an `earlier` and a `later` claim on the same thing, `(guilty, innocent)`: the later
    /// one, unless only the later one is established.
    pub(super) fn blame(&self, earlier: Owner, later: Owner) -> (Owner, Owner) {
        if self.is_established(&later) && !self.is_established(&earlier) {
            (earlier, later)
        } else {
            (later, earlier)
        }
    }

    pub(super) fn is_established(&self, o: &Owner) -> bool {
        self.established.contains(&(o.kind, o.object.clone()))
    }

    /// `", accepted in the last revision"` when `o` is established.
    pub(super) fn standing(&self, o: &Owner) -> &'static str {
        if self.is_established(o) {
            " (unchanged since the last revision)"
        } else {
            ""
        }
    }
}
