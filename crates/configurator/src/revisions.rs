//! Inputs → revisions ("Revisions" in ROLLOUT.md): validate the merged snapshot, create the
//! content-addressed revision or reuse the existing one (raising its sequence), wait for a
//! terminating one, refuse a name clash, block content identical to a Failed revision, and
//! carry out a person's retry of a Failed revision.

use std::sync::Arc;

use kube::Resource;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use netrollout_api::{
    NetworkConfigRevision, NetworkConfigRevisionSpec, RETRY_ANNOTATION, RevisionPhase,
};
use netrollout_render::{Invalid, Node as RenderNode, Revision};

use crate::accepted::{self, Input, Verdict};
use crate::context::Context;
use crate::error::{Error, Result};

/// The live input objects of one pass.
struct Inputs {
    vrfs: Vec<netrollout_api::VRFRouteConfiguration>,
    layer2s: Vec<netrollout_api::Layer2NetworkConfiguration>,
    tables: Vec<netrollout_api::RoutingTable>,
}

fn live<K: Clone + Resource>(objs: Vec<Arc<K>>) -> Vec<K> {
    objs.iter()
        .filter(|o| o.meta().deletion_timestamp.is_none())
        .map(|o| (**o).clone())
        .collect()
}

/// Makes sure a revision exists for the current inputs and is the newest by sequence (unless
/// it is Failed), and sets every input's `Accepted` condition.
///
/// A name clash ([`Error::NameClash`]) is reported on the inputs and in the metrics, and the
/// pass goes on without a new revision.
///
/// # Errors
/// API errors.
pub async fn sync(ctx: &Context, nodes: &[RenderNode]) -> Result<()> {
    let inputs = Inputs {
        vrfs: live(ctx.stores.vrfs.state()),
        layer2s: live(ctx.stores.layer2s.state()),
        tables: live(ctx.stores.tables.state()),
    };
    let revisions = ctx.revisions();
    let snapshot = netrollout_render::from_objects(&inputs.vrfs, &inputs.layer2s, &inputs.tables);
    let empty = inputs.vrfs.is_empty() && inputs.layer2s.is_empty() && inputs.tables.is_empty();
    if empty && revisions.is_empty() {
        return Ok(());
    }
    let checked = Revision::of(&snapshot).and_then(|rev| {
        netrollout_render::render(&snapshot, nodes)?;
        Ok(rev)
    });
    let rev = match checked {
        Ok(rev) => rev,
        Err(netrollout_render::Error::Invalid(invalid)) => {
            tracing::warn!(
                problems = invalid.problems.len(),
                "inputs rejected, no revision created: {invalid}"
            );
            return reject_all(ctx, &inputs, &invalid).await;
        }
        Err(e) => {
            return Err(Error::Render {
                revision: "(new)".into(),
                source: e,
            });
        }
    };
    let max_seq = revisions.iter().map(|r| r.spec.sequence).max().unwrap_or(0);
    let verdict = match revisions
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(rev.name.as_str()))
    {
        Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
            tracing::info!(revision = %rev.name, "waiting: the revision for these inputs is being deleted; it is never adopted");
            Verdict::rejected(
                "WaitingForDeletion",
                format!(
                    "NetworkConfigRevision {} is being deleted; a new one is created once it is gone",
                    rev.name
                ),
            )
        }
        Some(existing) if existing.spec.hash != rev.hash => {
            let err = Error::NameClash {
                name: rev.name.clone(),
                existing: existing.spec.hash.clone(),
                wanted: rev.hash.clone(),
            };
            // Never overwritten; the rollout of existing revisions goes on meanwhile.
            tracing::error!(revision = %rev.name, "{err}");
            ctx.metrics.error(&err);
            Verdict::rejected("NameClash", err.to_string())
        }
        Some(existing)
            if existing.status.as_ref().and_then(|s| s.phase) == Some(RevisionPhase::Failed) =>
        {
            let msg = format!(
                "identical to failed revision {}; nothing is rolled out until a person retries it \
                 (kubectl netrollout retry {0}, i.e. annotate it {RETRY_ANNOTATION})",
                rev.name
            );
            note_identical(ctx, existing, &msg).await;
            Verdict::rejected("IdenticalToFailedRevision", msg)
        }
        Some(existing) => {
            if existing.spec.sequence < max_seq {
                raise_sequence(
                    ctx,
                    existing,
                    max_seq + 1,
                    "the inputs equal this revision again",
                )
                .await?;
            }
            Verdict::accepted(&rev.name)
        }
        None => {
            create(ctx, &rev, snapshot, max_seq + 1).await?;
            Verdict::accepted(&rev.name)
        }
    };
    set_all(ctx, &inputs, &verdict).await
}

async fn create(
    ctx: &Context,
    rev: &Revision,
    snapshot: netrollout_api::Snapshot,
    sequence: i64,
) -> Result<()> {
    let obj = NetworkConfigRevision {
        metadata: ObjectMeta {
            name: Some(rev.name.clone()),
            labels: Some(
                [(
                    netrollout_api::MANAGED_BY_LABEL.to_string(),
                    "netrollout-configurator".to_string(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: NetworkConfigRevisionSpec {
            sequence,
            hash: rev.hash.clone(),
            paused: false,
            snapshot,
        },
        status: None,
    };
    let api: Api<NetworkConfigRevision> = Api::all(ctx.client.clone());
    let created = ctx
        .write(
            || format!("create NetworkConfigRevision {}", rev.name),
            api.create(&PostParams::default(), &obj),
        )
        .await?;
    let msg = format!(
        "created revision {} (sequence {sequence}, {} bytes) from the inputs",
        rev.name, rev.size
    );
    tracing::info!(revision = %rev.name, sequence, "{msg}");
    ctx.event(&created, false, "Created", "CreateRevision", &msg)
        .await;
    ctx.ncr_overlay.written(created);
    Ok(())
}

pub use netrollout_api::RETRIED_ANNOTATION;

async fn raise_sequence(
    ctx: &Context,
    existing: &NetworkConfigRevision,
    sequence: i64,
    why: &str,
) -> Result<()> {
    let name = existing.metadata.name.clone().unwrap_or_default();
    let api: Api<NetworkConfigRevision> = Api::all(ctx.client.clone());
    let mut annotations = serde_json::json!({ RETRY_ANNOTATION: null });
    if let Some(v) = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(RETRY_ANNOTATION))
    {
        let v = if v.is_empty() {
            crate::convert::format_ts(crate::convert::now())
        } else {
            v.clone()
        };
        annotations[RETRIED_ANNOTATION] = v.into();
    }
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": existing.metadata.resource_version,
            "annotations": annotations,
        },
        "spec": { "sequence": sequence },
    });
    let patched = ctx
        .write(
            || format!("raise the sequence of NetworkConfigRevision {name}"),
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await?;
    let msg = format!(
        "{why}: sequence raised from {} to {sequence}, which makes it the target again",
        existing.spec.sequence
    );
    tracing::info!(revision = %name, sequence, "{msg}");
    ctx.event(&patched, false, "SequenceRaised", "RaiseSequence", &msg)
        .await;
    ctx.ncr_overlay.written(patched);
    Ok(())
}

/// Tells (once per revision and replica, in an Event and a log line) that the inputs equal a
/// failed revision. The revision's own status is left alone: its message keeps the reason it
/// failed; the inputs carry the verdict in their `Accepted` condition.
async fn note_identical(ctx: &Context, failed: &NetworkConfigRevision, msg: &str) {
    let name = failed.metadata.name.clone().unwrap_or_default();
    {
        let mut noted = ctx
            .identical_noted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if noted.get(&name).map(String::as_str) == Some(msg) {
            return;
        }
        noted.insert(name.clone(), msg.to_string());
    }
    tracing::warn!(revision = %name, "inputs {msg}");
    ctx.event(failed, true, "IdenticalToFailed", "Block", msg)
        .await;
}

/// Carries out retries asked for with [`RETRY_ANNOTATION`]: a Failed (or Blocked) revision is
/// cleared to Pending with the next sequence; on any other revision the annotation is removed.
///
/// # Errors
/// API errors.
pub async fn retries(ctx: &Context) -> Result<()> {
    let revisions = ctx.revisions();
    let max_seq = revisions.iter().map(|r| r.spec.sequence).max().unwrap_or(0);
    let api: Api<NetworkConfigRevision> = Api::all(ctx.client.clone());
    for r in &revisions {
        let asked = r
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(RETRY_ANNOTATION));
        if !asked || r.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = r.metadata.name.clone().unwrap_or_default();
        let phase = r.status.as_ref().and_then(|s| s.phase);
        if matches!(phase, Some(RevisionPhase::Failed | RevisionPhase::Blocked)) {
            let patch = serde_json::json!({ "status": {
                "phase": RevisionPhase::Pending,
                "message": "retried by a person: rolled out again as the newest revision",
                "failedNodes": [],
            }});
            let cleared = ctx
                .write(
                    || format!("clear Failed on NetworkConfigRevision {name}"),
                    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)),
                )
                .await?;
            ctx.ncr_overlay.written(cleared.clone());
            raise_sequence(ctx, &cleared, max_seq + 1, "retried by a person").await?;
        } else {
            let patch =
                serde_json::json!({ "metadata": { "annotations": { RETRY_ANNOTATION: null } } });
            let patched = ctx
                .write(
                    || format!("remove the retry annotation of NetworkConfigRevision {name}"),
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)),
                )
                .await?;
            tracing::info!(revision = %name, "retry ignored: the revision is not Failed");
            ctx.ncr_overlay.written(patched);
        }
    }
    Ok(())
}

async fn set_all(ctx: &Context, inputs: &Inputs, verdict: &Verdict) -> Result<()> {
    set_each(ctx, &inputs.vrfs, |_| verdict.clone()).await?;
    set_each(ctx, &inputs.layer2s, |_| verdict.clone()).await?;
    set_each(ctx, &inputs.tables, |_| verdict.clone()).await
}

async fn reject_all(ctx: &Context, inputs: &Inputs, invalid: &Invalid) -> Result<()> {
    let verdict = |kind: &str, name: &str| {
        let own: Vec<String> = invalid
            .for_object(kind, name)
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect();
        if own.is_empty() {
            Verdict::rejected(
                "OtherInputInvalid",
                format!("not rolled out: other inputs are invalid ({invalid})"),
            )
        } else {
            Verdict::rejected("Invalid", own.join("; "))
        }
    };
    set_each(ctx, &inputs.vrfs, |n| {
        verdict(netrollout_api::VRFRouteConfiguration::KIND, n)
    })
    .await?;
    set_each(ctx, &inputs.layer2s, |n| {
        verdict(netrollout_api::Layer2NetworkConfiguration::KIND, n)
    })
    .await?;
    set_each(ctx, &inputs.tables, |n| {
        verdict(netrollout_api::RoutingTable::KIND, n)
    })
    .await
}

async fn set_each<K: Input>(
    ctx: &Context,
    objs: &[K],
    verdict: impl Fn(&str) -> Verdict,
) -> Result<()> {
    for o in objs {
        let name = o.meta().name.clone().unwrap_or_default();
        accepted::set(ctx, o, &verdict(&name)).await?;
    }
    Ok(())
}
