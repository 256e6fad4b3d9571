//! `pause`, `resume` and `retry`: the writes that steer a rollout.
//!
//! - Global pause: `data.paused` of the ConfigMap `netrollout-control` in the configurator's
//!   namespace (created when missing). One revision: its `spec.paused`.
//! - Retry a Failed revision: the annotation `netrollout.io/retry` on it; the configurator clears
//!   `Failed` and makes it the target again. Retry one node: the same annotation on the node's
//!   `NodeNetworkConfig`; its agent tries the current revision once more per new value.

use kube::api::{Patch, PatchParams};
use netrollout_api::{NODE_RETRY_ANNOTATION, NodePhase, RETRY_ANNOTATION, RevisionPhase};
use serde_json::json;

use crate::cluster::{Cluster, find, name, phase};
use crate::{Error, Result};

/// Pauses (`true`) or resumes every rollout, or only `revision` when given. Returns what it did.
///
/// # Errors
/// [`Error::NoSuchRevision`] or [`Error::Api`].
pub async fn set_paused(cluster: &Cluster, revision: Option<&str>, paused: bool) -> Result<String> {
    let verb = if paused { "paused" } else { "resumed" };
    let Some(wanted) = revision else {
        cluster.set_paused(paused).await?;
        return Ok(format!(
            "rollouts {verb} (ConfigMap {}/{}); nodes already applying finish\n",
            cluster.namespace,
            netrollout_api::CONTROL_CONFIGMAP
        ));
    };
    let revisions = cluster.revisions().await?;
    let rev = find(&revisions, wanted)?;
    let rev_name = name(rev).to_string();
    let patch = json!({ "spec": { "paused": paused } });
    cluster
        .revisions_api()
        .patch(&rev_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(Error::api(format!(
            "patching NetworkConfigRevision {rev_name}"
        )))?;
    Ok(format!("revision {rev_name} {verb}\n"))
}

/// Asks the configurator to retry a Failed revision.
///
/// # Errors
/// [`Error::Refused`] when the revision is not Failed; [`Error::NoSuchRevision`] or [`Error::Api`].
pub async fn retry_revision(cluster: &Cluster, wanted: &str) -> Result<String> {
    let revisions = cluster.revisions().await?;
    let rev = find(&revisions, wanted)?;
    let rev_name = name(rev).to_string();
    match phase(rev) {
        RevisionPhase::Failed => {}
        RevisionPhase::Blocked => {
            return Err(Error::Refused(format!(
                "revision {rev_name} is Blocked, not Failed: {}; retry the Failed revision it names",
                rev.status
                    .as_ref()
                    .and_then(|s| s.message.clone())
                    .unwrap_or_default()
            )));
        }
        other => {
            return Err(Error::Refused(format!(
                "revision {rev_name} is {other:?}, not Failed; only a Failed revision can be retried \
                 (to retry one node use `retry --node NAME`)"
            )));
        }
    }
    annotate(cluster, &rev_name, true, RETRY_ANNOTATION).await?;
    Ok(format!(
        "asked the configurator to retry revision {rev_name}; follow it with `kubectl netrollout status --watch`\n"
    ))
}

/// Asks the agents of `nodes` to retry their current revision once more.
///
/// # Errors
/// [`Error::Refused`] when a node's config has not Failed; [`Error::NoSuchNode`] or [`Error::Api`].
pub async fn retry_nodes(cluster: &Cluster, nodes: &[String]) -> Result<String> {
    let mut out = String::new();
    for node in nodes {
        let config = cluster
            .configs_api()
            .get_opt(node)
            .await
            .map_err(Error::api(format!("reading NodeNetworkConfig {node}")))?
            .ok_or_else(|| Error::NoSuchNode(node.clone()))?;
        let status = config.status.as_ref();
        let failed = status.is_some_and(|s| {
            s.phase == Some(NodePhase::Failed)
                && s.observed_revision.as_deref() == Some(config.spec.revision.as_str())
        });
        if !failed {
            return Err(Error::Refused(format!(
                "node {node} has not failed its current revision {} (its status: {}); nothing to retry",
                config.spec.revision,
                status
                    .and_then(|s| s.phase)
                    .map_or_else(|| "none".to_string(), |p| format!("{p:?}"))
            )));
        }
        annotate(cluster, node, false, NODE_RETRY_ANNOTATION).await?;
        out.push_str(&format!(
            "asked node {node} to retry revision {}\n",
            config.spec.revision
        ));
    }
    Ok(out)
}

/// Sets `key` to the current time (each retry is a new value) on a revision or node config.
async fn annotate(cluster: &Cluster, object: &str, revision: bool, key: &str) -> Result<()> {
    let patch =
        json!({ "metadata": { "annotations": { key: jiff::Timestamp::now().to_string() } } });
    let pp = PatchParams::default();
    if revision {
        cluster
            .revisions_api()
            .patch(object, &pp, &Patch::Merge(&patch))
            .await
            .map_err(Error::api(format!(
                "annotating NetworkConfigRevision {object}"
            )))?;
    } else {
        cluster
            .configs_api()
            .patch(object, &pp, &Patch::Merge(&patch))
            .await
            .map_err(Error::api(format!("annotating NodeNetworkConfig {object}")))?;
    }
    Ok(())
}
