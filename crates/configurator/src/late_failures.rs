//! Failure reports that arrive after a revision was halted. The planner fails a revision on the
//! pass that sees one failure too many and lists the failures it saw then; when a whole wave
//! reports at once (a flood of agent reports), more failures of the same revision land after
//! that pass, and the target's progress no longer covers the halted revision. [`record`] adds
//! every later failure to the revision's `failedNodes` and keeps its `failed` and `inFlight`
//! counts in step with the nodes, so no report is lost from a Failed revision's status.

use std::collections::HashSet;
use std::sync::Arc;

use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{
    FailedNode, NetworkConfigRevision, NodeNetworkConfig, NodePhase,
    RevisionPhase as ApiRevisionPhase,
};

use crate::context::Context;
use crate::convert;
use crate::error::{Error, Result};

/// Brings every Failed revision's failure list and counts up to date with the node reports.
///
/// # Errors
/// The first failed write (the caller retries the pass with backoff).
pub async fn record(ctx: &Context) -> Result<()> {
    let nncs = ctx.read().node_configs();
    for ncr in ctx.read().revisions() {
        let Some(want) = update(&ncr, &nncs)? else {
            continue;
        };
        let name = ncr.metadata.name.clone().unwrap_or_default();
        tracing::info!(revision = %name, "late failure reports recorded on a Failed revision");
        let api: Api<NetworkConfigRevision> = ctx.writer().api();
        ctx.writer()
            .write_revision(
                || format!("record late failures on NetworkConfigRevision {name}"),
                api.patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&serde_json::json!({ "status": want })),
                ),
            )
            .await?;
    }
    Ok(())
}

/// The status patch that brings `ncr` up to date, if it is Failed and out of date.
fn update(
    ncr: &NetworkConfigRevision,
    nncs: &[Arc<NodeNetworkConfig>],
) -> Result<Option<serde_json::Value>> {
    let Some(status) = ncr.status.as_ref() else {
        return Ok(None);
    };
    let Some(name) = ncr.metadata.name.as_deref() else {
        return Ok(None);
    };
    if status.phase != Some(ApiRevisionPhase::Failed) {
        return Ok(None);
    }
    let listed: HashSet<&str> = status
        .failed_nodes
        .iter()
        .map(|f| f.node.as_str())
        .collect();
    let mut failed_nodes = status.failed_nodes.clone();
    let mut in_flight = 0usize;
    for nnc in nncs {
        let node = nnc.metadata.name.as_deref().unwrap_or_default();
        let s = nnc
            .status
            .as_ref()
            .filter(|s| s.observed_revision.as_deref() == Some(name));
        match s.and_then(|s| s.phase.map(|p| (s, p))) {
            Some((s, NodePhase::Failed)) if !listed.contains(node) => {
                let reason = s.reason.clone().unwrap_or_else(|| "Failed".into());
                failed_nodes.push(FailedNode {
                    node: node.to_string(),
                    message: match &s.message {
                        Some(m) => format!("{reason}: {m}"),
                        None => reason.clone(),
                    },
                    reason,
                    time: Some(
                        s.finished_at
                            .clone()
                            .unwrap_or_else(|| convert::to_time(convert::now())),
                    ),
                });
            }
            Some((_, NodePhase::Failed | NodePhase::Provisioned)) => {}
            _ if nnc.spec.revision == name => in_flight += 1,
            _ => {}
        }
    }
    let i = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let (failed, in_flight) = (i(failed_nodes.len()), i(in_flight));
    if failed_nodes.len() == status.failed_nodes.len()
        && status.failed == failed
        && status.in_flight == in_flight
    {
        return Ok(None);
    }
    let nodes = serde_json::to_value(failed_nodes).map_err(|source| Error::Serialize {
        what: "failed nodes",
        source,
    })?;
    Ok(Some(serde_json::json!({
        "failedNodes": nodes,
        "failed": failed,
        "inFlight": in_flight,
    })))
}
