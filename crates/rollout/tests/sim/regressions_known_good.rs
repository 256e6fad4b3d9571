//! Named regression scenarios for known-good revisions that fail now: a Succeeded revision that
//! is the target again (an undo raised its sequence) has a failure budget like any other, and
//! failures during a rollback to the known-good revision halt the rollback (docs/contract.md,
//! "The plan", Failure and Rollback).

use netrollout_rollout::{
    Action, DispatchKind, FailureCause, Mode, Node, NodePhase, Plan, RevisionPhase, Settings,
    State, plan,
};

use crate::agent::{Agent, Behavior};
use crate::check::Checker;
use crate::lifecycle::Inputs;
use crate::regressions::{dispatched, kinds, limit, on, pairs, phase_changes, rev, t};
use crate::world::World;

/// An undo: `old` Succeeded long ago and its sequence was raised above `cur`, on which the
/// fleet runs; a and b got `old` again and failed it.
fn undo_failing_on_two_nodes() -> State {
    State {
        revisions: vec![
            rev("old", 3, RevisionPhase::Succeeded),
            rev("cur", 2, RevisionPhase::Succeeded),
        ],
        nodes: vec![
            on("a", "old", NodePhase::Failed),
            on("b", "old", NodePhase::Failed),
            on("c", "cur", NodePhase::Provisioned),
            on("d", "cur", NodePhase::Provisioned),
        ],
    }
}

#[test]
fn a_succeeded_revision_raised_again_fails_when_more_than_max_failures_nodes_fail_it() {
    let p = plan(&undo_failing_on_two_nodes(), t(1), &limit(2));
    assert_eq!(
        phase_changes(&p),
        [("old".to_string(), RevisionPhase::Failed)],
        "{p:?}"
    );
    let Action::SetRevisionPhase {
        failed_nodes,
        reason,
        ..
    } = &p.actions[0]
    else {
        panic!("first action must fail the revision: {p:?}");
    };
    let names: Vec<&str> = failed_nodes.iter().map(|f| f.node.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(
        failed_nodes
            .iter()
            .all(|f| f.cause == FailureCause::Reported(Some("ProbeFailed".into())))
    );
    assert!(reason.contains("had succeeded before"), "{reason}");
    assert!(reason.contains("no longer a rollback target"), "{reason}");
    // The rollout halts: c and d never get it. The nodes that failed it go back to the
    // revision the undo moved away from, not to the revision they failed.
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(p.summary.target.as_deref(), Some("cur"));
    assert_eq!(dispatched(&p), pairs(&[("cur", "a"), ("cur", "b")]));
    assert_eq!(kinds(&p), [DispatchKind::Rollback]);
}

#[test]
fn a_succeeded_revision_raised_again_keeps_rolling_out_within_max_failures() {
    let settings = Settings {
        max_failures: 2,
        ..limit(2)
    };
    let p = plan(&undo_failing_on_two_nodes(), t(1), &settings);
    // Rolling out again: Progressing (not Ready) until every counted node runs it.
    assert_eq!(
        phase_changes(&p),
        [("old".to_string(), RevisionPhase::Progressing)],
        "{p:?}"
    );
    assert!(p.actions[0].reason().contains("target again"), "{p:?}");
    assert_eq!(p.summary.mode, Mode::RollingOut);
    assert_eq!(dispatched(&p), pairs(&[("old", "c"), ("old", "d")]));
}

#[test]
fn a_raised_succeeded_revision_is_succeeded_again_once_every_counted_node_runs_it() {
    let mut state = undo_failing_on_two_nodes();
    state.revisions[0].phase = RevisionPhase::Progressing;
    state.nodes = ["a", "b", "c", "d"]
        .iter()
        .map(|n| on(n, "old", NodePhase::Provisioned))
        .collect();
    let p = plan(&state, t(1), &limit(2));
    assert_eq!(
        phase_changes(&p),
        [("old".to_string(), RevisionPhase::Succeeded)]
    );
    // A node with no config joining a Succeeded target does not make it Progressing.
    state.revisions[0].phase = RevisionPhase::Succeeded;
    state.nodes.push(Node::new("j"));
    let p = plan(&state, t(1), &limit(2));
    assert!(phase_changes(&p).is_empty(), "{p:?}");
    assert_eq!(dispatched(&p), pairs(&[("old", "j")]));
}

#[test]
fn a_raised_revision_that_fails_with_no_other_known_good_revision_halts_where_nodes_are() {
    let mut state = undo_failing_on_two_nodes();
    state.revisions[1].phase = RevisionPhase::Superseded;
    let p = plan(&state, t(1), &limit(2));
    assert_eq!(
        phase_changes(&p),
        [("old".to_string(), RevisionPhase::Failed)]
    );
    assert_eq!(p.summary.mode, Mode::Halted);
    assert!(dispatched(&p).is_empty(), "{p:?}");
}

/// A rollback from `bad` to the known-good `good`: a was moved back and failed `good` too; b
/// still waits on `bad`; c never left `good`.
fn rollback_failing_on_one_node() -> State {
    State {
        revisions: vec![
            rev("good", 1, RevisionPhase::Succeeded),
            rev("bad", 2, RevisionPhase::Failed),
        ],
        nodes: vec![
            on("a", "good", NodePhase::Failed),
            on("b", "bad", NodePhase::Failed),
            on("c", "good", NodePhase::Provisioned),
        ],
    }
}

#[test]
fn failures_during_a_rollback_halt_it_and_keep_the_known_good_revision_succeeded() {
    let p = plan(&rollback_failing_on_one_node(), t(1), &limit(2));
    assert!(
        phase_changes(&p).is_empty(),
        "the known-good revision is not failed by its rollback: {p:?}"
    );
    assert_eq!(p.summary.mode, Mode::Halted);
    assert_eq!(p.summary.target.as_deref(), Some("good"));
    assert_eq!(p.summary.target_failed, 1);
    assert!(dispatched(&p).is_empty(), "nothing more moves: {p:?}");
}

#[test]
fn failures_during_a_rollback_within_max_failures_let_it_continue() {
    let settings = Settings {
        max_failures: 1,
        ..limit(2)
    };
    let p = plan(&rollback_failing_on_one_node(), t(1), &settings);
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(dispatched(&p), pairs(&[("good", "b")]));
}

#[test]
fn a_halted_rollback_resumes_once_the_failed_node_runs_the_known_good_revision_again() {
    let mut state = rollback_failing_on_one_node();
    // A person asked a's agent for one more try, and it worked.
    state.nodes[0] = on("a", "good", NodePhase::Provisioned);
    let p = plan(&state, t(1), &limit(2));
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(dispatched(&p), pairs(&[("good", "b")]));
}

#[test]
fn joining_nodes_never_get_a_succeeded_revision_that_more_than_max_failures_nodes_fail_now() {
    let mut joiner = Node::new("j");
    joiner.zone = "z".into();
    let state = State {
        revisions: vec![
            rev("good", 1, RevisionPhase::Succeeded),
            rev("next", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "good", NodePhase::Failed),
            on("b", "next", NodePhase::Provisioning),
            joiner,
        ],
    };
    let p = plan(&state, t(1), &limit(2));
    assert_eq!(dispatched(&p), pairs(&[("next", "j")]), "{p:?}");
}

/// Agents step, then one configurator pass with every invariant checked.
fn step(w: &mut World, checker: &mut Checker) -> Plan {
    w.step_agents();
    checker
        .check_blast_radius(&w.state, w.now, &w.settings)
        .unwrap_or_else(|e| panic!("{e}\n{}", w.log.join("\n")));
    let before = w.state.clone();
    let (p, _) = w.configurator_pass();
    checker
        .check_pass(&before, &p, &w.state, w.now, &w.settings)
        .unwrap_or_else(|e| panic!("{e}\n{}", w.log.join("\n")));
    w.advance();
    p
}

/// The simulator with real (simulated) agents: a fleet on `cur` is undone to `old`, whose
/// content now fails on the first nodes that get it.
#[test]
fn an_undo_to_a_revision_that_fails_now_stops_at_the_first_wave_and_goes_back() {
    let mut w = World::new(5, limit(2));
    for _ in 0..5 {
        w.add_node(0, false, Agent::new(Behavior::Healthy, 1));
    }
    let old = w.change_inputs(1);
    w.converge_on(&old);
    let cur = w.change_inputs(2);
    let mut checker = Checker::default();
    for _ in 0..20 {
        step(&mut w, &mut checker);
    }
    let phase = |w: &World, r: &str| {
        w.state
            .revisions
            .iter()
            .find(|x| x.name == r)
            .map(|x| x.phase)
    };
    assert_eq!(
        phase(&w, &cur),
        Some(RevisionPhase::Succeeded),
        "{}",
        w.log.join("\n")
    );

    // Undo: the inputs equal `old` again; its content now fails every probe.
    w.bad.insert(old.clone());
    w.change_inputs(1);
    let mut got_old = Vec::new();
    let mut last = None;
    for _ in 0..30 {
        let p = step(&mut w, &mut checker);
        got_old.extend(
            dispatched(&p)
                .into_iter()
                .filter(|d| d.0 == old)
                .map(|d| d.1),
        );
        last = Some(p);
    }
    let log = w.log.join("\n");
    assert_eq!(phase(&w, &old), Some(RevisionPhase::Failed), "{log}");
    assert_eq!(got_old, ["node-000", "node-001"], "one wave only: {log}");
    let p = last.unwrap_or_else(|| panic!("no pass ran"));
    assert_eq!(p.summary.target.as_deref(), Some(cur.as_str()), "{log}");
    for n in &w.state.nodes {
        assert_eq!(n.spec_revision.as_deref(), Some(cur.as_str()), "{log}");
        assert_eq!(
            n.current_status().map(|s| s.phase),
            Some(NodePhase::Provisioned),
            "{log}"
        );
    }
}
