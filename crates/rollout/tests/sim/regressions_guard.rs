//! Named regression scenarios for the fleet guard (docs/contract.md, "Fleet guard"): one per
//! rule, each built by hand from API-visible state.
//!
//! The fleet: `r1` is known-good (Succeeded) and runs on c, d, e; `r2` rolls out and its
//! current wave (a, b) was dispatched at t(10); b is still applying.

use netrollout_rollout::guard::{GuardMode, Health};
use netrollout_rollout::{
    Action, DispatchKind, FailureCause, Mode, Node, NodePhase, Plan, RevisionPhase,
    RolloutStrategy, Settings, State, Timestamp,
};

use crate::regressions::{dispatched, kinds, limit, on, pairs, phase_changes, rev, t};

/// Plans `state` with every dispatch record made under its revision's current sequence (the
/// fleet of this file never raised one: every dispatch is of the current targeting).
fn plan(state: &State, now: Timestamp, s: &Settings) -> Plan {
    let mut state = state.clone();
    for n in &mut state.nodes {
        if let Some(d) = n.dispatch.as_mut() {
            let r = state.revisions.iter().find(|r| r.name == d.revision);
            d.sequence = r.map(|r| r.sequence);
        }
    }
    netrollout_rollout::plan(&state, now, s)
}

/// A node on `revision` (reported `phase`), dispatched at `at` seconds.
fn at(name: &str, revision: &str, phase: NodePhase, secs: u64) -> Node {
    let mut n = on(name, revision, phase);
    if let Some(d) = n.dispatch.as_mut() {
        d.at = t(secs);
        d.picked_up_at = d.picked_up_at.map(|_| t(secs));
    }
    n
}

fn regressed(mut n: Node, since_secs: u64, checks: &[&str]) -> Node {
    n.health = Health::Regressed {
        since: t(since_secs),
        checks: checks.iter().map(|c| c.to_string()).collect(),
    };
    n
}

/// The fleet of this file, with `e` regressed since `since` seconds (if given).
fn fleet(e_since: Option<u64>) -> State {
    let e = at("e", "r1", NodePhase::Provisioned, 0);
    State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            at("a", "r2", NodePhase::Provisioned, 10),
            at("b", "r2", NodePhase::Provisioning, 10),
            at("c", "r1", NodePhase::Provisioned, 0),
            at("d", "r1", NodePhase::Provisioned, 0),
            match e_since {
                Some(s) => regressed(e, s, &["tenant-a", "border-exit"]),
                None => e,
            },
        ],
    }
}

fn guard(mode: GuardMode) -> Settings {
    Settings {
        guard: mode,
        ..limit(2)
    }
}

/// The failure the guard wrote: its reason sentence and failed nodes.
fn trip(p: &Plan) -> (&str, Vec<(&str, &FailureCause, &str)>) {
    let Some(Action::SetRevisionPhase {
        phase: RevisionPhase::Failed,
        reason,
        failed_nodes,
        ..
    }) = p.actions.first()
    else {
        panic!("the first action must fail the revision: {p:?}");
    };
    let nodes = failed_nodes
        .iter()
        .map(|f| (f.node.as_str(), &f.cause, f.message.as_str()))
        .collect();
    (reason, nodes)
}

#[test]
fn a_node_that_regresses_during_the_wave_fails_the_revision_and_returns_its_nodes_to_known_good() {
    let p = plan(&fleet(Some(12)), t(15), &guard(GuardMode::Revert));
    assert_eq!(
        phase_changes(&p),
        [("r2".to_string(), RevisionPhase::Failed)]
    );
    let (reason, failed) = trip(&p);
    // The untouched node is named with its failing checks, in the failure and its sentence.
    assert_eq!(failed.len(), 1, "{p:?}");
    let (node, cause, message) = failed[0];
    let checks = vec!["tenant-a".to_string(), "border-exit".to_string()];
    assert_eq!(
        (node, cause),
        ("e", &FailureCause::HealthRegressed { checks })
    );
    assert!(message.contains("tenant-a, border-exit"), "{message}");
    assert!(message.contains("not dispatched"), "{message}");
    for part in [
        "fleet guard tripped",
        "r2",
        "e (checks tenant-a, border-exit",
        "--guard-threshold=1",
        "known-good revision r1",
        "the current wave (a, b)",
    ] {
        assert!(reason.contains(part), "{part:?} not in {reason}");
    }
    // No node gets r2 again; a (settled) goes back at once, b once it finished applying.
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(dispatched(&p), pairs(&[("r1", "a")]));
    assert_eq!(kinds(&p), [DispatchKind::Rollback]);
    let g = p
        .summary
        .guard
        .as_ref()
        .expect("the trip is in the summary");
    assert_eq!(g.revision, "r2");
    assert_eq!(g.mode, GuardMode::Revert);
    assert_eq!(g.wave_start, t(10));
    assert_eq!(g.wave, ["a", "b"]);
    assert_eq!(g.known_good.as_deref(), Some("r1"));
    assert_eq!(g.regressed.len(), 1);
    assert_eq!(g.regressed[0].node, "e");
    assert_eq!(g.regressed[0].since, t(12));
    assert!(!g.regressed[0].dispatched);
}

#[test]
fn with_guard_halt_the_revision_fails_and_nothing_moves_until_a_person_acts() {
    let s = guard(GuardMode::Halt);
    let p = plan(&fleet(Some(12)), t(15), &s);
    assert_eq!(
        phase_changes(&p),
        [("r2".to_string(), RevisionPhase::Failed)]
    );
    let (reason, _) = trip(&p);
    assert!(reason.contains("nothing moves (--guard=halt"), "{reason}");
    assert_eq!(p.summary.mode, Mode::Halted);
    assert!(dispatched(&p).is_empty(), "{p:?}");
    assert_eq!(
        p.summary.guard.as_ref().map(|g| g.mode),
        Some(GuardMode::Halt)
    );
    // Later passes read the persisted failure: still halted, even once e recovered.
    let mut later = fleet(None);
    later.revisions[1].phase = RevisionPhase::Failed;
    later.revisions[1].guard_tripped = true;
    let p = plan(&later, t(30), &s);
    assert_eq!(p.summary.mode, Mode::Halted);
    assert!(dispatched(&p).is_empty(), "{p:?}");
    assert!(p.summary.guard.is_none(), "the trip is reported once");
    // An ordinary failure still rolls back with --guard=halt.
    later.revisions[1].guard_tripped = false;
    let p = plan(&later, t(30), &s);
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(dispatched(&p), pairs(&[("r1", "a")]));
}

#[test]
fn with_guard_off_a_regression_changes_nothing() {
    let p = plan(&fleet(Some(12)), t(15), &guard(GuardMode::Off));
    assert!(phase_changes(&p).is_empty(), "{p:?}");
    assert_eq!(p.summary.mode, Mode::RollingOut);
    assert_eq!(dispatched(&p), pairs(&[("r2", "c")]));
    assert!(p.summary.guard.is_none());
}

#[test]
fn a_node_that_regressed_before_the_wave_started_never_trips_the_guard() {
    for mode in [GuardMode::Revert, GuardMode::Halt] {
        let p = plan(&fleet(Some(9)), t(15), &guard(mode));
        assert!(phase_changes(&p).is_empty(), "{mode}: {p:?}");
        assert_eq!(dispatched(&p), pairs(&[("r2", "c")]), "{mode}");
        // At the very start of the wave it counts: it was healthy when the wave started.
        let p = plan(&fleet(Some(10)), t(15), &guard(mode));
        assert_eq!(
            phase_changes(&p),
            [("r2".to_string(), RevisionPhase::Failed)]
        );
    }
}

#[test]
fn the_guard_trips_only_at_the_threshold_and_names_every_regressed_node() {
    let s = Settings {
        guard_threshold: 2,
        ..guard(GuardMode::Revert)
    };
    let p = plan(&fleet(Some(12)), t(15), &s);
    assert!(phase_changes(&p).is_empty(), "{p:?}");
    assert_eq!(dispatched(&p), pairs(&[("r2", "c")]));
    let mut state = fleet(Some(12));
    state.nodes[3] = regressed(state.nodes[3].clone(), 14, &["tenant-b"]);
    let p = plan(&state, t(15), &s);
    let (reason, failed) = trip(&p);
    let names: Vec<&str> = failed.iter().map(|f| f.0).collect();
    assert_eq!(names, ["d", "e"]);
    assert!(reason.contains("2 node(s) regressed"), "{reason}");
    assert!(reason.contains("--guard-threshold=2"), "{reason}");
    assert!(reason.contains("d (checks tenant-b"), "{reason}");
}

#[test]
fn a_healthy_fleet_or_a_regressed_node_that_is_not_ready_or_leaving_never_trips_the_guard() {
    let s = guard(GuardMode::Revert);
    let p = plan(&fleet(None), t(15), &s);
    assert!(phase_changes(&p).is_empty(), "{p:?}");
    assert_eq!(dispatched(&p), pairs(&[("r2", "c")]));
    let mut state = fleet(Some(12));
    state.nodes[4].ready = false;
    let p = plan(&state, t(15), &s);
    assert!(phase_changes(&p).is_empty(), "NotReady: {p:?}");
    state.nodes[4].ready = true;
    state.nodes[4].deleting = true;
    let p = plan(&state, t(15), &s);
    assert!(phase_changes(&p).is_empty(), "leaving: {p:?}");
}

#[test]
fn a_regression_seen_after_the_wave_settled_trips_the_guard_before_the_next_wave() {
    let mut state = fleet(Some(14));
    state.nodes[1] = at("b", "r2", NodePhase::Provisioned, 10);
    let p = plan(&state, t(15), &guard(GuardMode::Revert));
    assert_eq!(
        phase_changes(&p),
        [("r2".to_string(), RevisionPhase::Failed)]
    );
    assert_eq!(dispatched(&p), pairs(&[("r1", "a"), ("r1", "b")]));
}

#[test]
fn with_a_window_the_wave_starts_at_the_earliest_dispatch_still_in_flight() {
    let mut state = fleet(Some(15));
    state.nodes[0] = at("a", "r2", NodePhase::Provisioning, 10);
    state.nodes[1] = at("b", "r2", NodePhase::Provisioning, 20);
    let s = Settings {
        strategy: RolloutStrategy::Window,
        update_limit: netrollout_rollout::UpdateLimit::Count(3),
        ..guard(GuardMode::Revert)
    };
    let p = plan(&state, t(21), &s);
    assert_eq!(
        phase_changes(&p),
        [("r2".to_string(), RevisionPhase::Failed)]
    );
    assert!(dispatched(&p).is_empty(), "both still apply: {p:?}");
    assert_eq!(p.summary.guard.map(|g| g.wave_start), Some(t(10)));
}

#[test]
fn a_node_of_the_wave_that_regresses_counts_and_is_said_to_be_dispatched() {
    let mut state = fleet(None);
    state.nodes[0] = regressed(state.nodes[0].clone(), 11, &["tenant-a"]);
    let p = plan(&state, t(15), &guard(GuardMode::Revert));
    let (_, failed) = trip(&p);
    assert_eq!(failed[0].0, "a");
    assert!(failed[0].2.contains("a node of the wave"), "{failed:?}");
}

#[test]
fn the_guard_is_quiet_before_the_first_wave_and_once_the_rollout_is_done() {
    let s = guard(GuardMode::Revert);
    // Nothing dispatched yet: no wave, the first one goes out.
    let mut state = fleet(Some(12));
    for n in &mut state.nodes[..2] {
        *n = at(&n.name, "r1", NodePhase::Provisioned, 0);
    }
    state.revisions[1].phase = RevisionPhase::Pending;
    let p = plan(&state, t(15), &s);
    assert!(
        phase_changes(&p)
            .iter()
            .all(|c| c.1 != RevisionPhase::Failed),
        "{p:?}"
    );
    assert_eq!(dispatched(&p), pairs(&[("r2", "a"), ("r2", "b")]));
    // Done: every node runs r2 and it Succeeded; a later regression is not the rollout's.
    let mut state = fleet(None);
    state.revisions[1].phase = RevisionPhase::Succeeded;
    state.nodes = ["a", "b", "c", "d"]
        .iter()
        .map(|n| at(n, "r2", NodePhase::Provisioned, 10))
        .collect();
    state.nodes.push(regressed(
        at("e", "r2", NodePhase::Provisioned, 10),
        12,
        &["x"],
    ));
    let p = plan(&state, t(15), &s);
    assert!(p.actions.is_empty(), "{p:?}");
}

#[test]
fn after_a_trip_with_revert_the_current_wave_goes_back_before_the_earlier_waves() {
    // Waves of one node: c got r2 first (t(0)), then d (t(5)), then a and b (t(10)).
    let mut state = fleet(Some(12));
    state.nodes[1] = at("b", "r2", NodePhase::Provisioned, 10);
    state.nodes[2] = at("c", "r2", NodePhase::Provisioned, 0);
    state.nodes[3] = at("d", "r2", NodePhase::Provisioned, 5);
    let s = Settings {
        update_limit: netrollout_rollout::UpdateLimit::Count(1),
        ..guard(GuardMode::Revert)
    };
    let p = plan(&state, t(15), &s);
    assert_eq!(
        phase_changes(&p),
        [("r2".to_string(), RevisionPhase::Failed)]
    );
    assert_eq!(dispatched(&p), pairs(&[("r1", "a")]));
    // Later passes (the failure persisted, a back on r1): b, then d, then c.
    state.revisions[1].phase = RevisionPhase::Failed;
    state.revisions[1].guard_tripped = true;
    let mut order = Vec::new();
    for _ in 0..4 {
        let p = plan(&state, t(20), &s);
        let Some((_, node)) = dispatched(&p).into_iter().next() else {
            break;
        };
        let n = state.nodes.iter_mut().find(|n| n.name == node).unwrap();
        *n = at(&node, "r1", NodePhase::Provisioned, 20);
        order.push(node);
    }
    assert_eq!(order, ["a", "b", "d", "c"]);
    // An ordinary failure rolls back in dispatch order (by name here), not newest first.
    let mut state = fleet(None);
    state.nodes[0] = at("a", "r2", NodePhase::Provisioned, 0);
    state.nodes[1] = at("b", "r2", NodePhase::Provisioned, 10);
    state.revisions[1].phase = RevisionPhase::Failed;
    let p = plan(&state, t(20), &s);
    assert_eq!(dispatched(&p), pairs(&[("r1", "a")]));
}
