//! Named regression scenarios for failures: the failure budget, rollback only to known-good
//! revisions, timeouts, unresponsive agents, supersession, blocked duplicates, API errors,
//! leader changes and history.

use netrollout_rollout::{
    Action, DispatchKind, DispatchRecord, FailureCause, Mode, NodePhase, RevisionPhase, Settings,
    State, plan,
};

use crate::agent::{Agent, Behavior};
use crate::lifecycle::Inputs;
use crate::regressions::{dispatched, limit, on, pairs, phase_changes, rev, t};
use crate::world::World;

fn failed_fleet() -> State {
    State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "r2", NodePhase::Failed),
            on("b", "r2", NodePhase::Failed),
            on("c", "r1", NodePhase::Provisioned),
        ],
    }
}

#[test]
fn more_failures_than_max_failures_fail_the_revision_and_list_the_failed_nodes() {
    let settings = Settings {
        max_failures: 1,
        ..limit(5)
    };
    let p = plan(&failed_fleet(), t(1), &settings);
    let Action::SetRevisionPhase {
        revision,
        phase,
        failed_nodes,
        reason,
    } = &p.actions[0]
    else {
        panic!("first action must fail the revision: {p:?}");
    };
    assert_eq!((revision.as_str(), *phase), ("r2", RevisionPhase::Failed));
    let names: Vec<&str> = failed_nodes.iter().map(|f| f.node.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        failed_nodes[0].cause,
        FailureCause::Reported(Some("ProbeFailed".into())),
        "{failed_nodes:?}"
    );
    assert_eq!(
        failed_nodes[0].message, "ProbeFailed: gateway unreachable",
        "{failed_nodes:?}"
    );
    assert!(reason.contains("--max-failures=1"), "{reason}");
}

#[test]
fn a_failure_of_many_nodes_names_the_first_ten_in_its_message_and_lists_them_all() {
    let mut state = failed_fleet();
    state.nodes = (0..25)
        .map(|i| on(&format!("n{i:02}"), "r2", NodePhase::Failed))
        .collect();
    let p = plan(&state, t(1), &limit(5));
    let Action::SetRevisionPhase {
        phase: RevisionPhase::Failed,
        failed_nodes,
        reason,
        ..
    } = &p.actions[0]
    else {
        panic!("first action must fail the revision: {p:?}");
    };
    assert_eq!(failed_nodes.len(), 25);
    assert!(
        reason.starts_with("25 node(s) failed revision r2"),
        "{reason}"
    );
    assert!(
        reason.contains("n09 (") && !reason.contains("n10"),
        "{reason}"
    );
    assert!(reason.contains("and 15 more"), "{reason}");
}

#[test]
fn failures_within_max_failures_let_the_rollout_continue() {
    let mut state = failed_fleet();
    state.nodes[1] = on("b", "r2", NodePhase::Provisioned);
    let p = plan(
        &state,
        t(1),
        &Settings {
            max_failures: 1,
            ..limit(5)
        },
    );
    assert!(phase_changes(&p).is_empty(), "{p:?}");
    assert_eq!(dispatched(&p), pairs(&[("r2", "c")]));
    assert_eq!((p.summary.target_updated, p.summary.target_failed), (1, 1));
}

#[test]
fn after_a_failure_nodes_move_back_to_the_known_good_revision_through_the_same_gate() {
    let p = plan(&failed_fleet(), t(1), &limit(1));
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(
        dispatched(&p),
        pairs(&[("r1", "a")]),
        "one at a time, as the limit says"
    );
    assert!(p.actions.iter().any(|a| matches!(
        a,
        Action::Dispatch {
            kind: DispatchKind::Rollback,
            ..
        }
    )));
}

#[test]
fn a_rollback_never_targets_a_revision_that_is_not_known_good() {
    // r1 never succeeded (superseded mid-rollout), r0 did: nodes go back to r0, never to r1.
    let mut state = failed_fleet();
    state.revisions = vec![
        rev("r0", 1, RevisionPhase::Succeeded),
        rev("r1", 2, RevisionPhase::Superseded),
        rev("r2", 3, RevisionPhase::Progressing),
    ];
    let p = plan(&state, t(1), &limit(5));
    assert_eq!(p.summary.target.as_deref(), Some("r0"));
    assert!(dispatched(&p).iter().all(|d| d.0 == "r0"), "{p:?}");
    // Without any known-good revision the rollout halts and healthy nodes stay as they are.
    state.revisions.remove(0);
    let p = plan(&state, t(1), &limit(5));
    assert_eq!(p.summary.mode, Mode::Halted);
    assert!(dispatched(&p).is_empty(), "{p:?}");
}

#[test]
fn an_agent_that_never_picks_up_is_marked_unresponsive_withdrawn_and_retried_later() {
    let mut a = on("a", "r1", NodePhase::Provisioned);
    a.spec_revision = Some("r2".into());
    a.dispatch = Some(DispatchRecord {
        revision: "r2".into(),
        at: t(0),
        previous: Some("r1".into()),
        picked_up_at: None,
        sequence: None,
        settled_at: None,
    });
    let mut state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![a, on("b", "r2", NodePhase::Provisioned)],
    };
    assert!(plan(&state, t(599), &limit(1)).actions.is_empty());
    let p = plan(&state, t(600), &limit(1));
    let [Action::MarkUnresponsive { node, restore, .. }] = &p.actions[..] else {
        panic!("expected only a withdrawal, never a failure: {p:?}");
    };
    assert_eq!((node.as_str(), restore.as_deref()), ("a", Some("r1")));
    // Executed: spec back to r1, slot free; retried once the pickup timeout passed again.
    let a = &mut state.nodes[0];
    (a.spec_revision, a.dispatch, a.unresponsive_since) = (Some("r1".into()), None, Some(t(600)));
    assert!(dispatched(&plan(&state, t(601), &limit(1))).is_empty());
    assert_eq!(
        dispatched(&plan(&state, t(1200), &limit(1))),
        pairs(&[("r2", "a")])
    );
}

#[test]
fn an_apply_longer_than_the_apply_timeout_fails_the_node_by_the_configurators_clock() {
    let mut state = failed_fleet();
    state.nodes[0] = on("a", "r2", NodePhase::Provisioning);
    state.nodes[1] = on("b", "r2", NodePhase::Provisioned);
    // The agent's own clock claims it started long ago; only the recorded pickup time counts.
    if let Some(st) = &mut state.nodes[0].status {
        st.started_at = Some(netrollout_rollout::Timestamp::from_millis(0));
    }
    assert!(phase_changes(&plan(&state, t(119), &limit(1))).is_empty());
    let p = plan(&state, t(120), &limit(1));
    assert_eq!(
        phase_changes(&p),
        [("r2".to_string(), RevisionPhase::Failed)]
    );
    assert!(p.actions[0].reason().contains("apply timeout"), "{p:?}");
    let Action::SetRevisionPhase { failed_nodes, .. } = &p.actions[0] else {
        panic!("first action must fail the revision: {p:?}");
    };
    // The reason is a word tools can match on; the sentence is the message.
    assert_eq!(failed_nodes[0].node, "a");
    assert_eq!(
        failed_nodes[0].cause,
        FailureCause::ApplyTimeout,
        "{failed_nodes:?}"
    );
    assert!(
        failed_nodes[0].message.contains("apply timeout of 120s"),
        "{failed_nodes:?}"
    );
    assert!(
        dispatched(&p).iter().all(|d| d.1 != "a"),
        "its spec stays while it applies"
    );
}

#[test]
fn the_first_sighting_of_an_apply_is_recorded_so_a_new_leader_keeps_the_deadline() {
    let mut state = failed_fleet();
    state.nodes[0] = on("a", "r2", NodePhase::Provisioning);
    state.nodes[1] = on("b", "r2", NodePhase::Provisioned);
    if let Some(d) = &mut state.nodes[0].dispatch {
        d.picked_up_at = None;
    }
    let p = plan(&state, t(500), &limit(1));
    let Some(Action::RecordDispatch { record, .. }) = p.actions.first() else {
        panic!("{p:?}")
    };
    assert_eq!(record.picked_up_at, Some(t(500)));
}

#[test]
fn a_newer_revision_supersedes_one_in_progress_without_touching_nodes_mid_apply() {
    let state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
            rev("r3", 3, RevisionPhase::Pending),
        ],
        nodes: vec![
            on("a", "r2", NodePhase::Provisioning),
            on("b", "r2", NodePhase::Provisioned),
            on("c", "r1", NodePhase::Provisioned),
        ],
    };
    let p = plan(&state, t(1), &limit(3));
    assert_eq!(
        phase_changes(&p),
        [
            ("r2".to_string(), RevisionPhase::Superseded),
            ("r3".to_string(), RevisionPhase::Progressing)
        ]
    );
    assert_eq!(dispatched(&p), pairs(&[("r3", "b"), ("r3", "c")]));
}

#[test]
fn the_same_config_as_a_failed_revision_is_not_rolled_out_again() {
    let mut state = failed_fleet();
    state.revisions[1].phase = RevisionPhase::Failed;
    let mut again = rev("r3", 3, RevisionPhase::Pending);
    again.hash = state.revisions[1].hash.clone();
    state.revisions.push(again);
    let p = plan(&state, t(1), &limit(5));
    assert_eq!(
        phase_changes(&p),
        [("r3".to_string(), RevisionPhase::Blocked)]
    );
    assert!(
        p.actions[0]
            .reason()
            .contains("identical to failed revision r2")
    );
    assert!(dispatched(&p).iter().all(|d| d.0 == "r1"), "{p:?}");
    // The configurator reuses the Failed object for the same content: nothing is rolled out.
    let mut w = World::new(3, limit(2));
    w.add_node(0, false, Agent::new(Behavior::Healthy, 1));
    let name = w.change_inputs(4);
    w.state.revisions[0].phase = RevisionPhase::Failed;
    w.change_inputs(4);
    assert_eq!(w.state.revisions.len(), 1);
    assert!(
        dispatched(&w.configurator_pass().0).is_empty(),
        "{name} is never dispatched"
    );
}

#[test]
fn api_write_failures_and_leader_changes_are_retried_and_never_count_as_config_failures() {
    let mut w = World::new(11, limit(2));
    for i in 0..6 {
        w.add_node(i % 2, false, Agent::new(Behavior::Healthy, 1));
    }
    let target = w.change_inputs(1);
    w.write_fail_pct = 30;
    w.crash_pct = 30;
    for _ in 0..200 {
        w.step_agents();
        let before = w.state.clone();
        let (p, _) = w.configurator_pass();
        assert_eq!(
            p,
            plan(&before, w.now, &w.settings),
            "a new leader plans the same from the API"
        );
        w.advance();
    }
    let r = w
        .state
        .revisions
        .iter()
        .find(|r| r.name == target)
        .map(|r| r.phase);
    assert_eq!(r, Some(RevisionPhase::Succeeded), "{}", w.log.join("\n"));
    assert!(w.log.iter().any(|l| l.contains("API write failed")));
    assert!(w.log.iter().any(|l| l.contains("configurator crashed")));
}

#[test]
fn history_keeps_failed_revisions_longer_than_succeeded_ones() {
    let mut revisions = Vec::new();
    for i in 0..12 {
        revisions.push(rev(&format!("ok{i:02}"), i, RevisionPhase::Succeeded));
    }
    for i in 0..21 {
        revisions.push(rev(&format!("bad{i:02}"), 100 + i, RevisionPhase::Failed));
    }
    revisions.push(rev("live", 200, RevisionPhase::Succeeded));
    // b is NotReady (not counted): `live` stays Succeeded while b still refers to ok00.
    let mut b = on("b", "ok00", NodePhase::Provisioned);
    b.ready = false;
    let nodes = vec![on("a", "live", NodePhase::Provisioned), b];
    let p = plan(&State { revisions, nodes }, t(1), &Settings::default());
    let pruned: Vec<&str> = p
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Prune { revision, .. } => Some(revision.as_str()),
            _ => None,
        })
        .collect();
    // 13 Succeeded: keep 10 newest, ok00 is still used by node b; 21 Failed: keep 20.
    assert_eq!(pruned, ["bad00", "ok02", "ok01"]);
}
