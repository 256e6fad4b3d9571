//! Inputs → revisions ("Revisions" in docs/contract.md), the I/O half: gather the live inputs and
//! the revisions, check the merged snapshot, let [`lifecycle::decide()`] (the pure lifecycle in
//! `netrollout-rollout`) choose, and carry its [`RevisionAction`]s out as API writes, log lines,
//! Events and metrics, in order, stopping at the first failed write.
//!
//! Layout:
//! - `live`: the inputs of one pass, the check of their merge ([`live::Checked`]), the memo of
//!   the last one checked, and their conversion into the lifecycle's types.
//! - `execute`: the executor of the lifecycle's actions.
//! - `record`: the change record of a revision (who changed which input, and why).

mod execute;
pub mod live;
pub(crate) mod record;

use netrollout_api::RETRY_ANNOTATION;
use netrollout_render::Node as RenderNode;
use netrollout_rollout::lifecycle::{self, InputObject, RevisionAction, RevisionView};
use tracing::Instrument;

use crate::conditions::Refusal;
use crate::context::Context;
use crate::convert;
use crate::error::Result;
use crate::memo::{AcceptedMemo, NotedMemo};
use crate::spans;

use execute::Executor;
use live::{CandidateMemo, Checked, Live};

/// What this replica remembers between passes about the inputs and revisions: the last checked
/// candidate, the `Accepted` verdicts it wrote and the "identical to a Failed revision" notes
/// it gave (so a pass does not repeat what the caches do not show yet).
#[derive(Debug, Default)]
pub struct Memos {
    candidate: CandidateMemo,
    accepted: AcceptedMemo,
    noted: NotedMemo,
}

/// Carries out retries asked for with [`RETRY_ANNOTATION`], makes sure a revision exists for
/// the current inputs and is the newest by sequence (unless it is Failed), and sets every
/// input's `Accepted` condition — as [`lifecycle::decide()`] decides.
///
/// A name clash ([`crate::error::Error::NameClash`]) is reported on the inputs and in the metrics, and the
/// pass goes on without a new revision. Returns the Failed revision the inputs are identical
/// to, if they are, for its `InputsRefused` condition.
///
/// # Errors
/// API errors; a snapshot that cannot be serialised.
pub async fn sync(
    ctx: &Context,
    memos: &Memos,
    generation: u64,
    nodes: &[RenderNode],
) -> Result<Option<Refusal>> {
    let cached = ctx.read().inputs();
    let live = Live {
        vrfs: cached.vrfs,
        layer2s: cached.layer2s,
        tables: cached.tables,
        peerings: cached.peerings,
    };
    let inputs = live.views();
    let current = ctx.read().revisions();
    let views: Vec<RevisionView> = current.iter().map(|r| live::revision_view(r)).collect();
    // Checking renders the snapshot for every node: done again only when an input or the
    // nodes' names and labels changed.
    let accepted = current
        .iter()
        .filter(|r| r.metadata.deletion_timestamp.is_none())
        .max_by_key(|r| r.spec.sequence);
    let base = accepted.and_then(|r| r.metadata.name.clone());
    let accepted = accepted.map(|r| &r.spec.snapshot);
    let candidate = memos
        .candidate
        .get_or(live.key(generation, base), || live.check(nodes, accepted))?;
    if let Checked::Invalid(invalid) = candidate.as_ref()
        && !inputs.is_empty()
    {
        tracing::warn!(
            problems = invalid.problems.len(),
            "inputs rejected, no revision created: {invalid}"
        );
    }
    let actions = lifecycle::decide(&inputs, &views, &candidate.candidate(), convert::now());
    let refusal = actions.iter().find_map(|a| match a {
        RevisionAction::NoteIdentical { revision, .. } => Some(refusal(revision, &inputs)),
        _ => None,
    });
    let mut exec = Executor::new(ctx, memos, &live, &candidate, current);
    for action in actions {
        let span = spans::lifecycle(&action);
        exec.one(action).instrument(span).await?;
    }
    Ok(refusal)
}

/// Inputs named in an `InputsRefused` message; the rest are counted.
const NAMED_INPUTS: usize = 10;

/// What the Failed revision `revision` says while `inputs` are identical to it.
fn refusal(revision: &str, inputs: &[InputObject]) -> Refusal {
    let mut names: Vec<String> = inputs
        .iter()
        .take(NAMED_INPUTS)
        .map(|i| i.input.to_string())
        .collect();
    if inputs.len() > NAMED_INPUTS {
        names.push(format!("and {} more", inputs.len() - NAMED_INPUTS));
    }
    let names = if names.is_empty() {
        "no inputs at all".to_string()
    } else {
        names.join(", ")
    };
    Refusal {
        revision: revision.to_string(),
        message: format!(
            "the current inputs ({names}) are identical to this Failed revision and are refused: \
             nothing is rolled out until a person retries it (kubectl netrollout retry {revision}, \
             i.e. annotate it {RETRY_ANNOTATION})"
        ),
    }
}

#[cfg(test)]
mod requests;

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;
    use netrollout_api::{
        NetworkConfigRevision, NetworkConfigRevisionSpec, NetworkConfigRevisionStatus,
        RevisionPhase as ApiPhase,
    };
    use netrollout_rollout::RevisionPhase;

    use super::*;

    #[test]
    fn the_lifecycle_names_the_retry_annotation_the_api_defines() {
        assert_eq!(lifecycle::RETRY_ANNOTATION, RETRY_ANNOTATION);
    }

    #[test]
    fn a_revision_is_seen_with_its_phase_retry_and_deletion() {
        let mut ncr = NetworkConfigRevision {
            metadata: ObjectMeta {
                name: Some("ncr-1".into()),
                annotations: Some([(RETRY_ANNOTATION.to_string(), "again".to_string())].into()),
                ..ObjectMeta::default()
            },
            spec: NetworkConfigRevisionSpec {
                sequence: 7,
                hash: "sha256:1".into(),
                ..NetworkConfigRevisionSpec::default()
            },
            status: None,
        };
        let fresh = live::revision_view(&ncr);
        assert_eq!(
            (fresh.name.as_str(), fresh.hash.as_str(), fresh.sequence),
            ("ncr-1", "sha256:1", 7)
        );
        assert_eq!(fresh.phase, None);
        assert_eq!(fresh.retry.as_deref(), Some("again"));
        assert!(!fresh.deleting);
        ncr.status = Some(NetworkConfigRevisionStatus {
            phase: Some(ApiPhase::Failed),
            ..NetworkConfigRevisionStatus::default()
        });
        ncr.metadata.deletion_timestamp = Some(convert::to_time(convert::now()));
        let failed = live::revision_view(&ncr);
        assert_eq!(failed.phase, Some(RevisionPhase::Failed));
        assert!(failed.deleting);
    }
}
