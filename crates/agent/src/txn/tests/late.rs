//! No silent wait: a kernel, FRR, probes or a disk that answer late or never. Each step past
//! its slow threshold is reported (what, since when); past its deadline it is an error of that
//! step, handled by the transaction's rules; the work a part answers late lands before the
//! next step on that part (the driver's lane), so nothing is left half-applied.

use netrollout_api::NodePhase;

use super::configs::{config, frr_text};
use super::harness::End;
use super::rules::at_rev1;
use crate::state::JOURNAL_FILE;
use crate::txn::{CoreError, Effect, Metric, PROBE_ROUND, Part, Purpose};

fn waiting(node: &super::harness::Node, reason: &str) -> crate::report::Report {
    node.reports
        .iter()
        .find(|r| r.reason == reason)
        .unwrap_or_else(|| panic!("no {reason} report in {:#?}", node.reports))
        .clone()
}

#[test]
fn a_kernel_that_answers_the_apply_late_is_reported_fails_the_step_and_is_restored_whole() {
    let mut node = at_rev1();
    node.kernel_late_at = Some(2);
    assert_eq!(node.see_rev("rev-2", &[10, 30, 40], None), End::Done);
    // Said while it waited: which part, since when; the revision still Provisioning.
    let w = waiting(&node, "WaitingForKernel");
    assert_eq!(w.phase, Some(NodePhase::Provisioning));
    assert_eq!(w.revision.as_deref(), Some("rev-2"));
    assert!(
        w.message
            .starts_with("applying rev-2 (attempt 1): waiting for the kernel (netlink) since 20"),
        "{}",
        w.message
    );
    assert!(node.metrics.contains(&Metric::Slow(Part::Kernel)));
    assert!(node.metrics.contains(&Metric::TimedOut(Part::Kernel)));
    // Past the deadline: the apply failed; the ops the kernel did late came before the
    // restore, which left the old config whole.
    let last = node.last();
    assert_eq!(last.phase, Some(NodePhase::Failed));
    assert_eq!(last.reason, "ApplyFailed");
    assert!(
        last.message
            .contains("applying rev-2 failed: the kernel did not answer within 120 s"),
        "{}",
        last.message
    );
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 20])));
    assert_eq!(node.disk.state().unwrap().journal, None);
}

#[test]
fn a_kernel_that_never_answers_keeps_the_journal_and_the_restore_ends_once_it_answers() {
    let mut node = at_rev1();
    node.kernel_late_at = Some(1);
    node.kernel_never = true;
    let end = node.see_rev("rev-2", &[10, 30, 40], None);
    assert!(
        matches!(&end, End::Stopped(CoreError::Restore(e)) if e.contains("did not answer")),
        "{end:?}"
    );
    // Not restored yet: the journal stays, the failure is on disk before the restore.
    let disk = node.disk.state().unwrap();
    assert!(disk.journal.is_some());
    assert!(disk.failures.revisions.contains_key("rev-2"));
    // The agent tries again every 5 s; still no answer: still only restoring.
    node.effects.clear();
    let end = node.see_rev("rev-2", &[10, 30, 40], None);
    assert!(
        matches!(end, End::Stopped(CoreError::Restore(_))),
        "{end:?}"
    );
    // The kernel answers again: what it owed lands first, then the restore; rev-2 is never
    // applied again.
    node.kernel_never = false;
    node.effects.clear();
    assert_eq!(node.see_rev("rev-2", &[10, 30, 40], None), End::Done);
    assert!(!node.effects.iter().any(|e| matches!(
        e,
        Effect::ApplyKernel {
            purpose: Purpose::Apply,
            ..
        }
    )));
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.phase(), Some(NodePhase::Failed));
    assert_eq!(node.disk.state().unwrap().journal, None);
}

#[test]
fn frr_that_answers_the_apply_late_fails_the_step_and_its_late_load_is_restored() {
    let mut node = at_rev1();
    node.frr_late = true;
    assert_eq!(node.see_rev("rev-2", &[10, 30], None), End::Done);
    let w = waiting(&node, "WaitingForFrr");
    assert!(w.message.contains("waiting for FRR since"), "{}", w.message);
    let last = node.last();
    assert_eq!(last.reason, "ApplyFailed");
    assert!(last.message.contains("FRR did not answer within 120 s"));
    // FRR loaded rev-2's text late, before the restore loaded the old one.
    let n = node.frr.loads.len();
    assert_eq!(node.frr.loads[n - 2], frr_text(&config(&[10, 30])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 20])));
    assert!(node.kernel_runs(&config(&[10, 20])));
}

#[test]
fn probes_that_do_not_answer_after_the_change_fail_it_at_the_probe_timeout() {
    let mut node = at_rev1();
    node.probes_late = vec!["after"];
    assert_eq!(node.see_rev("rev-2", &[10, 30], None), End::Done);
    let last = node.last();
    assert_eq!(last.reason, "ProbeFailed");
    assert!(
        last.message.contains(&format!(
            "{PROBE_ROUND}: the round did not finish within 120 s"
        )),
        "{}",
        last.message
    );
    assert!(node.kernel_runs(&config(&[10, 20])));
}

#[test]
fn a_part_that_does_not_answer_before_the_change_changes_nothing_and_no_verdict_is_given() {
    for (what, part) in [("render", Part::Frr), ("before", Part::Probes)] {
        let mut node = at_rev1();
        match what {
            "render" => node.render_late = true,
            _ => node.probes_late = vec!["before"],
        }
        let end = node.see_rev("rev-2", &[10, 30], None);
        assert!(
            matches!(&end, End::Stopped(CoreError::Unanswered { part: p, .. }) if *p == part),
            "{what}: {end:?}"
        );
        assert!(!node.applied_kernel(), "{what}");
        assert!(node.kernel_runs(&config(&[10, 20])));
        assert!(
            !node
                .disk
                .state()
                .unwrap()
                .failures
                .revisions
                .contains_key("rev-2")
        );
        // Once it answers, the same attempt goes through.
        node.render_late = false;
        node.probes_late.clear();
        assert_eq!(node.see_rev("rev-2", &[10, 30], None), End::Done);
        assert_eq!(node.phase(), Some(NodePhase::Provisioned), "{what}");
        assert!(node.last().message.starts_with("applied"), "{what}");
        let attempts: Vec<u32> = (node.effects.iter())
            .filter_map(|e| match e {
                Effect::WriteJournal(j) => Some(j.attempt),
                _ => None,
            })
            .collect();
        assert!(attempts.iter().all(|&a| a == 1), "{what}: {attempts:?}");
    }
}

#[test]
fn a_journal_the_disk_writes_late_lands_before_the_next_write_and_the_retry_commits() {
    let mut node = at_rev1();
    node.disk_late = Some(JOURNAL_FILE);
    let end = node.see_rev("rev-2", &[10, 30], None);
    assert!(
        matches!(&end, End::Refused(e) if e.contains("did not finish `write .journal.json.tmp`")),
        "{end:?}"
    );
    assert!(!node.applied_kernel());
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.disk.state().unwrap().journal, None, "not renamed yet");
    assert_eq!(node.see_rev("rev-2", &[10, 30], None), End::Done);
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
    assert!(node.kernel_runs(&config(&[10, 30])));
    assert_eq!(node.disk.state().unwrap().journal, None);
}

#[test]
fn a_backup_the_disk_writes_late_at_the_commit_is_the_commit_once_it_lands() {
    let mut node = at_rev1();
    node.disk_late = Some(crate::state::LKG_FILE);
    let end = node.see_rev("rev-2", &[10, 30], None);
    assert!(matches!(&end, End::Refused(_)), "{end:?}");
    assert_ne!(node.phase(), Some(NodePhase::Provisioned));
    // The next try: the late backup lands first (it reads rev-2), so only the journal's
    // removal is left; nothing is applied again.
    node.effects.clear();
    let spec = node.spec("rev-2", &config(&[10, 30]), None);
    assert_eq!(node.see(spec), Ok(End::Done));
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
    assert!(node.kernel_runs(&config(&[10, 30])));
    let disk = node.disk.state().unwrap();
    assert_eq!(disk.journal, None);
    assert_eq!(disk.lkg.revision.as_deref(), Some("rev-2"));
}

#[test]
fn a_restart_that_waits_on_the_kernel_reports_it_without_a_revision() {
    let mut node = at_rev1();
    node.kernel_late_at = Some(1);
    node.kernel_never = true;
    let _ = node.see_rev("rev-2", &[10, 30, 40], None);
    node.reports.clear();
    // A restart while the kernel still does not answer: recovery waits on it.
    let end = node.start().unwrap();
    assert!(
        matches!(end, End::Stopped(CoreError::Restore(_))),
        "{end:?}"
    );
    let w = waiting(&node, "WaitingForKernel");
    assert_eq!((w.revision, w.phase), (None, None));
    assert!(
        w.message
            .starts_with("recovering: restoring last-known-good rev-1: waiting for the kernel"),
        "{}",
        w.message
    );
}
