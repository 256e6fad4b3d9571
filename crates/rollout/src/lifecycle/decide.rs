//! [`decide`]: the revision lifecycle's decisions, in the order they are carried out.
//!
//! 1. Retries: a Failed or Blocked revision with the retry annotation is cleared to Pending
//!    and raised above every other revision; the annotation on any other revision is dropped.
//! 2. No inputs and no revisions: nothing more.
//! 3. An invalid candidate: every input gets `Accepted=False` with its own problems (or that
//!    other inputs are invalid), and no revision is touched.
//! 4. A valid candidate: create its revision, or reuse the existing one of that name (raising
//!    its sequence when it is not the newest), or wait while that one is terminating, or
//!    report a name clash, or refuse content identical to a Failed revision. Every input gets
//!    the verdict.
//!
//! New sequences strictly increase within one call and lie above every sequence seen.

use super::action::{RaiseReason, Retried, RevisionAction};
use super::model::{Candidate, InputObject, NameClash, RETRY_ANNOTATION, RevisionView};
use super::verdict::Verdict;
use crate::state::RevisionPhase;
use crate::time::Timestamp;

/// The lifecycle actions for one pass: `inputs` are the live inputs, `revisions` the current
/// revisions (the watch cache with own writes laid over it), `candidate` the checked merge of
/// `inputs`, `now` the configurator's clock.
pub fn decide(
    inputs: &[InputObject],
    revisions: &[RevisionView],
    candidate: &Candidate,
    now: Timestamp,
) -> Vec<RevisionAction> {
    let mut actions = Vec::new();
    let mut revisions = revisions.to_vec();
    retries(&mut revisions, now, &mut actions);
    if inputs.is_empty() && revisions.is_empty() {
        return actions;
    }
    let verdict = match candidate {
        Candidate::Invalid(invalid) => {
            for input in inputs {
                let verdict = Verdict::of_invalid(&input.input, invalid);
                set_accepted(input, &verdict, now, &mut actions);
            }
            return actions;
        }
        Candidate::Valid(content) => {
            let max_seq = max_sequence(&revisions);
            match revisions.iter().find(|r| r.name == content.name) {
                Some(existing) if existing.deleting => {
                    actions.push(RevisionAction::WaitForDeletion {
                        revision: existing.name.clone(),
                    });
                    Verdict::rejected(
                        "WaitingForDeletion",
                        format!(
                            "NetworkConfigRevision {} is being deleted; a new one is created once it is gone",
                            existing.name
                        ),
                    )
                }
                Some(existing) if existing.hash != content.hash => {
                    let clash = NameClash {
                        name: existing.name.clone(),
                        existing: existing.hash.clone(),
                        wanted: content.hash.clone(),
                    };
                    actions.push(RevisionAction::ReportClash {
                        revision: existing.name.clone(),
                        existing: existing.hash.clone(),
                        wanted: content.hash.clone(),
                    });
                    Verdict::rejected("NameClash", clash.to_string())
                }
                Some(existing) if existing.phase == Some(RevisionPhase::Failed) => {
                    let message = format!(
                        "identical to failed revision {}; nothing is rolled out until a person retries it \
                         (kubectl netrollout retry {0}, i.e. annotate it {RETRY_ANNOTATION})",
                        existing.name,
                    );
                    actions.push(RevisionAction::NoteIdentical {
                        revision: existing.name.clone(),
                        message: message.clone(),
                    });
                    Verdict::rejected("IdenticalToFailedRevision", message)
                }
                Some(existing) => {
                    if existing.sequence < max_seq {
                        actions.push(RevisionAction::RaiseSequence {
                            revision: existing.name.clone(),
                            from: existing.sequence,
                            to: max_seq + 1,
                            reason: RaiseReason::InputsEqualAgain,
                            retried: retried_value(existing, now),
                        });
                    }
                    Verdict::accepted(&existing.name)
                }
                None => {
                    actions.push(RevisionAction::Create {
                        name: content.name.clone(),
                        hash: content.hash.clone(),
                        size: content.size,
                        sequence: max_seq + 1,
                    });
                    Verdict::accepted(&content.name)
                }
            }
        }
    };
    for input in inputs {
        set_accepted(input, &verdict, now, &mut actions);
    }
    actions
}

/// Retries asked for with the retry annotation, applied to `revisions` as the writes will
/// leave them (so the rest of [`decide`] sees the raised sequences).
fn retries(revisions: &mut [RevisionView], now: Timestamp, actions: &mut Vec<RevisionAction>) {
    let mut next = max_sequence(revisions) + 1;
    for r in revisions.iter_mut() {
        if r.retry.is_none() || r.deleting {
            continue;
        }
        if matches!(
            r.phase,
            Some(RevisionPhase::Failed | RevisionPhase::Blocked)
        ) {
            actions.push(RevisionAction::ClearFailed {
                revision: r.name.clone(),
            });
            actions.push(RevisionAction::RaiseSequence {
                revision: r.name.clone(),
                from: r.sequence,
                to: next,
                reason: RaiseReason::Retried,
                retried: retried_value(r, now),
            });
            r.phase = Some(RevisionPhase::Pending);
            r.sequence = next;
            next += 1;
        } else {
            actions.push(RevisionAction::DropRetry {
                revision: r.name.clone(),
            });
        }
        r.retry = None;
    }
}

/// The `retried` value a raise leaves: the retry annotation's value, or the time when it is
/// empty (so each retry is a new value for the agents).
fn retried_value(r: &RevisionView, now: Timestamp) -> Option<Retried> {
    r.retry.as_ref().map(|v| {
        if v.is_empty() {
            Retried::At(now)
        } else {
            Retried::Value(v.clone())
        }
    })
}

fn max_sequence(revisions: &[RevisionView]) -> i64 {
    revisions.iter().map(|r| r.sequence).max().unwrap_or(0)
}

fn set_accepted(
    input: &InputObject,
    verdict: &Verdict,
    now: Timestamp,
    actions: &mut Vec<RevisionAction>,
) {
    if let Some(update) = verdict.update_for(input, now) {
        actions.push(RevisionAction::SetAccepted {
            input: input.input.clone(),
            update,
        });
    }
}
