//! Named regression scenarios, one per rule of the contract (docs/contract.md) "The plan"
//! (failure handling is in `regressions_failure`, the two rollout strategies in
//! `regressions_waves`). Each builds the API-visible state by hand (or drives the simulated
//! fleet) and checks the planner's decision. The builders here serve every `regressions_*`.

use std::time::Duration;

use netrollout_rollout::{
    Action, DispatchKind, DispatchRecord, Mode, Node, NodePhase, NodeStatus, Plan, Revision,
    RevisionPhase, Settings, State, Timestamp, UpdateLimit, plan,
};

pub fn t(secs: u64) -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000).saturating_add(Duration::from_secs(secs))
}

pub fn rev(name: &str, sequence: u64, phase: RevisionPhase) -> Revision {
    Revision {
        phase,
        ..Revision::new(name, sequence, format!("hash-of-{name}"))
    }
}

/// A Ready node whose agent reported `phase` for `revision`, dispatched at t(0).
pub fn on(name: &str, revision: &str, phase: NodePhase) -> Node {
    let mut n = Node::new(name);
    n.spec_revision = Some(revision.into());
    n.status = Some(NodeStatus {
        observed_revision: revision.into(),
        phase,
        started_at: None,
        finished_at: None,
        reason: (phase == NodePhase::Failed).then(|| "ProbeFailed".into()),
        message: (phase == NodePhase::Failed).then(|| "gateway unreachable".into()),
    });
    n.dispatch = Some(DispatchRecord {
        revision: revision.into(),
        at: t(0),
        previous: None,
        picked_up_at: (phase == NodePhase::Provisioning).then(|| t(0)),
        sequence: None,
        settled_at: None,
    });
    n
}

pub fn limit(n: u32) -> Settings {
    Settings {
        update_limit: UpdateLimit::Count(n),
        ..Settings::default()
    }
}

/// `(revision, node)` for every node dispatched, in order.
pub fn dispatched(p: &Plan) -> Vec<(String, String)> {
    p.actions
        .iter()
        .filter_map(|a| match a {
            Action::Dispatch {
                revision, nodes, ..
            } => Some(
                nodes
                    .iter()
                    .map(|n| (revision.clone(), n.node.clone()))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect()
}

pub fn phase_changes(p: &Plan) -> Vec<(String, RevisionPhase)> {
    p.actions
        .iter()
        .filter_map(|a| match a {
            Action::SetRevisionPhase {
                revision, phase, ..
            } => Some((revision.clone(), *phase)),
            _ => None,
        })
        .collect()
}

/// Owned `(revision, node)` pairs, to compare with [`dispatched`].
pub fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The kind of every dispatch, in order.
pub fn kinds(p: &Plan) -> Vec<DispatchKind> {
    p.actions
        .iter()
        .filter_map(|a| match a {
            Action::Dispatch { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect()
}

#[test]
fn the_target_is_the_newest_revision_by_sequence_never_by_list_order() {
    let state = State {
        revisions: vec![
            rev("new", 7, RevisionPhase::Pending),
            rev("old", 3, RevisionPhase::Succeeded),
        ],
        nodes: vec![on("a", "old", NodePhase::Provisioned)],
    };
    let p = plan(&state, t(1), &limit(1));
    assert_eq!(p.summary.target.as_deref(), Some("new"));
    assert_eq!(dispatched(&p), pairs(&[("new", "a")]));
}

#[test]
fn many_nodes_are_dispatched_in_one_pass_up_to_a_percentage_limit_rounded_up() {
    let mut state = State {
        revisions: vec![rev("r1", 1, RevisionPhase::Pending)],
        nodes: vec![],
    };
    state.nodes = (0..11).map(|i| Node::new(format!("n{i:02}"))).collect();
    let s = Settings {
        update_limit: UpdateLimit::Percent(20),
        ..Settings::default()
    };
    let p = plan(&state, t(0), &s);
    assert_eq!(p.summary.limit, 3);
    assert_eq!(dispatched(&p).len(), 3, "{p:?}");
}

#[test]
fn the_update_limit_is_global_across_revisions() {
    let state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Superseded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "r1", NodePhase::Provisioning),
            on("b", "r2", NodePhase::Provisioning),
            on("c", "r1", NodePhase::Provisioned),
        ],
    };
    let p = plan(&state, t(10), &limit(2));
    assert!(
        dispatched(&p).is_empty(),
        "two in flight on two revisions fill a limit of 2: {p:?}"
    );
    assert_eq!(p.summary.in_flight, 2);
}

#[test]
fn stale_status_about_a_previous_revision_is_never_counted() {
    // b was failed on r1, then got r2; its status still says "r1 Failed".
    let mut b = on("b", "r1", NodePhase::Failed);
    b.spec_revision = Some("r2".into());
    b.dispatch = Some(DispatchRecord {
        revision: "r2".into(),
        at: t(0),
        previous: Some("r1".into()),
        picked_up_at: None,
        sequence: None,
        settled_at: None,
    });
    let state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Superseded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![on("a", "r2", NodePhase::Provisioned), b],
    };
    let p = plan(&state, t(5), &limit(1));
    assert!(
        phase_changes(&p).is_empty(),
        "neither a failure of r2 nor a success: {p:?}"
    );
    assert_eq!(p.summary.in_flight, 1);
    assert_eq!((p.summary.target_updated, p.summary.target_failed), (1, 0));
}

#[test]
fn dispatch_order_is_unconfigured_then_canaries_then_zones_round_robin_and_the_configurators_node_last()
 {
    let zoned = |name: &str, zone: &str| {
        let mut n = on(name, "r1", NodePhase::Provisioned);
        n.zone = zone.into();
        n
    };
    let mut canary = zoned("c", "z1");
    canary.canary = true;
    let mut me = zoned("aa-configurator", "z1");
    me.runs_configurator = true;
    let state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Pending),
        ],
        nodes: vec![
            me,
            zoned("x1", "z1"),
            zoned("x2", "z1"),
            zoned("y1", "z2"),
            canary,
            Node::new("fresh"),
        ],
    };
    let s = Settings {
        update_limit: UpdateLimit::Percent(100),
        ..Settings::default()
    };
    let order: Vec<String> = dispatched(&plan(&state, t(0), &s))
        .into_iter()
        .map(|d| d.1)
        .collect();
    assert_eq!(order, ["fresh", "c", "x1", "y1", "x2", "aa-configurator"]);
}

#[test]
fn not_ready_nodes_are_skipped_counted_and_caught_up_once_ready() {
    let mut state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "r2", NodePhase::Provisioned),
            on("b", "r1", NodePhase::Provisioned),
        ],
    };
    state.nodes[1].ready = false;
    let p = plan(&state, t(1), &limit(1));
    assert!(dispatched(&p).is_empty());
    assert_eq!(p.summary.not_ready, 1);
    assert_eq!(
        phase_changes(&p),
        [("r2".to_string(), RevisionPhase::Succeeded)]
    );
    state.revisions[1].phase = RevisionPhase::Succeeded;
    state.nodes[1].ready = true;
    assert_eq!(
        dispatched(&plan(&state, t(2), &limit(1))),
        pairs(&[("r2", "b")])
    );
}

#[test]
fn a_joining_node_gets_the_newest_succeeded_revision_until_the_target_has_a_success() {
    let mut state = State {
        revisions: vec![
            rev("good", 1, RevisionPhase::Succeeded),
            rev("next", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "next", NodePhase::Provisioning),
            on("b", "good", NodePhase::Provisioned),
            Node::new("joiner"),
        ],
    };
    let p = plan(&state, t(1), &limit(3));
    assert_eq!(dispatched(&p), pairs(&[("good", "joiner"), ("next", "b")]));
    assert!(
        matches!(
            &p.actions[0],
            Action::Dispatch {
                kind: DispatchKind::Join,
                ..
            }
        ),
        "{p:?}"
    );
    // Once the target has one success, a joining node gets the target itself.
    state.nodes[0] = on("a", "next", NodePhase::Provisioned);
    assert_eq!(
        dispatched(&plan(&state, t(2), &limit(3)))[0],
        ("next".to_string(), "joiner".to_string())
    );
}

#[test]
fn a_leaving_node_is_dropped_from_all_counts_and_never_fails_a_revision() {
    let mut gone = on("gone", "r2", NodePhase::Failed);
    gone.deleting = true;
    let state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![gone, on("a", "r2", NodePhase::Provisioned)],
    };
    let p = plan(&state, t(1), &limit(1));
    assert_eq!(p.summary.managed, 1);
    assert_eq!(
        phase_changes(&p),
        [("r2".to_string(), RevisionPhase::Succeeded)]
    );
}

#[test]
fn a_paused_revision_or_a_global_pause_stops_new_dispatches_while_in_flight_nodes_finish() {
    let mut state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "r2", NodePhase::Provisioned),
            on("b", "r1", NodePhase::Provisioned),
        ],
    };
    state.revisions[1].paused = true;
    let p = plan(&state, t(1), &limit(5));
    assert_eq!(
        (p.summary.mode.clone(), dispatched(&p)),
        (Mode::Paused, vec![])
    );
    state.revisions[1].paused = false;
    let s = Settings {
        paused: true,
        ..limit(5)
    };
    assert_eq!(plan(&state, t(1), &s).summary.mode, Mode::Paused);
    assert_eq!(
        dispatched(&plan(&state, t(1), &limit(5))),
        pairs(&[("r2", "b")])
    );
}

#[test]
fn the_planner_depends_on_nothing_that_does_io() {
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    let names: Vec<&str> = deps
        .lines()
        .filter_map(|l| l.split(['=', '.']).next().map(str::trim))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(
        names,
        ["thiserror"],
        "no tokio, kube, k8s-openapi, hyper or netlink in the planner"
    );
}

#[test]
fn a_plan_writes_its_dispatches_before_its_dispatch_records() {
    // a applies r2 (first seen now: its pickup is recorded); b and c wait for r2, one slot free.
    let mut state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "r2", NodePhase::Provisioning),
            on("b", "r1", NodePhase::Provisioned),
            on("c", "r1", NodePhase::Provisioned),
        ],
    };
    if let Some(d) = &mut state.nodes[0].dispatch {
        d.picked_up_at = None;
    }
    let p = plan(&state, t(500), &limit(2));
    let at = |want: fn(&Action) -> bool| p.actions.iter().position(want);
    let dispatch = at(|a| matches!(a, Action::Dispatch { .. }));
    let record = at(|a| matches!(a, Action::RecordDispatch { .. }));
    assert!(
        matches!((dispatch, record), (Some(d), Some(r)) if d < r),
        "a dispatch, then the record: {:?}",
        p.actions
    );
}

/// The lab's fleet: four nodes on r1, zones alternating as the lab labels them.
fn lab_fleet() -> Vec<Node> {
    (1..=4)
        .map(|i| {
            let mut n = on(&format!("lab-node-{i}"), "r1", NodePhase::Provisioned);
            n.zone = format!("zone-{}", (i - 1) % 2);
            n
        })
        .collect()
}

#[test]
fn a_wave_split_over_two_passes_keeps_the_zone_round_robin_of_one_pass() {
    let revisions = vec![
        rev("r1", 1, RevisionPhase::Succeeded),
        rev("r2", 2, RevisionPhase::Progressing),
    ];
    // In one pass, limit 2: one node of each zone.
    let whole = State {
        revisions: revisions.clone(),
        nodes: lab_fleet(),
    };
    assert_eq!(
        dispatched(&plan(&whole, t(1), &limit(2))),
        pairs(&[("r2", "lab-node-1"), ("r2", "lab-node-2")])
    );
    // The same wave split: lab-node-1 got r2 in an earlier pass (its write went through, the
    // next one failed, or only one slot was free then). The next slot goes to the other zone's
    // first node, as in one pass, not to the second node of lab-node-1's zone.
    let mut nodes = lab_fleet();
    nodes[0].spec_revision = Some("r2".into());
    nodes[0].dispatch = Some(DispatchRecord {
        revision: "r2".into(),
        at: t(1),
        previous: Some("r1".into()),
        picked_up_at: None,
        sequence: None,
        settled_at: None,
    });
    let split = State { revisions, nodes };
    assert_eq!(
        dispatched(&plan(&split, t(2), &limit(2))),
        pairs(&[("r2", "lab-node-2")])
    );
    // lab-node-1 done: the next two are the second of each zone, zone-0 first.
    let mut done = split.clone();
    done.nodes[0] = on("lab-node-1", "r2", NodePhase::Provisioned);
    done.nodes[0].zone = "zone-0".into();
    done.nodes[1] = on("lab-node-2", "r2", NodePhase::Provisioning);
    done.nodes[1].zone = "zone-1".into();
    assert_eq!(
        dispatched(&plan(&done, t(3), &limit(2))),
        pairs(&[("r2", "lab-node-3")])
    );
}
