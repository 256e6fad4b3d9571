//! The `diff` command: what changes between two revisions, in the inputs and on which nodes.
//! The structural diff itself is the renderer's ([`netrollout_render::diff`]).

use netrollout_api::{NetworkConfigRevision, Snapshot};
use netrollout_render::diff::{Side, diff};
use serde::Serialize;

use crate::cluster::{Observed, name};
use crate::{Error, Result};

pub use netrollout_render::diff::{Change, NodeChanges, changes};

/// What `diff` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffReport {
    /// The old revision (`-` for none).
    pub from: String,
    /// The new revision.
    pub to: String,
    /// Changes of the input objects.
    pub inputs: Vec<Change>,
    /// Changes of the rendered node configs, nodes with the same changes grouped.
    pub nodes: Vec<NodeChanges>,
    /// Nodes whose config stays the same.
    pub unchanged: Vec<String>,
    /// The change record of the new revision (`status.changes`): who changed which input to
    /// make it the target, and why.
    pub record: Vec<netrollout_api::InputChange>,
}

impl DiffReport {
    /// Compares `from` (or nothing) to `to`, rendering both for the nodes that have a config
    /// (all nodes when none has one yet).
    ///
    /// # Errors
    /// [`Error::Render`] when a snapshot does not render for these nodes.
    pub fn new(
        from: Option<&NetworkConfigRevision>,
        to: &NetworkConfigRevision,
        observed: &Observed,
    ) -> Result<Self> {
        let empty = Snapshot::default();
        let old = from.map_or(&empty, |r| &r.spec.snapshot);
        let (from, to_name) = (from.map_or("-", |r| name(r)), name(to));
        let found =
            diff(old, &to.spec.snapshot, &render_nodes(observed)).map_err(|e| Error::Render {
                revision: match e.side {
                    Side::Old => from,
                    Side::New => to_name,
                }
                .to_string(),
                message: e.error.to_string(),
            })?;
        Ok(Self {
            from: from.to_string(),
            to: to_name.to_string(),
            inputs: found.inputs,
            nodes: found.nodes,
            unchanged: found.unchanged,
            record: (to.status.as_ref())
                .map(|s| s.changes.clone())
                .unwrap_or_default(),
        })
    }

    /// The human form.
    pub fn table(&self) -> String {
        let mut out = format!("from {} to {}\n", self.from, self.to);
        if !self.record.is_empty() {
            out.push_str(&format!("\nchange record of {}:\n", self.to));
            for c in &self.record {
                out.push_str(&format!("  {}\n", c.line()));
            }
        }
        out.push_str("\ninputs:\n");
        if self.inputs.is_empty() {
            out.push_str("  (no changes)\n");
        }
        for c in &self.inputs {
            out.push_str(&format!("  {c}\n"));
        }
        out.push_str("\nnodes:\n");
        for g in &self.nodes {
            out.push_str(&format!("  {} ({}):\n", g.nodes.join(", "), g.nodes.len()));
            for c in &g.changes {
                out.push_str(&format!("    {c}\n"));
            }
        }
        if !self.unchanged.is_empty() {
            out.push_str(&format!("  unchanged: {}\n", self.unchanged.join(", ")));
        }
        out
    }
}

/// The nodes to render for: Nodes that have a config, or every Node when none has.
fn render_nodes(observed: &Observed) -> Vec<netrollout_render::Node> {
    let with_config = observed
        .nodes
        .keys()
        .any(|n| observed.configs.contains_key(n));
    observed
        .nodes
        .iter()
        .filter(|(n, _)| !with_config || observed.configs.contains_key(*n))
        .map(|(n, node)| netrollout_render::Node {
            name: n.clone(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
        })
        .collect()
}
