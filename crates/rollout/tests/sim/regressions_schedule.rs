//! Named maintenance-schedule scenarios (docs/contract.md, "Maintenance windows and freezes"):
//! a rollout is dispatched only inside a window and outside every freeze; nodes in flight
//! finish; an undo to known-good, the rollback after a failure and a join to the revision the
//! fleet runs are never held.

use netrollout_rollout::{
    Closed, Freeze, Mode, Node, NodePhase, RevisionPhase, Schedule, Settings, Span, State, plan,
};

use crate::regressions::{dispatched, limit, on, pairs, phase_changes, rev, t};

fn span(a: u64, b: u64) -> Span {
    Span {
        start: t(a),
        end: t(b),
    }
}

/// Windows [100, 200) and [300, 400), a freeze [150, 170); update limit 1.
fn scheduled() -> Settings {
    Settings {
        schedule: Schedule {
            windows: Some(vec![span(100, 200), span(300, 400)]),
            freezes: vec![Freeze {
                name: "ops/release".into(),
                span: span(150, 170),
            }],
            invalid: None,
        },
        ..limit(1)
    }
}

/// `old` Succeeded on every node, `new` Pending.
fn rolling_out() -> State {
    State {
        revisions: vec![
            rev("old", 1, RevisionPhase::Succeeded),
            rev("new", 2, RevisionPhase::Pending),
        ],
        nodes: vec![
            on("a", "old", NodePhase::Provisioned),
            on("b", "old", NodePhase::Provisioned),
        ],
    }
}

#[test]
fn outside_a_window_a_rollout_is_held_and_the_hold_says_when_the_next_window_opens() {
    let p = plan(&rolling_out(), t(50), &scheduled());
    assert_eq!(dispatched(&p), pairs(&[]));
    let h = p.summary.schedule.expect("held");
    assert_eq!(
        (h.revision.as_str(), h.closed, h.opens_at),
        ("new", Closed::OutsideWindow, Some(t(100)))
    );
    let p = plan(&rolling_out(), t(100), &scheduled());
    assert_eq!(dispatched(&p), pairs(&[("new", "a")]));
    assert_eq!(p.summary.schedule, None);
}

#[test]
fn a_freeze_holds_inside_a_window_and_the_next_opening_is_after_it() {
    let p = plan(&rolling_out(), t(160), &scheduled());
    assert_eq!(dispatched(&p), pairs(&[]));
    let h = p.summary.schedule.expect("held");
    assert_eq!(h.closed, Closed::Frozen("ops/release".into()));
    assert_eq!(h.opens_at, Some(t(170)));
}

#[test]
fn nodes_in_flight_when_a_window_closes_finish_and_the_rest_waits_for_the_next_window() {
    let mut s = rolling_out();
    s.revisions[1].phase = RevisionPhase::Progressing;
    s.nodes[0] = on("a", "new", NodePhase::Provisioned);
    let p = plan(&s, t(250), &scheduled());
    assert_eq!(dispatched(&p), pairs(&[]), "b waits for the window at 300");
    assert_eq!(
        p.summary.target_updated, 1,
        "a finished after the window closed"
    );
    assert_eq!(p.summary.schedule.and_then(|h| h.opens_at), Some(t(300)));
    // Nothing withdraws a node still applying when the window closes.
    s.nodes[0] = on("a", "new", NodePhase::Provisioning);
    let p = plan(&s, t(250), &scheduled());
    assert!(
        p.actions
            .iter()
            .all(|a| !matches!(a, netrollout_rollout::Action::MarkUnresponsive { .. }))
    );
}

#[test]
fn the_rollback_to_known_good_after_a_failure_is_never_held() {
    let s = State {
        revisions: vec![
            rev("old", 1, RevisionPhase::Succeeded),
            rev("new", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "new", NodePhase::Failed),
            on("b", "old", NodePhase::Provisioned),
        ],
    };
    let p = plan(&s, t(160), &scheduled());
    assert_eq!(
        phase_changes(&p),
        vec![("new".into(), RevisionPhase::Failed)]
    );
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(
        dispatched(&p),
        pairs(&[("old", "a")]),
        "in a freeze, the rollback goes"
    );
    assert_eq!(p.summary.schedule, None);
}

#[test]
fn an_undo_to_a_known_good_revision_is_never_held() {
    // `old` was Succeeded when the inputs came back to it: raised above `new`, marked an undo.
    let mut s = State {
        revisions: vec![
            rev("new", 2, RevisionPhase::Succeeded),
            rev("old", 3, RevisionPhase::Succeeded),
        ],
        nodes: vec![
            on("a", "new", NodePhase::Provisioned),
            on("b", "new", NodePhase::Provisioned),
        ],
    };
    s.revisions[1].undo = true;
    let p = plan(&s, t(50), &scheduled());
    assert_eq!(
        dispatched(&p),
        pairs(&[("old", "a")]),
        "outside a window, the undo goes"
    );
    assert_eq!(p.summary.schedule, None);
    // Later passes (the undo is Progressing by then) go on.
    s.revisions[1].phase = RevisionPhase::Progressing;
    s.nodes[0] = on("a", "old", NodePhase::Provisioned);
    let p = plan(&s, t(160), &scheduled());
    assert_eq!(
        dispatched(&p),
        pairs(&[("old", "b")]),
        "in a freeze, the undo goes"
    );
}

#[test]
fn going_back_to_a_revision_that_never_finished_is_a_rollout_and_is_held() {
    let mut s = State {
        revisions: vec![
            rev("mid", 3, RevisionPhase::Superseded),
            rev("new", 2, RevisionPhase::Succeeded),
        ],
        nodes: vec![
            on("a", "new", NodePhase::Provisioned),
            on("b", "new", NodePhase::Provisioned),
        ],
    };
    s.revisions[0].undo = false;
    let p = plan(&s, t(50), &scheduled());
    assert_eq!(dispatched(&p), pairs(&[]));
    assert!(p.summary.schedule.is_some());
}

#[test]
fn a_node_joining_a_fleet_that_runs_the_target_gets_it_in_a_freeze() {
    let s = State {
        revisions: vec![rev("old", 1, RevisionPhase::Succeeded)],
        nodes: vec![on("a", "old", NodePhase::Provisioned), Node::new("fresh")],
    };
    let p = plan(&s, t(160), &scheduled());
    assert_eq!(dispatched(&p), pairs(&[("old", "fresh")]));
    assert_eq!(p.summary.schedule, None);
}

#[test]
fn a_schedule_that_cannot_be_read_holds_every_rollout_and_never_opens() {
    let settings = Settings {
        schedule: Schedule {
            invalid: Some("MaintenanceSchedule x: spec.timeZone".into()),
            ..Schedule::default()
        },
        ..limit(1)
    };
    let p = plan(&rolling_out(), t(150), &settings);
    assert_eq!(dispatched(&p), pairs(&[]));
    let h = p.summary.schedule.expect("held");
    assert!(matches!(h.closed, Closed::Invalid(_)));
    assert_eq!(h.opens_at, None);
}

#[test]
fn without_a_schedule_nothing_is_held() {
    let p = plan(&rolling_out(), t(50), &limit(1));
    assert_eq!(dispatched(&p), pairs(&[("new", "a")]));
    assert_eq!(p.summary.schedule, None);
}
