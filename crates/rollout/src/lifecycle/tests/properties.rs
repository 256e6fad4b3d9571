//! Properties over random revisions and candidates: decisions are deterministic, sequences only
//! rise, names are never created twice, every input gets one verdict.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;

use super::*;

const PHASES: [Option<RevisionPhase>; 7] = [
    None,
    Some(RevisionPhase::Pending),
    Some(RevisionPhase::Progressing),
    Some(RevisionPhase::Succeeded),
    Some(RevisionPhase::Failed),
    Some(RevisionPhase::Superseded),
    Some(RevisionPhase::Blocked),
];

fn arb_revision() -> impl Strategy<Value = RevisionView> {
    (
        0..5usize,
        0..3usize,
        0..8i64,
        0..PHASES.len(),
        any::<bool>(),
        prop_oneof![
            Just(None),
            Just(Some(String::new())),
            Just(Some("r".to_string()))
        ],
    )
        .prop_map(|(n, h, sequence, p, deleting, retry)| RevisionView {
            name: format!("ncr-{n}"),
            hash: format!("sha256:{h}"),
            sequence,
            phase: PHASES[p],
            deleting,
            retry,
        })
}

fn arb_revisions() -> impl Strategy<Value = Vec<RevisionView>> {
    proptest::collection::vec(arb_revision(), 0..6).prop_map(|mut v| {
        // Names are unique in the API.
        let mut seen = HashSet::new();
        v.retain(|r| seen.insert(r.name.clone()));
        v
    })
}

fn arb_candidate() -> impl Strategy<Value = Candidate> {
    prop_oneof![
        4 => (0..6usize, 0..3usize).prop_map(|(n, h)| valid(&format!("ncr-{n}"), &format!("sha256:{h}"))),
        1 => Just(Candidate::Invalid(invalid(vec![problem(
            "VRFRouteConfiguration",
            "vrf-a",
            "spec.vrf",
            "bad",
        )]))),
    ]
}

proptest! {
    #[test]
    fn decisions_are_deterministic_and_sequences_only_rise(
        revisions in arb_revisions(),
        candidate in arb_candidate(),
        with_inputs in any::<bool>(),
    ) {
        let inputs = if with_inputs { inputs() } else { vec![] };
        let actions = decide(&inputs, &revisions, &candidate, NOW);
        prop_assert_eq!(&actions, &decide(&inputs, &revisions, &candidate, NOW));

        let max_seen = revisions.iter().map(|r| r.sequence).max().unwrap_or(0);
        let mut last = max_seen;
        let mut created = HashSet::new();
        let mut sequences: HashMap<&str, i64> =
            revisions.iter().map(|r| (r.name.as_str(), r.sequence)).collect();
        for a in &actions {
            match a {
                RevisionAction::Create { name, sequence, .. } => {
                    prop_assert!(created.insert(name.clone()), "two creates of {}", name);
                    prop_assert!(!revisions.iter().any(|r| &r.name == name), "create over {}", name);
                    prop_assert!(*sequence > last, "{} after {}", sequence, last);
                    last = *sequence;
                }
                RevisionAction::RaiseSequence { revision, from, to, .. } => {
                    prop_assert!(to > from);
                    prop_assert!(*to > last, "{} after {}", to, last);
                    last = *to;
                    let r = revisions.iter().find(|r| &r.name == revision);
                    prop_assert!(r.is_some_and(|r| !r.deleting));
                    prop_assert_eq!(sequences.insert(revision.as_str(), *to), Some(*from));
                }
                RevisionAction::ClearFailed { revision } | RevisionAction::DropRetry { revision } => {
                    let r = revisions.iter().find(|r| &r.name == revision);
                    prop_assert!(r.is_some_and(|r| !r.deleting && r.retry.is_some()));
                }
                _ => {}
            }
        }
        // A clear is always followed by the raise of that revision.
        for (i, a) in actions.iter().enumerate() {
            if let RevisionAction::ClearFailed { revision } = a {
                let next = actions.get(i + 1);
                let next_is_raise = matches!(next,
                    Some(RevisionAction::RaiseSequence { revision: r, .. }) if r == revision);
                prop_assert!(next_is_raise);
            }
        }
        // Invalid inputs never touch a revision beyond retries; every input gets one verdict.
        if matches!(candidate, Candidate::Invalid(_)) {
            let touched = actions.iter().any(|a| matches!(a,
                RevisionAction::Create { .. } | RevisionAction::NoteIdentical { .. }));
            prop_assert!(!touched);
        }
        let verdicts = actions.iter().filter(|a| matches!(a, RevisionAction::SetAccepted { .. })).count();
        prop_assert_eq!(verdicts, inputs.len());
    }
}
