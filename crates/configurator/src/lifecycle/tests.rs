//! Every decision of [`decide`] on its own, and properties over random revisions.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use netrollout_api::{ACCEPTED_CONDITION, RevisionPhase, Snapshot};
use netrollout_render::{Invalid, Problem, Revision};
use netrollout_rollout::Timestamp;
use proptest::prelude::*;

use super::*;
use crate::convert;

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
        conditions: vec![],
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
    Candidate::Valid {
        revision: Revision {
            hash: hash.into(),
            name: name.into(),
            size: 42,
        },
        snapshot: Snapshot::default(),
    }
}

/// An input whose status already carries `verdict` at generation 1.
fn showing(kind: InputKind, name: &str, verdict: &Verdict, since: Time) -> InputObject {
    let mut i = input(kind, name);
    i.conditions = vec![Condition {
        type_: ACCEPTED_CONDITION.into(),
        status: verdict.status().into(),
        reason: verdict.reason.clone(),
        message: verdict.message.clone(),
        observed_generation: Some(1),
        last_transition_time: since,
    }];
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

#[test]
fn no_inputs_and_no_revisions_decide_nothing() {
    assert_eq!(decide(&[], &[], &valid("ncr-e", "sha256:e"), NOW), vec![]);
}

#[test]
fn new_content_creates_a_revision_above_every_sequence_and_accepts_every_input() {
    let revisions = [
        rev("ncr-1", "sha256:1", 3, Some(RevisionPhase::Succeeded)),
        rev("ncr-2", "sha256:2", 7, Some(RevisionPhase::Failed)),
    ];
    let actions = decide(&inputs(), &revisions, &valid("ncr-3", "sha256:3"), NOW);
    assert_eq!(
        writes(&actions),
        [&RevisionAction::Create {
            name: "ncr-3".into(),
            hash: "sha256:3".into(),
            size: 42,
            sequence: 8,
            snapshot: Snapshot::default(),
        }]
    );
    all_accepted(&actions, "Accepted", true);
    let RevisionAction::SetAccepted { update, .. } = &actions[1] else {
        panic!("{actions:#?}")
    };
    assert_eq!(update.verdict.revision.as_deref(), Some("ncr-3"));
    assert_eq!(
        update.verdict.message,
        "included in NetworkConfigRevision ncr-3"
    );
    assert_eq!(
        update.conditions[0].last_transition_time,
        convert::to_time(NOW)
    );
}

#[test]
fn no_inputs_with_revisions_left_create_the_empty_revision() {
    let revisions = [rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded))];
    let actions = decide(&[], &revisions, &valid("ncr-e", "sha256:e"), NOW);
    assert!(
        matches!(&actions[..], [RevisionAction::Create { name, sequence: 2, .. }] if name == "ncr-e"),
        "{actions:#?}"
    );
}

#[test]
fn the_newest_revision_of_the_inputs_is_reused_without_a_write() {
    let revisions = [
        rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Superseded)),
        rev("ncr-2", "sha256:2", 2, Some(RevisionPhase::Progressing)),
    ];
    let actions = decide(&inputs(), &revisions, &valid("ncr-2", "sha256:2"), NOW);
    assert!(writes(&actions).is_empty(), "{actions:#?}");
    all_accepted(&actions, "Accepted", true);
}

#[test]
fn an_older_revision_of_the_inputs_gets_its_sequence_raised() {
    let revisions = [
        rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded)),
        rev("ncr-2", "sha256:2", 5, Some(RevisionPhase::Progressing)),
    ];
    let actions = decide(&inputs(), &revisions, &valid("ncr-1", "sha256:1"), NOW);
    assert_eq!(
        writes(&actions),
        [&RevisionAction::RaiseSequence {
            revision: "ncr-1".into(),
            from: 1,
            to: 6,
            reason: RaiseReason::InputsEqualAgain,
            retried: None,
        }]
    );
    all_accepted(&actions, "Accepted", true);
}

#[test]
fn a_terminating_revision_of_the_inputs_is_waited_for_and_never_adopted() {
    let mut old = rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded));
    old.deleting = true;
    let actions = decide(&inputs(), &[old], &valid("ncr-1", "sha256:1"), NOW);
    assert_eq!(
        writes(&actions),
        [&RevisionAction::WaitForDeletion {
            revision: "ncr-1".into()
        }]
    );
    all_accepted(&actions, "WaitingForDeletion", false);
}

#[test]
fn a_name_taken_by_other_content_is_reported_and_never_overwritten() {
    let revisions = [rev(
        "ncr-1",
        "sha256:other",
        1,
        Some(RevisionPhase::Succeeded),
    )];
    let actions = decide(&inputs(), &revisions, &valid("ncr-1", "sha256:1"), NOW);
    assert_eq!(
        writes(&actions),
        [&RevisionAction::ReportClash {
            revision: "ncr-1".into(),
            existing: "sha256:other".into(),
            wanted: "sha256:1".into(),
        }]
    );
    all_accepted(&actions, "NameClash", false);
    let RevisionAction::SetAccepted { update, .. } = &actions[1] else {
        panic!("{actions:#?}")
    };
    assert!(
        update.verdict.message.contains("never overwritten"),
        "{}",
        update.verdict.message
    );
}

#[test]
fn content_identical_to_a_failed_revision_is_refused_until_a_person_retries() {
    let revisions = [
        rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded)),
        rev("ncr-2", "sha256:2", 2, Some(RevisionPhase::Failed)),
    ];
    let actions = decide(&inputs(), &revisions, &valid("ncr-2", "sha256:2"), NOW);
    let [RevisionAction::NoteIdentical { revision, message }] = &writes(&actions)[..] else {
        panic!("{actions:#?}")
    };
    assert_eq!(revision, "ncr-2");
    assert!(
        message.contains("kubectl netrollout retry ncr-2"),
        "{message}"
    );
    all_accepted(&actions, "IdenticalToFailedRevision", false);
}

#[test]
fn a_retried_failed_revision_is_cleared_and_raised_and_then_accepted_without_a_second_raise() {
    let mut failed = rev("ncr-2", "sha256:2", 2, Some(RevisionPhase::Failed));
    failed.retry = Some("try-1".into());
    let revisions = [
        failed,
        rev("ncr-3", "sha256:3", 3, Some(RevisionPhase::Succeeded)),
    ];
    let actions = decide(&inputs(), &revisions, &valid("ncr-2", "sha256:2"), NOW);
    assert_eq!(
        writes(&actions),
        [
            &RevisionAction::ClearFailed {
                revision: "ncr-2".into()
            },
            &RevisionAction::RaiseSequence {
                revision: "ncr-2".into(),
                from: 2,
                to: 4,
                reason: RaiseReason::Retried,
                retried: Some("try-1".into()),
            },
        ]
    );
    all_accepted(&actions, "Accepted", true);
}

#[test]
fn a_retry_without_a_value_is_recorded_with_the_time() {
    let mut blocked = rev("ncr-2", "sha256:2", 2, Some(RevisionPhase::Blocked));
    blocked.retry = Some(String::new());
    let actions = decide(&[], &[blocked], &valid("ncr-e", "sha256:e"), NOW);
    assert!(
        actions.iter().any(|a| matches!(a,
            RevisionAction::RaiseSequence { retried: Some(v), .. } if *v == convert::format_ts(NOW))),
        "{actions:#?}"
    );
}

#[test]
fn a_retry_of_a_revision_that_is_not_failed_is_dropped_and_one_being_deleted_is_left() {
    let mut ok = rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded));
    ok.retry = Some("x".into());
    let mut deleting = rev("ncr-2", "sha256:2", 2, Some(RevisionPhase::Failed));
    deleting.retry = Some("x".into());
    deleting.deleting = true;
    let actions = decide(&inputs(), &[ok, deleting], &valid("ncr-1", "sha256:1"), NOW);
    assert_eq!(
        writes(&actions),
        [
            &RevisionAction::DropRetry {
                revision: "ncr-1".into()
            },
            &RevisionAction::RaiseSequence {
                revision: "ncr-1".into(),
                from: 1,
                to: 3,
                reason: RaiseReason::InputsEqualAgain,
                retried: None,
            },
        ]
    );
}

#[test]
fn two_retries_in_one_pass_get_distinct_sequences() {
    let mut a = rev("ncr-a", "sha256:a", 1, Some(RevisionPhase::Failed));
    a.retry = Some("1".into());
    let mut b = rev("ncr-b", "sha256:b", 2, Some(RevisionPhase::Failed));
    b.retry = Some("1".into());
    let actions = decide(&[], &[a, b], &valid("ncr-a", "sha256:a"), NOW);
    let raised: Vec<(&str, i64)> = actions
        .iter()
        .filter_map(|x| match x {
            RevisionAction::RaiseSequence { revision, to, .. } => Some((revision.as_str(), *to)),
            _ => None,
        })
        .collect();
    // The inputs equal ncr-a, which the retries left below ncr-b: the inputs win, so it is
    // raised once more, above it.
    assert_eq!(raised, [("ncr-a", 3), ("ncr-b", 4), ("ncr-a", 5)]);
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, RevisionAction::Create { .. }))
    );
}

#[test]
fn invalid_inputs_get_their_own_problems_and_the_others_are_told_why_nothing_rolls_out() {
    let invalid = Invalid {
        problems: vec![Problem {
            kind: "Layer2NetworkConfiguration",
            object: "l2-a".into(),
            field: "spec.vni".into(),
            message: "VNI 5 is used twice".into(),
        }],
    };
    let revisions = [rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded))];
    let actions = decide(&inputs(), &revisions, &Candidate::Invalid(invalid), NOW);
    assert!(writes(&actions).is_empty(), "{actions:#?}");
    let v = verdicts(&actions);
    assert_eq!(
        v,
        [
            ("vrf-a".into(), false, "OtherInputInvalid".into()),
            ("l2-a".into(), false, "Invalid".into()),
            ("taas-a".into(), false, "OtherInputInvalid".into()),
        ]
    );
    let RevisionAction::SetAccepted { update, .. } = &actions[1] else {
        panic!("{actions:#?}")
    };
    assert_eq!(update.verdict.message, "spec.vni: VNI 5 is used twice");
}

#[test]
fn an_input_whose_status_already_says_the_verdict_is_not_written_again() {
    let verdict = Verdict::accepted("ncr-1");
    let since = convert::to_time(Timestamp::from_millis(1_000));
    let shown = vec![showing(InputKind::Vrf, "vrf-a", &verdict, since.clone())];
    let revisions = [rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded))];
    let candidate = valid("ncr-1", "sha256:1");
    assert_eq!(decide(&shown, &revisions, &candidate, NOW), vec![]);

    // A new generation, or a missing status.revision, is written again; the transition time
    // stays while the status stays True.
    let mut newer = shown.clone();
    newer[0].generation = Some(2);
    let mut no_rev = shown.clone();
    no_rev[0].revision = None;
    for changed in [newer, no_rev] {
        let actions = decide(&changed, &revisions, &candidate, NOW);
        let [RevisionAction::SetAccepted { update, .. }] = &actions[..] else {
            panic!("{actions:#?}")
        };
        assert_eq!(update.conditions.len(), 1);
        assert_eq!(update.conditions[0].last_transition_time, since);
        assert_eq!(
            update.conditions[0].observed_generation,
            changed[0].generation
        );
    }
}

#[test]
fn a_flip_of_the_status_moves_the_transition_time_and_other_conditions_stay() {
    let since = convert::to_time(Timestamp::from_millis(1_000));
    let mut shown = showing(InputKind::Vrf, "vrf-a", &Verdict::accepted("ncr-1"), since);
    let other = Condition {
        type_: "Other".into(),
        status: "True".into(),
        reason: "R".into(),
        message: "m".into(),
        observed_generation: None,
        last_transition_time: convert::to_time(Timestamp::from_millis(5)),
    };
    shown.conditions.insert(0, other.clone());
    let mut old = rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded));
    old.deleting = true;
    let actions = decide(&[shown], &[old], &valid("ncr-1", "sha256:1"), NOW);
    let RevisionAction::SetAccepted { update, .. } = &actions[1] else {
        panic!("{actions:#?}")
    };
    assert_eq!(update.conditions[0], other);
    assert_eq!(update.conditions[1].status, "False");
    assert_eq!(
        update.conditions[1].last_transition_time,
        convert::to_time(NOW)
    );
}

// --- properties -----------------------------------------------------------------------------

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
        let mut seen = std::collections::HashSet::new();
        v.retain(|r| seen.insert(r.name.clone()));
        v
    })
}

fn arb_candidate() -> impl Strategy<Value = Candidate> {
    prop_oneof![
        4 => (0..6usize, 0..3usize).prop_map(|(n, h)| valid(&format!("ncr-{n}"), &format!("sha256:{h}"))),
        1 => Just(Candidate::Invalid(Invalid {
            problems: vec![Problem {
                kind: "VRFRouteConfiguration",
                object: "vrf-a".into(),
                field: "spec.vrf".into(),
                message: "bad".into(),
            }],
        })),
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
        let mut created = std::collections::HashSet::new();
        let mut sequences: std::collections::HashMap<&str, i64> =
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
