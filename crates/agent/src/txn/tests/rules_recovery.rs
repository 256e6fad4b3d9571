//! The contract's agent rules 6 and 7: crash recovery from the journal, corrupt state.

use netrollout_api::NodePhase;

use super::configs::{config, frr_text};
use super::harness::{CrashMode, Crashed, End, Node};
use super::rules::at_rev1;
use crate::state::{self, JOURNAL_FILE, Journal};
use crate::txn::{Effect, Event, Purpose};

/// Runs rev-2 on a node at rev-1 and kills the agent when the kernel has taken part of it.
fn crash_mid_kernel(node: &mut Node) {
    let spec = node.spec("rev-2", &config(&[10, 30, 40]), None);
    node.points = 0;
    // Point 1 is the first effect; a few more are inside the kernel apply.
    let mut at = 1;
    loop {
        node.crash_at = Some(at);
        let mut probe = node_clone(node);
        if probe.see(spec.clone()) == Err(Crashed)
            && !probe.kernel_runs(&config(&[10, 20]))
            && !probe.kernel_runs(&config(&[10, 30, 40]))
        {
            break;
        }
        at += 1;
        assert!(at < 200, "no crash point inside the kernel apply");
    }
    node.points = 0;
    assert_eq!(node.see(spec), Err(Crashed));
    node.crash_at = None;
    node.disk = node.disk.crash(CrashMode::Process);
}

/// The node's state, for a trial run.
fn node_clone(node: &Node) -> Node {
    let mut n = Node::new();
    n.kernel = node.kernel.clone();
    n.frr = node.frr.clone();
    n.disk = node.disk.clone();
    n.now = node.now;
    n.crash_at = node.crash_at;
    n
}

#[test]
fn a_journal_on_start_restores_last_known_good_first_then_tries_the_revision_once_more() {
    let mut node = at_rev1();
    crash_mid_kernel(&mut node);
    node.effects.clear();
    assert_eq!(node.start(), Ok(End::Done));
    // Restored: FRR, then the kernel, before anything else.
    assert!(matches!(
        node.effects[0],
        Effect::ApplyFrr {
            purpose: Purpose::Restore,
            ..
        }
    ));
    assert!(matches!(
        node.effects[1],
        Effect::ApplyKernel {
            purpose: Purpose::Restore,
            ..
        }
    ));
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 20])));
    // The journal stays: the next try is attempt 2.
    let journal = node.disk.state().unwrap().journal.unwrap();
    assert_eq!((journal.revision.as_str(), journal.attempt), ("rev-2", 1));
    node.see_rev("rev-2", &[10, 30, 40], None);
    assert!(
        node.reports
            .iter()
            .any(|r| r.message == "applying rev-2 (attempt 2)")
    );
    assert_eq!(node.last().phase, Some(NodePhase::Provisioned));
    assert!(node.kernel_runs(&config(&[10, 30, 40])));
}

#[test]
fn a_second_crash_on_the_same_revision_reports_it_failed_and_it_cannot_loop() {
    let mut node = at_rev1();
    crash_mid_kernel(&mut node);
    node.start().unwrap();
    crash_mid_kernel(&mut node);
    node.effects.clear();
    node.start().unwrap();
    assert!(node.kernel_runs(&config(&[10, 20])));
    let last = node.last();
    assert_eq!(
        (last.phase, last.reason.as_str()),
        (Some(NodePhase::Failed), "AgentCrashed")
    );
    assert!(
        last.message.starts_with(
            "agent crashed while applying rev-2 (2 times); restored last-known-good rev-1"
        ),
        "{}",
        last.message
    );
    let disk = node.disk.state().unwrap();
    assert_eq!(disk.journal, None);
    // Seen again: not tried a third time.
    node.effects.clear();
    node.see_rev("rev-2", &[10, 30, 40], None);
    assert!(!node.applied_kernel());
    assert_eq!(node.last().reason, "AgentCrashed");
}

#[test]
fn a_journal_of_the_committed_revision_is_only_removed() {
    let mut node = at_rev1();
    let journal = Journal {
        revision: "rev-1".into(),
        attempt: 1,
        retry: None,
    };
    let bytes = state::encode(&journal).unwrap();
    let mut disk = node.disk.state().unwrap();
    disk.journal = Some(journal);
    node.effects.clear();
    node.drive(Event::Started(disk)).unwrap();
    assert!(node.effects.contains(&Effect::ClearJournal));
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert!(!bytes.is_empty());
}

#[test]
fn a_start_without_a_journal_changes_nothing() {
    let mut node = at_rev1();
    node.start().unwrap();
    assert!(node.effects.is_empty(), "{:#?}", node.effects);
}

#[test]
fn a_torn_journal_is_detected_and_never_applied() {
    let mut node = at_rev1();
    let bytes = state::encode(&Journal {
        revision: "rev-9".into(),
        attempt: 1,
        retry: None,
    })
    .unwrap();
    let mut torn = bytes.clone();
    torn.truncate(bytes.len() - 4);
    assert!(
        state::decode::<Journal>(&torn)
            .unwrap_err()
            .contains("checksum mismatch")
    );
    // The model disk reads it like the store does: corrupt, with the file named.
    node.disk = {
        let mut d = node.disk.clone();
        let steps = state::write_steps(JOURNAL_FILE, torn);
        for s in &steps {
            d_step(&mut d, s);
        }
        d
    };
    let err = node.disk.state().unwrap_err();
    assert!(err.contains("journal.json is corrupt"), "{err}");
}

fn d_step(d: &mut super::harness::ModelDisk, s: &state::DiskStep) {
    d.apply(s);
}
