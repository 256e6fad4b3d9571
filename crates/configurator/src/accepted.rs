//! Writing the `Accepted` condition on an input, as the lifecycle
//! ([`netrollout_rollout::lifecycle`]) decided:
//! True with the revision that holds it, or False with the reason and what to do (then also a
//! Warning Event and a log line).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{
    ACCEPTED_CONDITION, BGPPeering, Layer2NetworkConfiguration, RoutingTable, VRFRouteConfiguration,
};
use netrollout_rollout::lifecycle::{AcceptedUpdate, InputKind, InputRef, Since};

use crate::context::Context;
use crate::convert;
use crate::error::Result;
use crate::memo::AcceptedMemo;

/// Writes `update` on `input` unless this replica wrote the same verdict before (`memo`: the
/// cache may not show it yet). `existing` are the input's `status.conditions` now; `reference` names the
/// input in the Event of a rejection.
///
/// # Errors
/// The API error of the status patch.
pub async fn write(
    ctx: &Context,
    memo: &AcceptedMemo,
    input: &InputRef,
    update: &AcceptedUpdate,
    existing: &[Condition],
    reference: Option<&ObjectReference>,
) -> Result<()> {
    let verdict = &update.verdict;
    if memo.already_written(input, update.generation, verdict) {
        return Ok(());
    }
    let conditions = conditions(existing, update);
    let mut patch = serde_json::json!({ "status": { "conditions": conditions } });
    if let Some(r) = &verdict.revision {
        patch["status"]["revision"] = r.clone().into();
    }
    patch_status(ctx, input, &patch).await?;
    memo.record(input, update.generation, verdict);
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

/// The input's whole `status.conditions` with `Accepted` replaced by `update`: the other
/// conditions stay as they are, and the transition time stays when the status does.
fn conditions(existing: &[Condition], update: &AcceptedUpdate) -> Vec<Condition> {
    let previous = existing.iter().find(|c| c.type_ == ACCEPTED_CONDITION);
    let transition = match (update.since, previous) {
        (Since::Unchanged, Some(c)) => c.last_transition_time.clone(),
        (Since::Now(now), _) => convert::to_time(now),
        // The lifecycle keeps the time only of a condition it saw; without one, now it is.
        (Since::Unchanged, None) => convert::to_time(convert::now()),
    };
    let verdict = &update.verdict;
    let mut conditions: Vec<Condition> = existing
        .iter()
        .filter(|c| c.type_ != ACCEPTED_CONDITION)
        .cloned()
        .collect();
    conditions.push(Condition {
        type_: ACCEPTED_CONDITION.into(),
        status: verdict.status().into(),
        reason: verdict.reason.clone(),
        message: verdict.message.clone(),
        observed_generation: update.generation,
        last_transition_time: transition,
    });
    conditions
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
        InputKind::Peering => {
            let api: Api<BGPPeering> = ctx.writer().api();
            ctx.writer()
                .write(what, api.patch_status(name, &pp, &patch))
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use netrollout_rollout::Timestamp;
    use netrollout_rollout::lifecycle::Verdict;

    use super::*;

    fn condition(type_: &str, status: &str, at: u64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: "R".into(),
            message: "m".into(),
            observed_generation: Some(1),
            last_transition_time: convert::to_time(Timestamp::from_millis(at)),
        }
    }

    fn update(verdict: Verdict, since: Since) -> AcceptedUpdate {
        AcceptedUpdate {
            verdict,
            generation: Some(2),
            since,
        }
    }

    #[test]
    fn a_flip_of_the_status_moves_the_transition_time_and_other_conditions_stay() {
        let other = condition("Other", "True", 5);
        let existing = [other.clone(), condition(ACCEPTED_CONDITION, "True", 1_000)];
        let now = Timestamp::from_millis(1_800_000_000_000);
        let written = conditions(
            &existing,
            &update(Verdict::rejected("Invalid", "bad"), Since::Now(now)),
        );
        assert_eq!(written.len(), 2);
        assert_eq!(written[0], other);
        assert_eq!(written[1].type_, ACCEPTED_CONDITION);
        assert_eq!(written[1].status, "False");
        assert_eq!(written[1].reason, "Invalid");
        assert_eq!(written[1].message, "bad");
        assert_eq!(written[1].observed_generation, Some(2));
        assert_eq!(written[1].last_transition_time, convert::to_time(now));
    }

    #[test]
    fn an_unchanged_status_keeps_the_transition_time_the_input_shows() {
        let existing = [condition(ACCEPTED_CONDITION, "True", 1_000)];
        let written = conditions(
            &existing,
            &update(Verdict::accepted("ncr-2"), Since::Unchanged),
        );
        assert_eq!(written.len(), 1);
        assert_eq!(
            written[0].message,
            "included in NetworkConfigRevision ncr-2"
        );
        assert_eq!(
            written[0].last_transition_time,
            convert::to_time(Timestamp::from_millis(1_000))
        );
    }
}
