//! Named approval and healthy-start scenarios (docs/contract.md, "Approval gates", "A healthy
//! start"): `--pause-after` holds a revision at a gate until a person promotes it; before its
//! first dispatch a revision waits while the fleet is unhealthy or the blocking query fires.

use netrollout_rollout::approval::{Approval, HoldCause, PauseAfter, StartCheck, Unhealthy};
use netrollout_rollout::guard::Health;
use netrollout_rollout::{DispatchKind, Node, NodePhase, RevisionPhase, Settings, State, plan};

use crate::regressions::{dispatched, limit, on, pairs, phase_changes, rev, t};

fn gates(limit_n: u32, gates: &[PauseAfter]) -> Settings {
    Settings {
        pause_after: gates.to_vec(),
        ..limit(limit_n)
    }
}

/// Six nodes on `old`; `moved` of them (in name order) already run `new` (Provisioned); `c`
/// is a canary.
fn fleet(moved: usize, approval: Approval) -> State {
    let names = ["a", "b", "c", "d", "e", "f"];
    let nodes = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut node = on(
                n,
                if i < moved { "new" } else { "old" },
                NodePhase::Provisioned,
            );
            node.canary = *n == "c";
            node
        })
        .collect();
    let mut new = rev("new", 2, RevisionPhase::Progressing);
    new.approval = approval;
    State {
        revisions: vec![rev("old", 1, RevisionPhase::Succeeded), new],
        nodes,
    }
}

fn promoted(gates: usize, full: bool) -> Approval {
    Approval {
        sequence: Some(2),
        gates,
        full,
        force: false,
    }
}

#[test]
fn the_canary_gate_lets_the_canaries_go_then_holds_until_a_promote() {
    let s = gates(3, &[PauseAfter::Canary]);
    let mut state = fleet(0, Approval::default());
    state.revisions[1].phase = RevisionPhase::Pending;
    let p = plan(&state, t(1), &s);
    assert_eq!(dispatched(&p), pairs(&[("new", "c")]), "only the canary");
    assert_eq!(p.summary.hold, None, "not reached while it applies");
    // The canary runs it: held, for as long as it takes (a day later still).
    let mut state = fleet(0, Approval::default());
    state.nodes[2] = on("c", "new", NodePhase::Provisioned);
    state.nodes[2].canary = true;
    for now in [t(2), t(86_400)] {
        let p = plan(&state, now, &s);
        assert_eq!(dispatched(&p), pairs(&[]));
        assert!(phase_changes(&p).is_empty(), "never fails by waiting");
        let h = p.summary.hold.expect("held at the canary gate");
        assert_eq!(
            h.cause,
            HoldCause::Gate {
                gate: 0,
                gates: 1,
                nodes: 1
            }
        );
        assert!(
            h.reason.contains("kubectl netrollout promote new"),
            "{}",
            h.reason
        );
    }
    state.revisions[1].approval = promoted(1, false);
    let p = plan(&state, t(3), &s);
    assert_eq!(
        dispatched(&p),
        pairs(&[("new", "a"), ("new", "b"), ("new", "d")])
    );
    assert_eq!(p.summary.hold, None);
}

#[test]
fn a_hold_outlasts_every_clock_of_the_plan_without_failing() {
    // At its gate with a node that committed it, whose bake ended long ago, whose analysis
    // passed with it, and every timeout long past: a day later it still waits, Progressing.
    let mut state = fleet(1, Approval::default());
    let mut a = on("a", "new", NodePhase::Provisioned);
    if let Some(d) = &mut a.dispatch {
        d.settled_at = Some(t(10));
        d.sequence = Some(2);
    }
    state.nodes[0] = a;
    state.revisions[1].analysis = netrollout_rollout::analysis::Analysis {
        checks: 1,
        verdict: netrollout_rollout::analysis::Verdict::Passed { nodes: 1 },
        sequence: Some(2),
        ..Default::default()
    };
    let s = Settings {
        bake_time: std::time::Duration::from_secs(60),
        ..gates(2, &[PauseAfter::Count(1)])
    };
    for now in [t(70), t(3_600), t(86_400)] {
        let p = plan(&state, now, &s);
        assert_eq!(dispatched(&p), pairs(&[]));
        assert!(phase_changes(&p).is_empty(), "{p:?}");
        assert!(p.summary.hold.is_some());
        assert!(
            p.summary.analysis.as_ref().is_some_and(|g| !g.due),
            "measured once"
        );
    }
}

#[test]
fn a_count_gate_cuts_the_wave_at_the_gate() {
    let p = plan(
        &fleet(1, Approval::default()),
        t(1),
        &gates(3, &[PauseAfter::Count(2)]),
    );
    assert_eq!(dispatched(&p), pairs(&[("new", "c")]), "one more reaches 2");
}

#[test]
fn gates_are_released_one_promote_at_a_time_and_full_releases_them_all() {
    let s = gates(6, &[PauseAfter::Percent(50), PauseAfter::Count(2)]);
    let p = plan(&fleet(2, Approval::default()), t(1), &s);
    assert_eq!(dispatched(&p), pairs(&[]));
    let gate = |p: &netrollout_rollout::Plan| match p.summary.hold.as_ref().map(|h| &h.cause) {
        Some(HoldCause::Gate { gate, gates, .. }) => Some((*gate, *gates)),
        _ => None,
    };
    assert_eq!(gate(&p), Some((0, 2)));
    let p = plan(&fleet(2, promoted(1, false)), t(1), &s);
    assert_eq!(dispatched(&p).len(), 1, "up to the 50% gate (3 of 6)");
    let p = plan(&fleet(3, promoted(1, false)), t(1), &s);
    assert_eq!(gate(&p), Some((1, 2)));
    let p = plan(&fleet(2, promoted(0, true)), t(1), &s);
    assert_eq!(dispatched(&p).len(), 4, "--full: every remaining node");
}

#[test]
fn a_promote_of_an_earlier_targeting_releases_nothing() {
    let mut state = fleet(1, promoted(1, false));
    state.revisions[1].sequence = 5; // raised since (an undo)
    let p = plan(&state, t(1), &gates(3, &[PauseAfter::Count(1)]));
    assert_eq!(dispatched(&p), pairs(&[]));
    assert!(p.summary.hold.is_some());
}

#[test]
fn a_raised_revision_past_several_gates_holds_once_at_the_last_one_reached() {
    let s = gates(3, &[PauseAfter::Count(1), PauseAfter::Count(4)]);
    let p = plan(&fleet(5, Approval::default()), t(1), &s);
    let h = p.summary.hold.expect("held");
    assert!(matches!(h.cause, HoldCause::Gate { gate: 1, .. }), "{h:?}");
    let p = plan(&fleet(5, promoted(2, false)), t(1), &s);
    assert_eq!(dispatched(&p), pairs(&[("new", "f")]));
}

#[test]
fn a_rollback_is_never_held_by_a_gate() {
    // `new` failed: its nodes go back to `old` whatever the gates say.
    let mut state = fleet(2, Approval::default());
    state.revisions[1].phase = RevisionPhase::Failed;
    let p = plan(&state, t(1), &gates(3, &[PauseAfter::Count(1)]));
    assert_eq!(dispatched(&p), pairs(&[("old", "a"), ("old", "b")]));
    assert_eq!(p.summary.hold, None);
}

#[test]
fn nodes_leaving_a_failed_revision_for_the_target_are_not_held_by_its_gate() {
    // `bad` failed; `new` (newer) rolls out with a gate at 1 node: the nodes on `bad` leave it
    // at once, and only one other node moves.
    let mut state = fleet(0, Approval::default());
    state.revisions[1].sequence = 3;
    state.revisions[1].phase = RevisionPhase::Pending;
    state.revisions.push(rev("bad", 2, RevisionPhase::Failed));
    for n in &mut state.nodes[..2] {
        *n = on(&n.name.clone(), "bad", NodePhase::Failed);
    }
    let p = plan(&state, t(1), &gates(6, &[PauseAfter::Count(1)]));
    assert_eq!(
        dispatched(&p),
        pairs(&[("new", "c"), ("new", "a"), ("new", "b")]),
        "c (the canary) is the one node the gate lets go; a and b leave `bad` whatever the gate"
    );
    assert_eq!(
        crate::regressions::kinds(&p),
        [DispatchKind::Rollout, DispatchKind::Rollback]
    );
}

fn regressed(mut n: Node) -> Node {
    n.health = Health::Regressed {
        since: t(0),
        checks: vec!["tenant-ping".into()],
    };
    n
}

#[test]
fn a_degraded_fleet_is_not_started_and_starts_on_its_own_once_it_recovers() {
    let s = Settings {
        start_max_unhealthy: Some(Unhealthy::Count(1)),
        ..limit(2)
    };
    let mut state = fleet(0, Approval::default());
    state.revisions[1].phase = RevisionPhase::Pending;
    state.nodes[0] = regressed(state.nodes[0].clone());
    let p = plan(&state, t(1), &s);
    assert_eq!(dispatched(&p).len(), 2, "one unhealthy node is allowed");
    state.nodes[1] = regressed(state.nodes[1].clone());
    let p = plan(&state, t(1), &s);
    assert_eq!(dispatched(&p), pairs(&[]));
    assert!(phase_changes(&p).is_empty(), "waits, not fails");
    let h = p.summary.hold.expect("held at the start");
    assert_eq!(
        h.cause,
        HoldCause::Unhealthy {
            unhealthy: 2,
            allowed: 1
        }
    );
    state.revisions[1].approval = Approval {
        sequence: Some(2),
        force: true,
        ..Approval::default()
    };
    let p = plan(&state, t(1), &s);
    assert_eq!(dispatched(&p).len(), 2, "promote --force starts it");
    state.revisions[1].approval = Approval::default();
    state.nodes[1].health = Health::Healthy;
    assert_eq!(dispatched(&plan(&state, t(2), &s)).len(), 2);
}

#[test]
fn the_start_check_applies_only_before_the_first_dispatch() {
    let s = Settings {
        start_check: StartCheck::Blocked {
            message: "alert NodeDown is firing".into(),
        },
        ..limit(2)
    };
    let p = plan(&fleet(0, Approval::default()), t(1), &s);
    assert_eq!(dispatched(&p), pairs(&[]));
    let h = p.summary.hold.expect("held");
    assert!(
        h.reason.contains("alert NodeDown is firing"),
        "{}",
        h.reason
    );
    // Once started, the rollout goes on (the fleet guard and analysis judge it from here).
    let p = plan(&fleet(1, Approval::default()), t(1), &s);
    assert_eq!(dispatched(&p).len(), 2);
}

#[test]
fn a_person_is_asked_only_once_the_nodes_at_the_gate_finished_their_apply_and_bake() {
    let s = Settings {
        bake_time: std::time::Duration::from_secs(60),
        ..gates(3, &[PauseAfter::Canary])
    };
    let mut state = fleet(0, Approval::default());
    let mut c = on("c", "new", NodePhase::Provisioning);
    c.canary = true;
    state.nodes[2] = c.clone();
    let p = plan(&state, t(1), &s);
    assert_eq!(
        dispatched(&p),
        pairs(&[]),
        "the gate is reached: nothing more goes"
    );
    assert_eq!(
        p.summary.hold, None,
        "the canary still applies: nobody is asked yet"
    );
    c.status.as_mut().unwrap().phase = NodePhase::Provisioned;
    c.dispatch.as_mut().unwrap().settled_at = Some(t(10));
    state.nodes[2] = c;
    let p = plan(&state, t(30), &s);
    assert_eq!(
        (dispatched(&p), p.summary.hold.is_none()),
        (pairs(&[]), true),
        "it bakes"
    );
    let p = plan(&state, t(70), &s);
    assert_eq!(dispatched(&p), pairs(&[]));
    assert!(p.summary.hold.is_some(), "baked: now a person is asked");
}
