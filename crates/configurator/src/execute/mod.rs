//! Carrying out the planner's actions, in order, stopping at the first failed write: each
//! action is one or more API writes, a log line and (for decisions) an Event.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Node as KubeNode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use netrollout_api::{
    DISPATCH_ANNOTATION, MANAGED_BY_LABEL, NetworkConfigRevision, NodeNetworkConfig,
    NodeNetworkConfigSpec, RETRIED_ANNOTATION, UNRESPONSIVE_ANNOTATION,
};
use netrollout_rollout::{Action, DispatchKind, DispatchRecord, NodeFailure, RevisionPhase};
use tracing::Instrument;

use crate::conditions::Refusal;
use crate::context::Context;
use crate::convert;
use crate::error::{Error, Result};
use crate::render_cache::RenderCache;
use crate::spans;
use crate::views::NodeConfigView;

mod phase;
#[cfg(test)]
mod requests;

/// Node writes of one dispatch (or of consecutive dispatch records) sent at once. Each needs
/// its own HTTP/1.1 connection. A real API server's write waits on etcd, so some width pays;
/// the lab server is bound by its CPU, where more width only opens more connections (64 made
/// a first wave of 50 writes take 30 ms longer than the others; 32 and 16 gave the same
/// 1,000-node wall time, 16 a 3 % quicker 10,000-node one).
const DISPATCH_CONCURRENCY: usize = 32;

/// Everything an action needs besides the context: the objects the plan was made from, by
/// name (for nodes and node configs, only those of the nodes the actions name).
#[derive(Debug)]
pub struct World<'a> {
    /// Managed nodes by name.
    pub nodes: HashMap<String, Arc<KubeNode>>,
    /// Node configs by name.
    pub nncs: HashMap<String, Arc<NodeConfigView>>,
    /// Revisions by name.
    pub ncrs: HashMap<&'a str, &'a NetworkConfigRevision>,
    /// Rendered configs per revision.
    pub renders: &'a RenderCache,
    /// Whether rollouts are paused globally (for the revisions' conditions).
    pub globally_paused: bool,
    /// The Failed revision the current inputs are identical to, if any (its conditions say so).
    pub refusal: Option<&'a Refusal>,
}

/// Executes `actions` in order; the first failure ends the pass.
///
/// # Errors
/// The first failed write.
pub async fn run(ctx: &Context, world: &World<'_>, actions: &[Action]) -> Result<()> {
    let mut i = 0;
    while i < actions.len() {
        // Consecutive dispatch records touch different nodes and depend on nothing else in
        // the plan: they are written concurrently (a wave's pickups would otherwise take one
        // round trip each).
        let records = actions[i..]
            .iter()
            .take_while(|a| matches!(a, Action::RecordDispatch { .. }))
            .count();
        if records > 1 {
            let writes: Vec<BoxFuture<'_, Result<()>>> = actions[i..i + records]
                .iter()
                .map(|a| one(ctx, world, a).boxed())
                .collect();
            futures::stream::iter(writes)
                .buffer_unordered(DISPATCH_CONCURRENCY)
                .try_collect::<Vec<()>>()
                .await?;
            i += records;
        } else {
            one(ctx, world, &actions[i]).await?;
            i += 1;
        }
    }
    Ok(())
}

/// One action, inside its span ([`spans::planner`]).
async fn one(ctx: &Context, world: &World<'_>, action: &Action) -> Result<()> {
    carry_out(ctx, world, action)
        .instrument(spans::planner(action))
        .await
}

async fn carry_out(ctx: &Context, world: &World<'_>, action: &Action) -> Result<()> {
    match action {
        Action::SetRevisionPhase {
            revision,
            phase,
            reason,
            failed_nodes,
        } => set_phase(ctx, world, revision, *phase, reason, failed_nodes).await,
        Action::MarkUnresponsive {
            node,
            revision,
            restore,
            at,
            reason,
        } => {
            tracing::warn!(node = %node, revision = %revision, reason = %reason, "dispatch withdrawn: agent unresponsive");
            let unresponsive = serde_json::json!({
                DISPATCH_ANNOTATION: null,
                UNRESPONSIVE_ANNOTATION: convert::format_ts(*at),
            });
            match restore {
                Some(r) => write_node(ctx, world, node, Some(r), unresponsive).await?,
                None => delete_node_config(ctx, world, node).await?,
            }
            if let Some(ncr) = world.ncrs.get(revision.as_str()) {
                ctx.writer()
                    .event(*ncr, true, "Unresponsive", "Withdraw", reason)
                    .await;
            }
            Ok(())
        }
        Action::RecordDispatch {
            node,
            record,
            reason,
        } => {
            tracing::debug!(node = %node, revision = %record.revision, reason = %reason, "dispatch recorded");
            write_node(ctx, world, node, None, record_annotations(record)?).await
        }
        Action::Dispatch {
            revision,
            kind,
            nodes,
            reason,
        } => {
            let names: Vec<&str> = nodes.iter().map(|n| n.node.as_str()).collect();
            tracing::info!(revision = %revision, kind = ?kind, count = nodes.len(), nodes = ?names, reason = %reason, "dispatch");
            let started = std::time::Instant::now();
            let retried = world
                .ncrs
                .get(revision.as_str())
                .and_then(|r| r.metadata.annotations.as_ref())
                .and_then(|a| a.get(RETRIED_ANNOTATION))
                .map(|v| format!("{revision}@{v}"));
            let retried = &retried;
            let writes: Vec<BoxFuture<'_, Result<()>>> = nodes
                .iter()
                .map(|n| {
                    async move {
                        let mut ann = record_annotations(&n.record)?;
                        if let Some(v) = retried {
                            // A person retried this revision: its agent may try it once more
                            // although it failed there before.
                            ann[netrollout_api::NODE_RETRY_ANNOTATION] = v.clone().into();
                        }
                        write_node(ctx, world, &n.node, Some(revision), ann).await
                    }
                    .instrument(spans::dispatch_node(revision, &n.node))
                    .boxed()
                })
                .collect();
            futures::stream::iter(writes)
                .buffer_unordered(DISPATCH_CONCURRENCY)
                .try_collect::<Vec<()>>()
                .await?;
            tracing::debug!(revision = %revision, count = nodes.len(), took_ms = started.elapsed().as_millis(), "dispatch written");
            let (label, event) = match kind {
                DispatchKind::Rollout => ("rollout", "Dispatched"),
                DispatchKind::Join => ("join", "Joined"),
                DispatchKind::Rollback => ("rollback", "RolledBack"),
            };
            ctx.metrics().dispatched(label, nodes.len() as u64);
            if let Some(ncr) = world.ncrs.get(revision.as_str()) {
                let note = format!("{reason} (nodes: {})", names.join(", "));
                ctx.writer()
                    .event(
                        *ncr,
                        *kind == DispatchKind::Rollback,
                        event,
                        "Dispatch",
                        &note,
                    )
                    .await;
            }
            Ok(())
        }
        Action::Prune { revision, reason } => {
            tracing::info!(revision = %revision, reason = %reason, "prune");
            let ncr = world.ncrs.get(revision.as_str());
            let rv = ncr.and_then(|r| r.metadata.resource_version.clone());
            ctx.writer().delete_revision(revision, rv).await?;
            // Recorded after the delete (a failed delete is no decision carried out), about the
            // object as it was: the Event outlives it.
            if let Some(ncr) = ncr {
                ctx.writer()
                    .event(*ncr, false, "Pruned", "Prune", reason)
                    .await;
            }
            Ok(())
        }
    }
}

fn record_annotations(record: &DispatchRecord) -> Result<serde_json::Value> {
    let json = convert::dispatch_annotation(record)
        .ok_or_else(|| Error::Serialize {
            what: "the dispatch record",
            source: serde::ser::Error::custom(format!(
                "a time of the record for revision {} is out of range",
                record.revision
            )),
        })?
        .to_annotation()
        .map_err(|source| Error::Serialize {
            what: "the dispatch record",
            source,
        })?;
    Ok(serde_json::json!({ DISPATCH_ANNOTATION: json, UNRESPONSIVE_ANNOTATION: null }))
}

async fn set_phase(
    ctx: &Context,
    world: &World<'_>,
    revision: &str,
    phase: RevisionPhase,
    reason: &str,
    failed: &[NodeFailure],
) -> Result<()> {
    let write = phase::decide(world, revision, phase, reason, failed)?;
    let patched = ctx.writer().patch_status(&write).await?;
    let warning = phase.is_bad();
    if warning {
        tracing::warn!(revision = %revision, phase = ?phase, reason = %reason, "revision phase");
    } else {
        tracing::info!(revision = %revision, phase = ?phase, reason = %reason, "revision phase");
    }
    match phase {
        RevisionPhase::Failed => {
            ctx.metrics().failures.inc();
        }
        RevisionPhase::Succeeded => {
            if let Some(created) = world
                .ncrs
                .get(revision)
                .and_then(|r| r.metadata.creation_timestamp.as_ref())
            {
                let took = convert::now().saturating_since(convert::from_time(created));
                ctx.metrics().rollout_duration.observe(took.as_secs_f64());
            }
        }
        _ => {}
    }
    ctx.writer()
        .event(
            patched.as_ref(),
            warning,
            &format!("{phase:?}"),
            "SetPhase",
            reason,
        )
        .await;
    Ok(())
}

/// Writes one node's config: with `revision`, its spec moves to that revision (rendered for
/// the node) under a resourceVersion precondition, so a spec is never changed on a stale view;
/// without, only `annotations` are merged.
async fn write_node(
    ctx: &Context,
    world: &World<'_>,
    node: &str,
    revision: Option<&String>,
    annotations: serde_json::Value,
) -> Result<()> {
    let existing = world.nncs.get(node).map(AsRef::as_ref);
    let spec = match revision {
        Some(r) => {
            let ncr = world
                .ncrs
                .get(r.as_str())
                .ok_or_else(|| Error::UnknownRevision(r.clone()))?;
            let config = world.renders.config(ncr, node)?;
            Some(NodeNetworkConfigSpec {
                revision: r.clone(),
                config,
            })
        }
        None => None,
    };
    match (existing, spec) {
        (None, Some(spec)) => {
            let obj = new_config(
                world.nodes.get(node).map(AsRef::as_ref),
                node,
                spec,
                &annotations,
            );
            ctx.writer().create_node_config(&obj).await?;
        }
        (None, None) => {}
        (Some(current), spec) => {
            let mut metadata = serde_json::json!({
                "annotations": annotations,
                "labels": { MANAGED_BY_LABEL: "netrollout-configurator" },
            });
            if spec.is_some() {
                metadata["resourceVersion"] = serde_json::json!(current.metadata.resource_version);
            }
            let revision = spec.as_ref().map(|s| s.revision.clone());
            // The spec is encoded once, straight into the request body.
            let patch = NodePatch { metadata, spec };
            ctx.writer()
                .patch_node_config(node, &patch, current, revision.as_deref())
                .await?;
        }
    }
    Ok(())
}

/// The merge patch of a node config: metadata, and the spec when it moves.
#[derive(serde::Serialize)]
struct NodePatch {
    metadata: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<NodeNetworkConfigSpec>,
}

fn new_config(
    node: Option<&KubeNode>,
    name: &str,
    spec: NodeNetworkConfigSpec,
    annotations: &serde_json::Value,
) -> NodeNetworkConfig {
    let annotations = annotations.as_object().map(|m| {
        m.iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect()
    });
    let owner = node.and_then(|n| {
        Some(OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: n.metadata.name.clone()?,
            uid: n.metadata.uid.clone()?,
            ..OwnerReference::default()
        })
    });
    NodeNetworkConfig {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                [(
                    MANAGED_BY_LABEL.to_string(),
                    "netrollout-configurator".to_string(),
                )]
                .into(),
            ),
            annotations,
            owner_references: owner.map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    }
}

async fn delete_node_config(ctx: &Context, world: &World<'_>, node: &str) -> Result<()> {
    let Some(current) = world.nncs.get(node) else {
        return Ok(());
    };
    ctx.writer()
        .delete_node_config(node, current.metadata.resource_version.clone())
        .await
}

/// The nodes `actions` write to, each once.
pub fn nodes_named<'a>(actions: &'a [Action]) -> impl Iterator<Item = &'a str> {
    actions
        .iter()
        .flat_map(|a| -> Box<dyn Iterator<Item = &'a str> + 'a> {
            match a {
                Action::Dispatch { nodes, .. } => Box::new(nodes.iter().map(|n| n.node.as_str())),
                Action::RecordDispatch { node, .. } | Action::MarkUnresponsive { node, .. } => {
                    Box::new(std::iter::once(node.as_str()))
                }
                Action::SetRevisionPhase { .. } | Action::Prune { .. } => {
                    Box::new(std::iter::empty())
                }
            }
        })
}

/// The current objects, indexed by name.
pub fn index<K: kube::Resource>(objs: &[Arc<K>]) -> HashMap<&str, &K> {
    objs.iter()
        .filter_map(|o| Some((o.meta().name.as_deref()?, o.as_ref())))
        .collect()
}
