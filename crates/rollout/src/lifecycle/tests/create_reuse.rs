//! Create, reuse, raise, wait for a terminating revision, name clash, identical to Failed.

use super::*;

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
    assert_eq!(update.since, Since::Now(NOW));
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
    assert!(
        message.contains("annotate it netrollout.io/retry"),
        "{message}"
    );
    all_accepted(&actions, "IdenticalToFailedRevision", false);
}
