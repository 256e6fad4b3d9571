//! Writing the `Accepted` condition on an input, as [`lifecycle`](crate::lifecycle) decided:
//! True with the revision that holds it, or False with the reason and what to do (then also a
//! Warning Event and a log line).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{Layer2NetworkConfiguration, RoutingTable, VRFRouteConfiguration};

use crate::context::Context;
use crate::error::Result;
use crate::lifecycle::{AcceptedUpdate, InputKind, InputRef};

/// Writes `update` on `input` unless this replica wrote the same verdict before (the cache may
/// not show it yet). `reference` names the input in the Event of a rejection.
///
/// # Errors
/// The API error of the status patch.
pub async fn write(
    ctx: &Context,
    input: &InputRef,
    update: &AcceptedUpdate,
    reference: Option<&ObjectReference>,
) -> Result<()> {
    let verdict = &update.verdict;
    if ctx
        .accepted_memo()
        .already_written(input, update.generation, verdict)
    {
        return Ok(());
    }
    let mut patch = serde_json::json!({ "status": { "conditions": update.conditions } });
    if let Some(r) = &verdict.revision {
        patch["status"]["revision"] = r.clone().into();
    }
    patch_status(ctx, input, &patch).await?;
    ctx.accepted_memo()
        .record(input, update.generation, verdict);
    let kind = input.kind.kind();
    let name = &input.name;
    if verdict.accepted {
        tracing::info!(kind, input = %name, reason = %verdict.reason, "{}", verdict.message);
    } else {
        tracing::warn!(kind, input = %name, reason = %verdict.reason, "input not accepted: {}", verdict.message);
        if let Some(reference) = reference {
            // The note names the input too: `kubectl get events` lists notes without objects.
            let note = format!("{input} not accepted: {}", verdict.message);
            ctx.writer()
                .event_ref(reference, true, &verdict.reason, "Validate", &note)
                .await;
        }
    }
    Ok(())
}

async fn patch_status(ctx: &Context, input: &InputRef, patch: &serde_json::Value) -> Result<()> {
    let name = input.name.as_str();
    let what = || format!("patch status of {input}");
    let pp = PatchParams::default();
    let patch = Patch::Merge(patch);
    match input.kind {
        InputKind::Vrf => {
            let api: Api<VRFRouteConfiguration> = ctx.writer().api();
            ctx.writer()
                .write(what, api.patch_status(name, &pp, &patch))
                .await?;
        }
        InputKind::Layer2 => {
            let api: Api<Layer2NetworkConfiguration> = ctx.writer().api();
            ctx.writer()
                .write(what, api.patch_status(name, &pp, &patch))
                .await?;
        }
        InputKind::Table => {
            let api: Api<RoutingTable> = ctx.writer().api();
            ctx.writer()
                .write(what, api.patch_status(name, &pp, &patch))
                .await?;
        }
    }
    Ok(())
}
