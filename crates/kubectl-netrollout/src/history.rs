//! `history`: every revision, newest first, with what it contains and how its rollout ended.

use netrollout_api::NetworkConfigRevision;
use serde::Serialize;

use crate::output::{Table, age, or_dash, truncate};
use crate::status::RevisionRow;

/// One revision in the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRow {
    /// Progress and phase.
    #[serde(flatten)]
    pub revision: RevisionRow,
    /// `sha256:<hex>` of the snapshot.
    pub hash: String,
    /// Number of `VRFRouteConfiguration`s in the snapshot.
    pub vrfs: usize,
    /// Number of `Layer2NetworkConfiguration`s.
    pub layer2s: usize,
    /// Number of `RoutingTable`s.
    pub routing_tables: usize,
    /// Number of `BGPPeering`s (left out when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub bgp_peerings: usize,
    /// Its change record (`status.changes`): who changed which input, and why.
    pub changes: Vec<netrollout_api::InputChange>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl HistoryRow {
    /// The row of one revision.
    pub fn new(rev: &NetworkConfigRevision) -> Self {
        let s = &rev.spec.snapshot;
        Self {
            revision: RevisionRow::new(rev),
            hash: rev.spec.hash.clone(),
            vrfs: s.vrf_route_configurations.len(),
            layer2s: s.layer2_network_configurations.len(),
            routing_tables: s.routing_tables.len(),
            bgp_peerings: s.bgp_peerings.len(),
            changes: rev
                .status
                .as_ref()
                .map(|s| s.changes.clone())
                .unwrap_or_default(),
        }
    }
}

/// Rows of every revision, in the given (newest-first) order.
pub fn rows(revisions: &[NetworkConfigRevision]) -> Vec<HistoryRow> {
    revisions.iter().map(HistoryRow::new).collect()
}

/// The aligned table.
pub fn table(rows: &[HistoryRow], now: jiff::Timestamp) -> String {
    let mut t = Table::new(&[
        "seq",
        "revision",
        "phase",
        "ready",
        "failed",
        "paused",
        "inputs",
        "age",
        "changed by",
        "reason",
        "message",
    ]);
    for h in rows {
        let r = &h.revision;
        t.row(vec![
            r.sequence.to_string(),
            r.name.clone(),
            format!("{:?}", r.phase),
            format!("{}/{}", r.ready, r.total),
            r.failed.to_string(),
            r.paused.to_string(),
            if h.bgp_peerings == 0 {
                format!(
                    "{} vrf, {} layer2, {} taas",
                    h.vrfs, h.layer2s, h.routing_tables
                )
            } else {
                format!(
                    "{} vrf, {} layer2, {} taas, {} bgppeering",
                    h.vrfs, h.layer2s, h.routing_tables, h.bgp_peerings
                )
            },
            age(r.created.as_ref(), now),
            or_dash(who(&h.changes)),
            or_dash(why(&h.changes).map(|w| truncate(&w, 60))),
            or_dash(r.message.as_deref().map(|m| truncate(m, 80))),
        ]);
    }
    if t.is_empty() {
        return "no NetworkConfigRevisions yet\n".into();
    }
    t.render()
}

/// Who changed the inputs of a change record: the users, else the clients (`via …`).
fn who(changes: &[netrollout_api::InputChange]) -> Option<String> {
    let mut names: Vec<String> = changes
        .iter()
        .map(|c| match (c.user.as_str(), c.manager.as_str()) {
            ("", "") => String::new(),
            ("", m) => format!("via {m}"),
            (u, _) => u.to_string(),
        })
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    names.dedup();
    (!names.is_empty()).then(|| names.join(", "))
}

/// Why: the reasons and tickets of a change record, each once.
fn why(changes: &[netrollout_api::InputChange]) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for c in changes {
        let part = match (c.reason.as_str(), c.ticket.as_str()) {
            ("", "") => continue,
            (r, "") => r.to_string(),
            ("", t) => format!("[{t}]"),
            (r, t) => format!("{r} [{t}]"),
        };
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
