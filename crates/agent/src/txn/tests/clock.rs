//! Clock jumps during the probe hold: the hold and the probe timeout are measured on the
//! monotonic clock (`Now::instant`), the status and failure times on the wall clock
//! (`Now::wall`). A wall-clock jump changes neither the hold's length nor its outcome; a timer
//! event whose instant lies before the hold started never commits early (the hold waits until
//! its whole length has passed since the probes first passed); one far after the hold or the
//! timeout ends the attempt at that round, never waiting again.

use std::time::Duration;

use jiff::SignedDuration;
use netrollout_api::NodePhase;

use super::configs::config;
use super::harness::{Node, Probes};
use super::rules::at_rev1;
use crate::txn::{Effect, Round};

const HOUR: Duration = Duration::from_secs(3600);

/// rev-2 seen by `node` with `jump` applied at each sleep; returns how long the transaction
/// took on the monotonic clock and the probe rounds after the change.
fn run(
    node: &mut Node,
    jump: impl FnMut(u32, &mut crate::txn::Now) + 'static,
) -> (Duration, usize) {
    node.on_sleep = Some(Box::new(jump));
    let t0 = node.now.instant;
    node.see_rev("rev-2", &[10, 30], None);
    let rounds = node
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::Probe(Round::After { .. })))
        .count();
    (node.now.instant.saturating_duration_since(t0), rounds)
}

fn wall_span(node: &Node) -> SignedDuration {
    let last = node.last();
    let (start, end) = (last.started_at.unwrap(), last.finished_at.unwrap());
    end.duration_since(start)
}

#[test]
fn a_wall_clock_jump_during_the_hold_changes_neither_its_length_nor_its_outcome() {
    let (steady, steady_rounds) = run(&mut at_rev1(), |_, _| {});
    for jump in [
        SignedDuration::from_hours(1),
        SignedDuration::from_hours(-1),
    ] {
        let mut node = at_rev1();
        let (took, rounds) = run(&mut node, move |n, now| {
            if n == 1 {
                now.wall = now.wall.checked_add(jump).unwrap();
            }
        });
        assert_eq!(node.phase(), Some(NodePhase::Provisioned), "jump {jump}");
        assert_eq!((took, rounds), (steady, steady_rounds), "jump {jump}");
        assert!(took >= node.settings.probe_hold);
        // The status times are the wall clock's: the jump shows between start and finish.
        assert_eq!(
            wall_span(&node),
            jump + SignedDuration::try_from(took).unwrap(),
            "jump {jump}"
        );
    }
}

#[test]
fn a_timer_event_from_before_the_hold_started_does_not_commit_early() {
    let mut node = at_rev1();
    let back = Duration::from_secs(10);
    // The probes passed at the first round; the next timer event is 9 s before it.
    let (_, rounds) = run(&mut node, move |n, now| {
        if n == 0 {
            now.instant -= back;
        }
    });
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
    // Rounds at -9 s ... +3 s: the whole hold passed after the probes first passed.
    let (hold, interval) = (node.settings.probe_hold, node.settings.probe_interval);
    let want = 1 + ((back + hold).as_secs() / interval.as_secs()) as usize;
    assert_eq!(rounds, want, "{:#?}", node.effects);
}

#[test]
fn a_timer_event_far_after_the_hold_commits_at_that_round() {
    let mut node = at_rev1();
    let (took, rounds) = run(&mut node, |n, now| {
        if n == 0 {
            now.instant += HOUR;
        }
    });
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
    assert_eq!(rounds, 2, "{:#?}", node.effects);
    assert!(took > HOUR);
}

#[test]
fn a_timer_event_far_after_the_probe_timeout_fails_the_change_at_that_round() {
    let mut node = at_rev1();
    node.probes = Probes {
        before: vec![],
        after: Box::new(|_| vec!["tcp 10.9.9.9:443"]),
    };
    let (_, rounds) = run(&mut node, |n, now| {
        if n == 0 {
            now.instant += HOUR;
        }
    });
    assert_eq!(rounds, 2, "{:#?}", node.effects);
    let last = node.last();
    assert_eq!(
        (last.phase, last.reason.as_str()),
        (Some(NodePhase::Failed), "ProbeFailed")
    );
    assert!(node.kernel_runs(&config(&[10, 20])), "not restored");
}
