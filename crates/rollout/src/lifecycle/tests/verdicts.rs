//! The `Accepted` verdicts: invalid inputs, inputs too large for one revision, and when a
//! verdict is written again (and when its transition time moves).

use super::*;

#[test]
fn invalid_inputs_get_their_own_problems_and_the_others_are_told_why_nothing_rolls_out() {
    let invalid = invalid(vec![problem(
        "Layer2NetworkConfiguration",
        "l2-a",
        "spec.vni",
        "VNI 5 is used twice",
    )]);
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
    let RevisionAction::SetAccepted { update, .. } = &actions[0] else {
        panic!("{actions:#?}")
    };
    assert_eq!(
        update.verdict.message,
        "not rolled out because Layer2NetworkConfiguration \"l2-a\" is invalid; fix or delete \
         it. 1 problem(s) in the inputs:\n- Layer2NetworkConfiguration \"l2-a\": spec.vni: VNI 5 \
         is used twice"
    );
}

#[test]
fn inputs_too_large_for_one_revision_are_told_so_and_the_limit_is_named() {
    let invalid = invalid(vec![problem(
        "NetworkConfigRevision",
        "ncr-0123",
        "spec.snapshot",
        "the merged inputs are 1700000 bytes, over the API server's limit of 1572864; remove \
         or merge inputs",
    )]);
    let input = InputRef {
        kind: InputKind::Vrf,
        name: "vrf-a".into(),
    };
    let v = Verdict::of_invalid(&input, &invalid);
    assert!(!v.accepted);
    assert_eq!(v.reason, "TooLarge");
    for needle in [
        "do not fit in one NetworkConfigRevision",
        "1700000 bytes",
        "at most 1572864 bytes (1.5 MiB, etcd's default --max-request-bytes)",
        "of which 1310720 may be the inputs",
    ] {
        assert!(
            v.message.contains(needle),
            "{needle:?} not in {:?}",
            v.message
        );
    }
    assert!(
        !v.message.contains("other inputs are invalid"),
        "{}",
        v.message
    );
}

#[test]
fn an_input_whose_status_already_says_the_verdict_is_not_written_again() {
    let verdict = Verdict::accepted("ncr-1");
    let shown = vec![showing(InputKind::Vrf, "vrf-a", &verdict)];
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
        assert_eq!(update.since, Since::Unchanged);
        assert_eq!(update.generation, changed[0].generation);
        assert_eq!(update.verdict, verdict);
    }
}

#[test]
fn a_flip_of_the_status_moves_the_transition_time() {
    let shown = showing(InputKind::Vrf, "vrf-a", &Verdict::accepted("ncr-1"));
    let mut old = rev("ncr-1", "sha256:1", 1, Some(RevisionPhase::Succeeded));
    old.deleting = true;
    let actions = decide(&[shown], &[old], &valid("ncr-1", "sha256:1"), NOW);
    let RevisionAction::SetAccepted { update, .. } = &actions[1] else {
        panic!("{actions:#?}")
    };
    assert_eq!(update.verdict.status(), "False");
    assert_eq!(update.since, Since::Now(NOW));
}

#[test]
fn a_changed_message_with_the_same_status_keeps_the_transition_time() {
    let shown = showing(InputKind::Vrf, "vrf-a", &Verdict::accepted("ncr-1"));
    let revisions = [rev("ncr-2", "sha256:2", 2, Some(RevisionPhase::Succeeded))];
    let actions = decide(&[shown], &revisions, &valid("ncr-2", "sha256:2"), NOW);
    let [RevisionAction::SetAccepted { update, .. }] = &actions[..] else {
        panic!("{actions:#?}")
    };
    assert_eq!(update.verdict.revision.as_deref(), Some("ncr-2"));
    assert_eq!(update.since, Since::Unchanged);
}
