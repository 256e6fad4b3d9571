//! A restore that fails or is cut short: the revision's failure is on disk before the restore
//! begins, so it stays Failed and is never applied again until a person asks (contract, agent
//! rule 5), whatever happens to the restore.

use netrollout_api::NodePhase;

use super::configs::{config, frr_text};
use super::harness::{CrashMode, End, Node, Probes};
use super::rules::at_rev1;
use crate::reason::FailureReason;
use crate::report::Report;
use crate::txn::{CoreError, Effect, Purpose};

/// A node at rev-1 whose probes fail after any change.
fn failing_probes() -> Node {
    let mut node = at_rev1();
    node.probes = Probes {
        before: vec![],
        after: Box::new(|_| vec!["tcp 10.9.9.9:443"]),
    };
    node
}

/// Whether the revision was applied (kernel or FRR) since `effects` was last cleared.
fn applied(node: &Node) -> bool {
    node.effects.iter().any(|e| {
        matches!(
            e,
            Effect::ApplyKernel {
                purpose: Purpose::Apply,
                ..
            } | Effect::ApplyFrr {
                purpose: Purpose::Apply,
                ..
            }
        )
    })
}

fn restored(node: &Node) -> bool {
    node.effects.iter().any(|e| {
        matches!(
            e,
            Effect::ApplyKernel {
                purpose: Purpose::Restore,
                ..
            }
        )
    })
}

/// The kernel and FRR run rev-1 again and the last report says rev-2 Failed (its probes) and
/// was restored; returns that report.
fn back_on_rev_1_and_rev_2_failed(node: &Node) -> &Report {
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 20])));
    let last = node.last();
    assert_eq!(
        (last.phase, last.reason.as_str()),
        (Some(NodePhase::Failed), "ProbeFailed")
    );
    assert!(
        last.message.ends_with("; restored last-known-good rev-1"),
        "{}",
        last.message
    );
    last
}

#[test]
fn the_failure_is_on_disk_before_the_restore_begins() {
    let mut node = failing_probes();
    node.see_rev("rev-2", &[10, 30], None);
    let written = node
        .effects
        .iter()
        .position(
            |e| matches!(e, Effect::WriteFailuresBeforeRestore(f) if f.revisions.contains_key("rev-2")),
        )
        .expect("the failure was written");
    let restore = node
        .effects
        .iter()
        .position(|e| {
            matches!(
                e,
                Effect::ApplyFrr {
                    purpose: Purpose::Restore,
                    ..
                }
            )
        })
        .expect("the restore ran");
    assert!(written < restore, "{:#?}", node.effects);
}

#[test]
fn a_restore_the_kernel_refuses_leaves_the_revision_failed_and_it_is_never_applied_again() {
    let mut node = failing_probes();
    node.kernel_restore_fails = true;
    let end = node.see_rev("rev-2", &[10, 30], None);
    assert!(
        matches!(&end, End::Stopped(CoreError::Restore(e)) if e.contains("EBUSY")),
        "{end:?}"
    );
    let disk = node.disk.state().unwrap();
    let failure = &disk.failures.revisions["rev-2"];
    assert_eq!(failure.reason, FailureReason::ProbeFailed);
    assert!(
        failure
            .message
            .ends_with("; restoring last-known-good rev-1"),
        "{}",
        failure.message
    );
    assert!(
        disk.journal.is_some(),
        "the journal says the restore is not done"
    );
    // The agent tries again (every 5 s) while the kernel still refuses: it restores, never
    // applies rev-2.
    for _ in 0..3 {
        node.effects.clear();
        let end = node.see_rev("rev-2", &[10, 30], None);
        assert!(
            matches!(end, End::Stopped(CoreError::Restore(_))),
            "{end:?}"
        );
        assert!(!applied(&node) && restored(&node), "{:#?}", node.effects);
    }
    // The kernel takes the restore: rev-1 runs again, rev-2 is reported Failed with its reason.
    node.kernel_restore_fails = false;
    node.effects.clear();
    assert_eq!(node.see_rev("rev-2", &[10, 30], None), End::Done);
    assert!(!applied(&node) && restored(&node), "{:#?}", node.effects);
    let last = back_on_rev_1_and_rev_2_failed(&node);
    assert!(
        last.message
            .starts_with("probes failed after applying rev-2: tcp 10.9.9.9:443"),
        "{}",
        last.message
    );
    let disk = node.disk.state().unwrap();
    assert_eq!(disk.journal, None);
    assert_eq!(disk.failures.revisions["rev-2"].message, last.message);
    // Seen again: nothing is touched.
    node.effects.clear();
    assert_eq!(node.see_rev("rev-2", &[10, 30], None), End::Done);
    assert!(!applied(&node) && !restored(&node), "{:#?}", node.effects);
    // A person asks: it is tried again.
    node.see_rev("rev-2", &[10, 30], Some("1"));
    assert!(applied(&node));
}

#[test]
fn a_restore_frr_refuses_then_a_restart_finishes_the_restore_and_never_applies_the_revision() {
    let mut node = failing_probes();
    node.frr_restore_fails = true;
    let end = node.see_rev("rev-2", &[10, 30], None);
    assert!(
        matches!(&end, End::Stopped(CoreError::Restore(e)) if e.starts_with("FRR: ")),
        "{end:?}"
    );
    // The agent restarts (its pod was deleted); FRR answers again.
    node.disk = node.disk.crash(CrashMode::Process);
    node.frr_restore_fails = false;
    node.effects.clear();
    assert_eq!(node.start(), Ok(End::Done));
    assert_eq!(node.see_rev("rev-2", &[10, 30], None), End::Done);
    assert!(!applied(&node) && restored(&node), "{:#?}", node.effects);
    back_on_rev_1_and_rev_2_failed(&node);
    assert_eq!(node.disk.state().unwrap().journal, None);
}

#[test]
fn a_disk_that_refuses_the_failure_record_does_not_hold_up_the_restore() {
    let mut node = failing_probes();
    node.refuse_writes = vec![crate::state::FAILED_FILE];
    let end = node.see_rev("rev-2", &[10, 30], None);
    // Restored all the same; only the final record is refused (StateUnavailable).
    assert!(
        matches!(&end, End::Refused(e) if e.contains("failed.json")),
        "{end:?}"
    );
    assert!(restored(&node));
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 20])));
}
