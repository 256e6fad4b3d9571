//! The change record (docs/contract.md, "The change record"): which inputs changed between the
//! revision that was the target and the one the inputs make now, each with the user who made
//! it (its `netrollout.io/changed-by`, kept truthful by admission), the field manager and time
//! of its last spec write (`metadata.managedFields`: the client, not the user), and its
//! `netrollout.io/change-reason` and `netrollout.io/ticket`.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use netrollout_api::{
    CHANGE_REASON_ANNOTATION, CHANGED_BY_ANNOTATION, ChangeKind, InputChange, NamedInput, Snapshot,
    TICKET_ANNOTATION,
};
use serde::Serialize;

use super::live::Live;

/// The inputs that differ between `before` (the previous target's snapshot; `None`: none) and
/// `after`, by kind and name, with what the `live` objects say about each.
pub fn changes(before: Option<&Snapshot>, after: &Snapshot, live: &Live) -> Vec<InputChange> {
    let empty = Snapshot::default();
    let b = before.unwrap_or(&empty);
    let mut out = Vec::new();
    kind(
        "VRFRouteConfiguration",
        &b.vrf_route_configurations,
        &after.vrf_route_configurations,
        &live.vrfs,
        &mut out,
    );
    kind(
        "Layer2NetworkConfiguration",
        &b.layer2_network_configurations,
        &after.layer2_network_configurations,
        &live.layer2s,
        &mut out,
    );
    kind(
        "RoutingTable",
        &b.routing_tables,
        &after.routing_tables,
        &live.tables,
        &mut out,
    );
    kind(
        "BGPPeering",
        &b.bgp_peerings,
        &after.bgp_peerings,
        &live.peerings,
        &mut out,
    );
    out
}

fn kind<T: Serialize, K: Resource>(
    kind: &str,
    before: &[NamedInput<T>],
    after: &[NamedInput<T>],
    objects: &[Arc<K>],
    out: &mut Vec<InputChange>,
) {
    let spec = |l: &[NamedInput<T>], name: &str| {
        l.iter()
            .find(|i| i.name == name)
            .map(|i| serde_json::to_value(&i.spec).unwrap_or_default())
    };
    let meta = |name: &str| {
        (objects.iter())
            .map(|o| o.meta())
            .find(|m| m.name.as_deref() == Some(name))
    };
    for a in after {
        let change = match spec(before, &a.name) {
            None => ChangeKind::Created,
            Some(old) if old != serde_json::to_value(&a.spec).unwrap_or_default() => {
                ChangeKind::Changed
            }
            Some(_) => continue,
        };
        out.push(record(kind, &a.name, change, meta(&a.name)));
    }
    for b in before.iter().filter(|b| spec(after, &b.name).is_none()) {
        out.push(record(kind, &b.name, ChangeKind::Deleted, None));
    }
}

/// The record of one input from its object's metadata (`None`: gone).
fn record(kind: &str, name: &str, change: ChangeKind, meta: Option<&ObjectMeta>) -> InputChange {
    let note = |key: &str| {
        meta.and_then(|m| m.annotations.as_ref()?.get(key).cloned())
            .unwrap_or_default()
    };
    // The last write of the spec: the watch keeps only its managed-fields entry
    // ([`last_spec_write`]).
    let last =
        last_spec_write(meta.and_then(|m| m.managed_fields.clone())).and_then(|mut v| v.pop());
    let last = last.as_ref();
    InputChange {
        kind: kind.into(),
        name: name.into(),
        change,
        generation: meta.and_then(|m| m.generation),
        user: note(CHANGED_BY_ANNOTATION),
        manager: last.and_then(|e| e.manager.clone()).unwrap_or_default(),
        reason: note(CHANGE_REASON_ANNOTATION),
        ticket: note(TICKET_ANNOTATION),
        time: last.and_then(|e| e.time.clone()),
    }
}

/// The Event and log text of a record: `; changes: LINE; LINE` (empty without changes).
pub fn note(changes: &[InputChange]) -> String {
    if changes.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = changes.iter().map(InputChange::line).collect();
    format!("; changes: {}", lines.join("; "))
}

/// Of an object's managed fields, the entry of its last spec write (the newest that owns a
/// spec field, else the newest), without its field set: what the change record keeps.
pub fn last_spec_write(
    entries: Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry>>,
) -> Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry>> {
    let entries = entries?;
    let owns_spec = |e: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry| {
        (e.fields_v1.as_ref()).is_some_and(|f| f.0.get("f:spec").is_some())
    };
    let newest = |spec_only: bool| {
        (entries.iter())
            .filter(|e| !spec_only || owns_spec(e))
            .max_by_key(|e| e.time.as_ref().map(|t| t.0))
            .cloned()
    };
    let mut last = newest(true).or_else(|| newest(false))?;
    last.fields_v1 = None;
    Some(vec![last])
}
