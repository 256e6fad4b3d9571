//! The revision lifecycle inside the simulated fleets: when the simulated inputs change, the
//! pure lifecycle (`netrollout_rollout::lifecycle::decide`) decides what happens to the
//! revisions — create, reuse with a raised sequence, or refuse content identical to a Failed
//! revision — and the world carries its actions out, as the configurator does against the API.
//! Every decision is checked against the lifecycle's invariants (`check_decision`); a broken
//! one panics with the decision, which `run_all` reports with its seed.

use netrollout_rollout::lifecycle::{
    Candidate, Content, InputKind, InputObject, InputRef, RaiseReason, RevisionAction,
    RevisionView, decide,
};
use netrollout_rollout::{Revision, RevisionPhase, State};

use crate::world::{World, rev_name};

/// The hash of the simulated content `content` (names derive from it, as in the real system).
fn hash(content: u64) -> String {
    format!("h{content}")
}

/// The simulated inputs: one object, whose status the world does not keep (so every decision
/// carries a verdict to check).
fn inputs(content: u64) -> Vec<InputObject> {
    vec![InputObject {
        input: InputRef {
            kind: InputKind::Vrf,
            name: "sim-inputs".into(),
        },
        generation: i64::try_from(content).ok(),
        accepted: None,
        revision: None,
    }]
}

fn view(r: &Revision) -> RevisionView {
    RevisionView {
        name: r.name.clone(),
        hash: r.hash.clone(),
        sequence: i64::try_from(r.sequence).expect("simulated sequences fit in i64"),
        phase: Some(r.phase),
        deleting: false,
        retry: None,
    }
}

/// The inputs of a simulated world change.
pub trait Inputs {
    /// The inputs now make the snapshot with content id `content`: the lifecycle decides
    /// which revision holds it, and the world carries that out. Returns the revision's name.
    fn change_inputs(&mut self, content: u64) -> String;
}

impl Inputs for World {
    fn change_inputs(&mut self, content: u64) -> String {
        let name = rev_name(content);
        let candidate = Candidate::Valid(Content {
            name: name.clone(),
            hash: hash(content),
            size: 0,
        });
        let views: Vec<RevisionView> = self.state.revisions.iter().map(view).collect();
        let actions = decide(&inputs(content), &views, &candidate, self.now);
        let before = self.state.clone();
        for action in &actions {
            carry_out(self, action);
        }
        if let Err(e) = check_decision(&before, &self.state, content, &actions) {
            let tail = self.log.len().saturating_sub(20);
            panic!(
                "lifecycle invariant broken: {e}\nactions: {actions:?}\n--- last trace lines ---\n{}",
                self.log[tail..].join("\n")
            );
        }
        name
    }
}

/// One action against the simulated API (the trace lines are the ones the scenarios' coverage
/// looks for).
fn carry_out(w: &mut World, action: &RevisionAction) {
    match action {
        RevisionAction::Create {
            name,
            hash,
            sequence,
            ..
        } => {
            let seq = u64::try_from(*sequence).expect("the lifecycle's sequences are positive");
            w.state.revisions.push(Revision::new(name, seq, hash));
            w.log
                .push(format!("revision {name}: created, sequence {seq}"));
        }
        RevisionAction::RaiseSequence {
            revision,
            to,
            reason,
            ..
        } => {
            let seq = u64::try_from(*to).expect("the lifecycle's sequences are positive");
            if let Some(r) = w.state.revisions.iter_mut().find(|r| &r.name == revision) {
                r.sequence = seq;
                // As the configurator marks it: inputs back to a known-good revision.
                r.undo =
                    *reason == RaiseReason::InputsEqualAgain && r.phase == RevisionPhase::Succeeded;
            }
            w.log.push(format!(
                "revision {revision}: existing, sequence raised to {seq}"
            ));
        }
        RevisionAction::NoteIdentical { revision, .. } => {
            w.log.push(format!(
                "revision {revision}: identical to failed revision, not rolled out"
            ));
        }
        RevisionAction::SetAccepted { update, .. } => {
            w.log.push(format!(
                "inputs: Accepted={} {}",
                update.verdict.status(),
                update.verdict.reason
            ));
        }
        // No retries, deletions or hand-edited revisions in the simulated API: the checks
        // below report any of these as a wrong decision.
        RevisionAction::ClearFailed { .. }
        | RevisionAction::DropRetry { .. }
        | RevisionAction::WaitForDeletion { .. }
        | RevisionAction::ReportClash { .. } => {}
    }
}

/// The lifecycle's promises for one change of the inputs to `content`, from the revisions
/// `before` and `after` it and the `actions` it took:
/// - identical content never makes a second revision (one revision per hash, and no create
///   when one with the hash existed);
/// - content identical to a Failed revision is never rolled out again without a retry (the
///   revision stays Failed at its sequence, the inputs are not accepted);
/// - otherwise the inputs are accepted into the revision of their content, which is then the
///   newest by sequence (the target);
/// - nothing but create, raise, note and verdicts happens when nobody retries or deletes.
pub fn check_decision(
    before: &State,
    after: &State,
    content: u64,
    actions: &[RevisionAction],
) -> Result<(), String> {
    let name = rev_name(content);
    let mut hashes: Vec<&str> = after.revisions.iter().map(|r| r.hash.as_str()).collect();
    hashes.sort_unstable();
    if hashes.windows(2).any(|p| p[0] == p[1]) {
        return Err(format!("two revisions hold one content: {hashes:?}"));
    }
    let existed = before.revisions.iter().find(|r| r.hash == hash(content));
    let created = actions
        .iter()
        .any(|a| matches!(a, RevisionAction::Create { .. }));
    if existed.is_some() && created {
        return Err(format!("content {content} existed and was created again"));
    }
    let unexpected = actions.iter().find(|a| {
        matches!(
            a,
            RevisionAction::ClearFailed { .. }
                | RevisionAction::DropRetry { .. }
                | RevisionAction::WaitForDeletion { .. }
                | RevisionAction::ReportClash { .. }
        )
    });
    if let Some(a) = unexpected {
        return Err(format!(
            "{} without a retry, a deletion or a clash",
            a.name()
        ));
    }
    let verdicts: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            RevisionAction::SetAccepted { update, .. } => Some(&update.verdict),
            _ => None,
        })
        .collect();
    let [verdict] = verdicts[..] else {
        return Err(format!("{} verdicts for one input", verdicts.len()));
    };
    let now = after.revisions.iter().find(|r| r.name == name);
    if let Some(failed) = existed.filter(|r| r.phase == RevisionPhase::Failed) {
        let still =
            now.is_some_and(|r| r.phase == RevisionPhase::Failed && r.sequence == failed.sequence);
        if !still || verdict.accepted {
            return Err(format!(
                "content identical to Failed revision {name} was taken up again without a retry"
            ));
        }
        return Ok(());
    }
    if !verdict.accepted || verdict.revision.as_deref() != Some(name.as_str()) {
        return Err(format!(
            "the inputs were not accepted into {name}: {verdict:?}"
        ));
    }
    let newest = after.revisions.iter().max_by_key(|r| r.sequence);
    if newest.map(|r| &r.name) != Some(&name) || now.is_none() {
        return Err(format!(
            "{name} is not the newest revision after the inputs changed to it"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use netrollout_rollout::Settings;

    use super::*;
    use crate::agent::{Agent, Behavior};

    fn world() -> World {
        let mut w = World::new(7, Settings::default());
        w.add_node(0, false, Agent::new(Behavior::Healthy, 1));
        w
    }

    #[test]
    fn the_lifecycle_creates_reuses_and_raises_and_never_makes_a_second_revision_of_one_content() {
        let mut w = world();
        let a = w.change_inputs(1);
        let b = w.change_inputs(2);
        assert_eq!(w.state.revisions.len(), 2);
        // The same inputs again: nothing new, nothing raised (b is the newest).
        w.change_inputs(2);
        assert_eq!(w.state.revisions.len(), 2);
        // Undo: a is reused and raised above b.
        w.change_inputs(1);
        assert_eq!(w.state.revisions.len(), 2);
        let seq = |n: &str| {
            w.state
                .revisions
                .iter()
                .find(|r| r.name == n)
                .unwrap()
                .sequence
        };
        assert!(seq(&a) > seq(&b), "{:?}", w.state.revisions);
        assert!(
            w.log.iter().any(|l| l.contains("sequence raised")),
            "{:?}",
            w.log
        );
    }

    #[test]
    fn content_identical_to_a_failed_revision_is_refused_in_the_fleet() {
        let mut w = world();
        let a = w.change_inputs(1);
        w.change_inputs(2);
        w.state
            .revisions
            .iter_mut()
            .find(|r| r.name == a)
            .unwrap()
            .phase = RevisionPhase::Failed;
        let before = w.state.clone();
        w.change_inputs(1);
        assert_eq!(
            w.state, before,
            "a Failed revision's content was taken up again"
        );
        assert!(
            w.log.iter().any(|l| l.contains("identical to failed")),
            "{:?}",
            w.log
        );
    }

    #[test]
    fn the_invariants_reject_a_second_revision_of_one_content_and_a_raised_failed_revision() {
        let mut before = State::default();
        before.revisions.push(Revision::new("ncr-1", 1, "h1"));
        let mut twice = before.clone();
        twice.revisions.push(Revision::new("ncr-1b", 2, "h1"));
        let create = RevisionAction::Create {
            name: "ncr-1b".into(),
            hash: "h1".into(),
            size: 0,
            sequence: 2,
        };
        let err = check_decision(&before, &twice, 1, &[create]).unwrap_err();
        assert!(err.contains("two revisions hold one content"), "{err}");

        before.revisions[0].phase = RevisionPhase::Failed;
        before.revisions.push(Revision::new("ncr-2", 2, "h2"));
        let mut raised = before.clone();
        raised.revisions[0].sequence = 3;
        // The decision as if the revision were not Failed: raise it and accept the inputs.
        let mut succeeded = before.clone();
        succeeded.revisions[0].phase = RevisionPhase::Succeeded;
        let views: Vec<RevisionView> = succeeded.revisions.iter().map(view).collect();
        let w = world();
        let accepted = decide(
            &inputs(1),
            &views,
            &Candidate::Valid(Content {
                name: "ncr-1".into(),
                hash: "h1".into(),
                size: 0,
            }),
            w.now,
        );
        let err = check_decision(&before, &raised, 1, &accepted).unwrap_err();
        assert!(err.contains("taken up again without a retry"), "{err}");
    }
}
