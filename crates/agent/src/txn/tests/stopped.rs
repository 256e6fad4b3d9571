//! A transaction the driver ends with an error (the state directory refuses the commit) is no
//! crash: its retry keeps the attempt's number, so a restart afterwards does not report the
//! revision `AgentCrashed`; two real crashes still do.

use netrollout_api::NodePhase;

use super::configs::config;
use super::harness::{CrashMode, Crashed, End, Node};
use super::rules::at_rev1;
use crate::state::LKG_FILE;
use crate::txn::{Effect, Purpose};

/// Sees rev-2 (which passes its probes) on a disk too full for the new backup.
fn refused_at_commit(node: &mut Node) {
    node.refuse_writes = vec![LKG_FILE];
    let end = node.see_rev("rev-2", &[10, 30], None);
    node.refuse_writes.clear();
    assert!(
        matches!(&end, End::Refused(e) if e.contains(LKG_FILE)),
        "{end:?}"
    );
    assert_ne!(node.phase(), Some(NodePhase::Provisioned));
}

fn journal_attempt(node: &Node) -> Option<u32> {
    node.disk.state().unwrap().journal.map(|j| j.attempt)
}

/// The crash point right after the first op of rev-2's kernel step.
fn inside_the_kernel_step() -> u64 {
    for at in 1..100 {
        let mut dry = at_rev1();
        let spec = dry.spec("rev-2", &config(&[10, 30]), None);
        dry.points = 0;
        dry.crash_at = Some(at);
        assert_eq!(dry.see(spec), Err(Crashed));
        let in_kernel = matches!(
            dry.effects.last(),
            Some(Effect::ApplyKernel {
                purpose: Purpose::Apply,
                ..
            })
        );
        if in_kernel {
            return at + 1;
        }
    }
    panic!("no kernel step")
}

#[test]
fn a_commit_the_disk_refuses_is_retried_as_the_same_attempt_and_a_restart_is_no_second_crash() {
    let mut node = at_rev1();
    refused_at_commit(&mut node);
    assert_eq!(journal_attempt(&node), Some(1));
    // The agent tries again every 5 s: the same attempt, refused again.
    for _ in 0..3 {
        refused_at_commit(&mut node);
        assert_eq!(journal_attempt(&node), Some(1));
    }
    // A restart (for the journal, a first crash): restore, then retry once.
    node.disk = node.disk.crash(CrashMode::Process);
    assert_eq!(node.start(), Ok(End::Done));
    assert!(node.kernel_runs(&config(&[10, 20])));
    // Still refused after the restart: the reason stays the disk's, never AgentCrashed.
    for _ in 0..3 {
        refused_at_commit(&mut node);
        assert_eq!(journal_attempt(&node), Some(2));
    }
    let disk = node.disk.state().unwrap();
    assert!(disk.failures.revisions.is_empty(), "{:?}", disk.failures);
    // The directory takes writes again: committed.
    node.see_rev("rev-2", &[10, 30], None);
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
    assert_eq!(node.disk.state().unwrap().journal, None);
}

#[test]
fn two_real_crashes_between_refused_commits_still_report_agent_crashed() {
    let at = inside_the_kernel_step();
    let mut node = at_rev1();
    for crash in 1..=2 {
        refused_at_commit(&mut node);
        // Then the agent is killed inside the retry's kernel step.
        let spec = node.spec("rev-2", &config(&[10, 30]), None);
        node.points = 0;
        node.crash_at = Some(at);
        assert_eq!(node.see(spec), Err(Crashed), "crash {crash}");
        node.crash_at = None;
        node.disk = node.disk.crash(CrashMode::Process);
        assert_eq!(node.start(), Ok(End::Done));
    }
    let last = node.last();
    assert_eq!(
        (last.phase, last.reason.as_str()),
        (Some(NodePhase::Failed), "AgentCrashed")
    );
    assert!(node.kernel_runs(&config(&[10, 20])));
}
