//! The retry annotation: a Failed or Blocked revision is cleared and raised; on any other
//! revision the annotation is dropped.

use super::*;

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
                retried: Some(Retried::Value("try-1".into())),
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
            RevisionAction::RaiseSequence { retried: Some(Retried::At(t)), .. } if *t == NOW)),
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
