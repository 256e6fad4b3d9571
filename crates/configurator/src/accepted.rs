//! The `Accepted` condition on input objects: True with the revision that holds them, or False
//! with the reason and what to do.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{
    ACCEPTED_CONDITION, InputStatus, Layer2NetworkConfiguration, RoutingTable,
    VRFRouteConfiguration,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::Context;
use crate::error::Result;

/// The three input kinds with their status.
pub trait Input: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned {
    /// The kind, as in `render::Problem::kind`.
    const KIND: &'static str;
    /// The status, if any.
    fn input_status(&self) -> Option<&InputStatus>;
}

impl Input for VRFRouteConfiguration {
    const KIND: &'static str = "VRFRouteConfiguration";
    fn input_status(&self) -> Option<&InputStatus> {
        self.status.as_ref()
    }
}

impl Input for Layer2NetworkConfiguration {
    const KIND: &'static str = "Layer2NetworkConfiguration";
    fn input_status(&self) -> Option<&InputStatus> {
        self.status.as_ref()
    }
}

impl Input for RoutingTable {
    const KIND: &'static str = "RoutingTable";
    fn input_status(&self) -> Option<&InputStatus> {
        self.status.as_ref()
    }
}

/// What an input's `Accepted` condition should say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `True` or `False`.
    pub accepted: bool,
    /// CamelCase reason.
    pub reason: String,
    /// For people: what happened and what to do.
    pub message: String,
    /// The revision that holds the input (`status.revision`), when accepted.
    pub revision: Option<String>,
}

impl Verdict {
    /// Accepted into `revision`.
    pub fn accepted(revision: &str) -> Self {
        Self {
            accepted: true,
            reason: "Accepted".into(),
            message: format!("included in NetworkConfigRevision {revision}"),
            revision: Some(revision.to_string()),
        }
    }

    /// Not accepted.
    pub fn rejected(reason: &str, message: impl Into<String>) -> Self {
        Self {
            accepted: false,
            reason: reason.into(),
            message: message.into(),
            revision: None,
        }
    }
}

/// Sets `Accepted` on `obj` unless it already says `verdict` (in the cache, or as last
/// written by this replica). A rejection also gets a Warning Event and a log line.
///
/// # Errors
/// The API error of the status patch.
pub async fn set<K: Input>(ctx: &Context, obj: &K, verdict: &Verdict) -> Result<()> {
    let name = obj.meta().name.clone().unwrap_or_default();
    let generation = obj.meta().generation;
    let status = if verdict.accepted { "True" } else { "False" };
    let existing = obj
        .input_status()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == ACCEPTED_CONDITION));
    let same = |c: &Condition| {
        c.status == status
            && c.reason == verdict.reason
            && c.message == verdict.message
            && c.observed_generation == generation
    };
    let key = format!("{}/{name}", K::KIND);
    let fingerprint = format!(
        "{status}|{}|{}|{generation:?}|{:?}",
        verdict.reason, verdict.message, verdict.revision
    );
    let revision_same = verdict.revision.is_none()
        || obj.input_status().and_then(|s| s.revision.as_ref()) == verdict.revision.as_ref();
    if existing.is_some_and(same) && revision_same {
        return Ok(());
    }
    if let Ok(memo) = ctx.accepted_written.lock()
        && memo.get(&key) == Some(&fingerprint)
    {
        return Ok(());
    }
    let transition = match existing {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(jiff::Timestamp::now()),
    };
    let mut conditions: Vec<Condition> = obj
        .input_status()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    conditions.retain(|c| c.type_ != ACCEPTED_CONDITION);
    conditions.push(Condition {
        type_: ACCEPTED_CONDITION.into(),
        status: status.into(),
        reason: verdict.reason.clone(),
        message: verdict.message.clone(),
        observed_generation: generation,
        last_transition_time: transition,
    });
    let mut patch = serde_json::json!({ "status": { "conditions": conditions } });
    if let Some(r) = &verdict.revision {
        patch["status"]["revision"] = r.clone().into();
    }
    let api: Api<K> = Api::all(ctx.client.clone());
    ctx.write(
        || format!("patch status of {} {name}", K::KIND),
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)),
    )
    .await?;
    if let Ok(mut memo) = ctx.accepted_written.lock() {
        memo.insert(key, fingerprint);
    }
    if verdict.accepted {
        tracing::info!(kind = K::KIND, input = %name, reason = %verdict.reason, "{}", verdict.message);
    } else {
        tracing::warn!(kind = K::KIND, input = %name, reason = %verdict.reason, "input not accepted: {}", verdict.message);
        ctx.event(obj, true, &verdict.reason, "Validate", &verdict.message)
            .await;
    }
    Ok(())
}
