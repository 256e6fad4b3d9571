//! A revision's standard conditions, the way Kubernetes tooling reads them (kstatus: `Ready`,
//! `Reconciling`, `Stalled`), plus `InputsRefused` on a Failed revision the current inputs are
//! identical to. The mapping from phase to conditions is the table in docs/contract.md
//! ("Revision conditions").
//!
//! [`conditions`] is pure: the phase, message, pause and refusal in, the whole list out, with
//! `observedGeneration` = `metadata.generation` and a `lastTransitionTime` that changes only
//! when a condition's status does. Every phase write carries them ([`for_phase`]); [`sync`]
//! writes them only for a revision whose conditions are out of date (its generation changed
//! through a raise or a pause, the global pause changed, or the inputs started or stopped being
//! refused), so a pass where nothing changed writes nothing.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use netrollout_api::{
    ANALYSIS_CONDITION, IDENTICAL_CONTENT_REFUSED, INPUTS_REFUSED_CONDITION,
    NODES_CAPABLE_CONDITION, NOT_ROLLING_OUT, NetworkConfigRevision, READY_CONDITION,
    RECONCILING_CONDITION, RevisionBake, RevisionHold, RevisionPhase, RevisionSchedule,
    STALLED_CONDITION, reason::BAKING,
};

use std::sync::Arc;

use crate::context::{Context, StatusPatch};
use crate::convert;
use crate::error::Result;

/// The current inputs are identical to a Failed revision and are refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The Failed revision.
    pub revision: String,
    /// The `InputsRefused` message: which inputs, and what to do.
    pub message: String,
}

/// Why dispatches of a revision are stopped, if they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pause {
    /// Not paused.
    No,
    /// `spec.paused` on the revision.
    Revision,
    /// The global pause (the control ConfigMap).
    Global,
}

/// What a revision's conditions are made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts<'a> {
    /// `status.phase` (none yet: Pending).
    pub phase: Option<RevisionPhase>,
    /// `status.message`.
    pub message: Option<&'a str>,
    /// Whether new dispatches of it are stopped.
    pub pause: Pause,
    /// The `InputsRefused` message when the current inputs are identical to it.
    pub refused: Option<&'a str>,
    /// Its nodes baking (`status.bake`).
    pub bake: Option<&'a RevisionBake>,
    /// The maintenance schedule holds it (`status.schedule`).
    pub schedule: Option<&'a RevisionSchedule>,
    /// What holds it for a person (`status.hold`).
    pub hold: Option<&'a RevisionHold>,
}

/// The full condition list of a revision at `generation` with `facts`, keeping each
/// `lastTransitionTime` of `current` whose status is unchanged (others get `now`). Conditions of
/// other types in `current` are kept after the standard ones.
pub fn conditions(
    current: &[Condition],
    generation: Option<i64>,
    facts: &Facts<'_>,
    now: &Time,
) -> Vec<Condition> {
    let phase = facts.phase.unwrap_or(RevisionPhase::Pending);
    let active = matches!(phase, RevisionPhase::Pending | RevisionPhase::Progressing);
    let (reason, message): (&str, String) = match facts.pause {
        Pause::Revision if active => (
            "Paused",
            "spec.paused is set: no new dispatches; nodes already applying finish".into(),
        ),
        Pause::Global if active => (
            "Paused",
            "rollouts are paused globally (the netrollout-control ConfigMap): no new dispatches; \
             nodes already applying finish"
                .into(),
        ),
        // A person's gate first: it needs someone to act; the schedule then holds it on.
        _ if active && facts.hold.is_some() => {
            let h = facts.hold.unwrap_or_else(|| unreachable!("checked above"));
            (h.reason.as_str(), h.message.clone())
        }
        _ if active && facts.schedule.is_some() => {
            let h = facts
                .schedule
                .unwrap_or_else(|| unreachable!("checked above"));
            (h.reason.as_str(), schedule_message(h))
        }
        _ if active && facts.bake.is_some() => {
            let b = facts.bake.unwrap_or_else(|| unreachable!("checked above"));
            (
                BAKING,
                format!(
                    "baking, {} s left: {} node(s) that committed it must stay healthy until {} (--bake-time) before the next nodes go",
                    b.seconds_left, b.nodes, b.until.0
                ),
            )
        }
        _ => (
            phase_word(phase),
            facts
                .message
                .map_or_else(|| default_message(phase).to_string(), str::to_string),
        ),
    };
    let ready = phase == RevisionPhase::Succeeded;
    // Stopped rolling out for good: never the target again unless a person retries it. (A
    // Succeeded revision may be the target, whose pre-flight names a joining node that lacks
    // what it needs.)
    let stopped = matches!(
        phase,
        RevisionPhase::Superseded | RevisionPhase::Failed | RevisionPhase::Blocked
    );
    let stalled = matches!(phase, RevisionPhase::Failed | RevisionPhase::Blocked);
    let mut want = vec![
        (READY_CONDITION, ready, reason, message.clone()),
        (RECONCILING_CONDITION, active, reason, message.clone()),
        (STALLED_CONDITION, stalled, reason, message),
    ];
    let was_refused = current.iter().find(|c| c.type_ == INPUTS_REFUSED_CONDITION);
    match (facts.refused, phase, was_refused) {
        (Some(m), RevisionPhase::Failed, _) => {
            want.push((
                INPUTS_REFUSED_CONDITION,
                true,
                IDENTICAL_CONTENT_REFUSED,
                m.to_string(),
            ));
        }
        // No longer refused: say why once; a False one stays as it is.
        (_, RevisionPhase::Failed, Some(c)) if c.status == "True" => want.push((
            INPUTS_REFUSED_CONDITION,
            false,
            "InputsChanged",
            "the current inputs differ from this revision: nothing is refused".into(),
        )),
        (_, _, Some(c)) if c.status == "True" => want.push((
            INPUTS_REFUSED_CONDITION,
            false,
            "Retried",
            "retried by a person: no longer refused".into(),
        )),
        (_, _, Some(c)) => want.push((
            INPUTS_REFUSED_CONDITION,
            false,
            c.reason.as_str(),
            c.message.clone(),
        )),
        _ => {}
    }
    let mut out: Vec<Condition> = want
        .into_iter()
        .map(|(type_, status, reason, message)| {
            let status = if status { "True" } else { "False" };
            let since = current
                .iter()
                .find(|c| c.type_ == type_ && c.status == status)
                .map_or_else(|| now.clone(), |c| c.last_transition_time.clone());
            Condition {
                type_: type_.into(),
                status: status.into(),
                reason: reason.into(),
                message,
                observed_generation: generation,
                last_transition_time: since,
            }
        })
        .collect();
    let ours = |t: &str| {
        [
            READY_CONDITION,
            RECONCILING_CONDITION,
            STALLED_CONDITION,
            INPUTS_REFUSED_CONDITION,
        ]
        .contains(&t)
    };
    out.extend(
        (current.iter().filter(|c| !ours(&c.type_))).map(|c| match c {
            c if stopped && c.type_ == NODES_CAPABLE_CONDITION && c.status == "False" => {
                not_checked(c, phase, generation, now)
            }
            c => c.clone(),
        }),
    );
    out
}

/// A `NodesCapable=False` (pre-flight: the revision waits for nodes to report a capability, and
/// "rolls out on its own" once they do) on a revision that stopped rolling out in `phase`
/// (Superseded, Failed, Blocked) would promise a dispatch that never comes: it turns `Unknown`,
/// keeping what it said.
fn not_checked(
    c: &Condition,
    phase: RevisionPhase,
    generation: Option<i64>,
    now: &Time,
) -> Condition {
    Condition {
        type_: NODES_CAPABLE_CONDITION.into(),
        status: "Unknown".into(),
        reason: NOT_ROLLING_OUT.into(),
        message: format!(
            "not checked: the revision is {} and no longer rolls out; the last check said: {}",
            phase_word(phase),
            c.message
        ),
        observed_generation: generation,
        last_transition_time: now.clone(),
    }
}

/// The API's phase names are the reasons.
fn phase_word(phase: RevisionPhase) -> &'static str {
    match phase {
        RevisionPhase::Pending => "Pending",
        RevisionPhase::Progressing => "Progressing",
        RevisionPhase::Succeeded => "Succeeded",
        RevisionPhase::Failed => "Failed",
        RevisionPhase::Superseded => "Superseded",
        RevisionPhase::Blocked => "Blocked",
    }
}

fn default_message(phase: RevisionPhase) -> &'static str {
    match phase {
        RevisionPhase::Pending => "created; no node has been dispatched yet",
        RevisionPhase::Progressing => "being rolled out",
        RevisionPhase::Succeeded => "every counted managed node runs it",
        RevisionPhase::Failed => "more nodes failed it than --max-failures allows",
        RevisionPhase::Superseded => "a newer revision replaced it",
        RevisionPhase::Blocked => "it cannot be rolled out",
    }
}

/// The pause that applies to `ncr`.
pub fn pause_of(ncr: &NetworkConfigRevision, globally_paused: bool) -> Pause {
    if ncr.spec.paused {
        Pause::Revision
    } else if globally_paused {
        Pause::Global
    } else {
        Pause::No
    }
}

/// The `Reconciling` message of a revision the maintenance schedule holds, from its typed
/// `status.schedule` (the configurator's own sentence for the Event says the same).
fn schedule_message(h: &RevisionSchedule) -> String {
    let opens = match &h.opens_at {
        Some(t) => format!("the next window opens at {}", t.0),
        None => "no window opens within the next 400 days".into(),
    };
    match h.reason.as_str() {
        netrollout_api::reason::CHANGE_FREEZE => format!(
            "held by change freeze {} (MaintenanceSchedule): {opens}; nodes already applying finish",
            h.freeze
        ),
        netrollout_api::reason::OUTSIDE_MAINTENANCE_WINDOW => format!(
            "held outside the maintenance windows (MaintenanceSchedule): {opens}; nodes already applying finish"
        ),
        _ => format!("held: {}", h.message),
    }
}

/// The status fields (`conditions`, `observedGeneration`) to merge into a write that sets
/// `phase` and `message` on `ncr`; with `hold: null` when `phase` ends its rollout.
pub fn for_phase(
    ncr: &NetworkConfigRevision,
    phase: RevisionPhase,
    message: &str,
    globally_paused: bool,
    refusal: Option<&Refusal>,
) -> serde_json::Value {
    let facts = Facts {
        phase: Some(phase),
        message: Some(message),
        pause: pause_of(ncr, globally_paused),
        refused: refused_message(ncr, refusal),
        bake: ncr.status.as_ref().and_then(|s| s.bake.as_ref()),
        schedule: ncr.status.as_ref().and_then(|s| s.schedule.as_ref()),
        hold: ncr.status.as_ref().and_then(|s| s.hold.as_ref()),
    };
    let mut fields = fields(ncr, &facts);
    // Only a revision rolling out waits for a person: a hold goes in the same write as the
    // phase that ends it, so no reader sees a revision Succeeded (or Failed, Superseded) and
    // held at once, whatever write of a pass failed before (`approval::tell` clears holds too,
    // before the pass's actions).
    if !matches!(phase, RevisionPhase::Pending | RevisionPhase::Progressing) {
        fields["hold"] = serde_json::Value::Null;
    }
    fields
}

/// [`for_phase`] for a retried revision going back to Pending with `message`, without its
/// `AnalysisPassed` condition: a retry rolls the revision out again from its first wave and
/// measures the analysis afresh (the retry also clears `status.analysis`), so the verdict of
/// the attempt before would speak for a rollout that has not been measured yet. The condition
/// comes back with the new verdict.
pub fn for_retry(
    ncr: &NetworkConfigRevision,
    message: &str,
    globally_paused: bool,
) -> serde_json::Value {
    let mut fields = for_phase(ncr, RevisionPhase::Pending, message, globally_paused, None);
    if let Some(list) = fields["conditions"].as_array_mut() {
        list.retain(|c| c["type"] != ANALYSIS_CONDITION);
    }
    fields
}

fn refused_message<'a>(
    ncr: &NetworkConfigRevision,
    refusal: Option<&'a Refusal>,
) -> Option<&'a str> {
    refusal
        .filter(|r| ncr.metadata.name.as_deref() == Some(r.revision.as_str()))
        .map(|r| r.message.as_str())
}

fn fields(ncr: &NetworkConfigRevision, facts: &Facts<'_>) -> serde_json::Value {
    let current = ncr
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let generation = ncr.metadata.generation;
    let list = conditions(
        current,
        generation,
        facts,
        &convert::to_time(convert::now()),
    );
    with_current_analysis(ncr, list)
}

/// The status fields for `list`: with the analysis of an earlier targeting cleared. A raised
/// revision (an undo, inputs returning to its content) is rolled out like a new one, so its
/// verdict (`status.analysis`) and `AnalysisPassed` condition, reached under an earlier
/// sequence, speak for a rollout that is not this one: both go, as after a retry, and come
/// back with the first verdict measured under the current sequence.
fn with_current_analysis(
    ncr: &NetworkConfigRevision,
    mut list: Vec<Condition>,
) -> serde_json::Value {
    let generation = ncr.metadata.generation;
    if netrollout_api::analysis_is_current(ncr) {
        return serde_json::json!({ "conditions": list, "observedGeneration": generation });
    }
    list.retain(|c| c.type_ != ANALYSIS_CONDITION);
    serde_json::json!({ "conditions": list, "observedGeneration": generation, "analysis": null })
}

/// The status fields to write on `ncr` when its conditions are out of date or its analysis
/// is of an earlier targeting; `None` when they are current.
pub fn update(
    ncr: &NetworkConfigRevision,
    globally_paused: bool,
    refusal: Option<&Refusal>,
) -> Option<serde_json::Value> {
    let status = ncr.status.clone().unwrap_or_default();
    let facts = Facts {
        phase: status.phase,
        message: status.message.as_deref(),
        pause: pause_of(ncr, globally_paused),
        refused: refused_message(ncr, refusal),
        bake: status.bake.as_ref(),
        schedule: status.schedule.as_ref(),
        hold: status.hold.as_ref(),
    };
    let generation = ncr.metadata.generation;
    let want = conditions(
        &status.conditions,
        generation,
        &facts,
        &convert::to_time(convert::now()),
    );
    if want == status.conditions
        && status.observed_generation == generation
        && netrollout_api::analysis_is_current(ncr)
    {
        return None;
    }
    Some(with_current_analysis(ncr, want))
}

/// The writes that bring the conditions of every revision (not being deleted) up to date, in
/// the order of `ncrs`; `refusal` says which Failed revision the current inputs are identical to.
pub fn decide(
    ncrs: &[Arc<NetworkConfigRevision>],
    globally_paused: bool,
    refusal: Option<&Refusal>,
) -> Vec<StatusPatch> {
    ncrs.iter()
        .filter(|ncr| ncr.metadata.deletion_timestamp.is_none())
        .filter_map(|ncr| {
            Some(StatusPatch {
                revision: ncr.metadata.name.clone()?,
                status: update(ncr, globally_paused, refusal)?,
                what: "write the conditions of",
            })
        })
        .collect()
}

/// Writes the conditions [`decide`] finds out of date.
///
/// # Errors
/// The first failed write (the pass is retried with backoff).
pub async fn sync(ctx: &Context, refusal: Option<&Refusal>) -> Result<()> {
    let writes = decide(
        &ctx.read().revisions(),
        ctx.read().globally_paused(),
        refusal,
    );
    for w in &writes {
        tracing::debug!(revision = %w.revision, "conditions written");
    }
    ctx.writer().patch_statuses(&writes).await
}

#[cfg(test)]
mod requests;
#[cfg(test)]
mod tests;
