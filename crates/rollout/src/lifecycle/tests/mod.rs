//! Every decision of [`decide`] on its own, and properties over random revisions. One set of
//! builders (`rev`, `input`, `valid`, `showing`) and readers (`writes`, `verdicts`) serves
//! every file:
//! - `create_reuse`: create, reuse, raise, wait for deletion, name clash, identical to Failed.
//! - `retries`: the retry annotation.
//! - `verdicts`: the `Accepted` verdicts and when they are written.
//! - `properties`: determinism and rising sequences over random revisions.

use super::*;
use crate::state::RevisionPhase;
use crate::time::Timestamp;

mod create_reuse;
mod properties;
mod retries;
mod verdicts;

const NOW: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn rev(name: &str, hash: &str, sequence: i64, phase: Option<RevisionPhase>) -> RevisionView {
    RevisionView {
        name: name.into(),
        hash: hash.into(),
        sequence,
        phase,
        deleting: false,
        retry: None,
    }
}

fn input(kind: InputKind, name: &str) -> InputObject {
    InputObject {
        input: InputRef {
            kind,
            name: name.into(),
        },
        generation: Some(1),
        accepted: None,
        revision: None,
    }
}

fn inputs() -> Vec<InputObject> {
    vec![
        input(InputKind::Vrf, "vrf-a"),
        input(InputKind::Layer2, "l2-a"),
        input(InputKind::Table, "taas-a"),
    ]
}

fn valid(name: &str, hash: &str) -> Candidate {
    Candidate::Valid(Content {
        hash: hash.into(),
        name: name.into(),
        size: 42,
    })
}

const LIMITS: StoreLimits = StoreLimits {
    object_bytes: 1_572_864,
    snapshot_bytes: 1_310_720,
};

fn problem(kind: &str, object: &str, field: &str, message: &str) -> Problem {
    Problem {
        kind: kind.into(),
        object: object.into(),
        field: field.into(),
        message: message.into(),
    }
}

fn invalid(problems: Vec<Problem>) -> Invalid {
    Invalid {
        problems,
        limits: LIMITS,
    }
}

/// An input whose status already carries `verdict` at generation 1.
fn showing(kind: InputKind, name: &str, verdict: &Verdict) -> InputObject {
    let mut i = input(kind, name);
    i.accepted = Some(AcceptedShown {
        status: verdict.status().into(),
        reason: verdict.reason.clone(),
        message: verdict.message.clone(),
        observed_generation: Some(1),
    });
    i.revision = verdict.revision.clone();
    i
}

fn verdicts(actions: &[RevisionAction]) -> Vec<(String, bool, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            RevisionAction::SetAccepted { input, update } => Some((
                input.name.clone(),
                update.verdict.accepted,
                update.verdict.reason.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn writes(actions: &[RevisionAction]) -> Vec<&RevisionAction> {
    actions
        .iter()
        .filter(|a| !matches!(a, RevisionAction::SetAccepted { .. }))
        .collect()
}

fn all_accepted(actions: &[RevisionAction], reason: &str, accepted: bool) {
    let v = verdicts(actions);
    assert_eq!(v.len(), 3, "{actions:#?}");
    for (name, a, r) in v {
        assert_eq!((a, r.as_str()), (accepted, reason), "{name}");
    }
}
