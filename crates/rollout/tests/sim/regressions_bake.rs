//! Named bake-time scenarios (docs/contract.md, "Bake time"): `--bake-time` keeps a committed
//! node's slot (and wave) until it stayed healthy that long; a regression within it fails the
//! revision.

use std::time::Duration;

use netrollout_rollout::guard::Health;
use netrollout_rollout::{
    Action, FailureCause, Mode, Node, NodePhase, RevisionPhase, RolloutStrategy, Settings, State,
    plan,
};

use crate::regressions::{dispatched, limit, on, pairs, phase_changes, rev, t};

fn bake(limit_n: u32, secs: u64) -> Settings {
    Settings {
        bake_time: Duration::from_secs(secs),
        ..limit(limit_n)
    }
}

/// `name` Provisioned on `revision`, first seen so at `t(settled)`.
fn settled(name: &str, revision: &str, settled: u64) -> Node {
    let mut n = on(name, revision, NodePhase::Provisioned);
    if let Some(d) = &mut n.dispatch {
        d.settled_at = Some(t(settled));
    }
    n
}

/// `name` on `revision` since long before (no dispatch record: nothing to bake).
fn old(name: &str, revision: &str) -> Node {
    Node {
        dispatch: None,
        ..on(name, revision, NodePhase::Provisioned)
    }
}

fn fleet(a: Node) -> State {
    State {
        revisions: vec![
            rev("old", 1, RevisionPhase::Succeeded),
            rev("new", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![a, old("b", "old"), old("c", "old")],
    }
}

#[test]
fn a_committed_node_holds_its_slot_until_its_bake_is_over() {
    let s = fleet(settled("a", "new", 10));
    let p = plan(&s, t(69), &bake(1, 60));
    assert_eq!(dispatched(&p), pairs(&[]), "a bakes until t(70)");
    assert_eq!(p.summary.in_flight, 1);
    let b = p.summary.bake.clone().expect("the target bakes");
    assert_eq!((b.revision.as_str(), b.nodes, b.until), ("new", 1, t(70)));
    let p = plan(&s, t(70), &bake(1, 60));
    assert_eq!(dispatched(&p), pairs(&[("new", "b")]));
    assert_eq!(p.summary.bake, None);
}

#[test]
fn the_pass_that_first_sees_a_node_provisioned_records_when_and_its_bake_starts() {
    let s = fleet(on("a", "new", NodePhase::Provisioned));
    let p = plan(&s, t(5), &bake(1, 60));
    let recorded: Vec<_> = (p.actions.iter())
        .filter_map(|a| match a {
            Action::RecordDispatch { node, record, .. } => Some((node.as_str(), record.settled_at)),
            _ => None,
        })
        .collect();
    assert_eq!(recorded, vec![("a", Some(t(5)))]);
    assert_eq!(dispatched(&p), pairs(&[]));
}

#[test]
fn without_a_bake_time_nothing_is_recorded_and_the_slot_frees_at_once() {
    let s = fleet(on("a", "new", NodePhase::Provisioned));
    let p = plan(&s, t(5), &limit(1));
    assert!(
        !p.actions
            .iter()
            .any(|a| matches!(a, Action::RecordDispatch { .. })),
        "{p:?}"
    );
    assert_eq!(dispatched(&p), pairs(&[("new", "b")]));
}

#[test]
fn a_record_from_before_bake_times_were_kept_does_not_hold_a_slot() {
    // Dispatched at t(0), long done: an upgrade, or the bake turned on later.
    let s = fleet(on("a", "new", NodePhase::Provisioned));
    let p = plan(&s, t(3_600), &bake(1, 60));
    assert_eq!(dispatched(&p), pairs(&[("new", "b")]));
}

#[test]
fn a_regression_during_the_bake_fails_the_revision_and_its_nodes_go_back() {
    let mut a = settled("a", "new", 10);
    a.health = Health::Regressed {
        since: t(40),
        checks: vec!["tenant-ping".into()],
    };
    let p = plan(&fleet(a), t(41), &bake(1, 60));
    assert_eq!(
        phase_changes(&p),
        vec![("new".to_string(), RevisionPhase::Failed)]
    );
    let Action::SetRevisionPhase { failed_nodes, .. } = &p.actions[0] else {
        panic!("{p:?}")
    };
    assert_eq!(failed_nodes.len(), 1);
    assert_eq!(
        failed_nodes[0].cause,
        FailureCause::BakeRegressed {
            checks: vec!["tenant-ping".into()]
        }
    );
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(dispatched(&p), pairs(&[("old", "a")]));
}

#[test]
fn a_regression_after_the_bake_is_no_bake_failure() {
    let mut a = settled("a", "new", 10);
    a.health = Health::Regressed {
        since: t(75),
        checks: vec!["tenant-ping".into()],
    };
    let settings = Settings {
        guard: netrollout_rollout::guard::GuardMode::Off,
        ..bake(1, 60)
    };
    let p = plan(&fleet(a), t(76), &settings);
    assert_eq!(phase_changes(&p), vec![]);
    assert_eq!(dispatched(&p), pairs(&[("new", "b")]));
}

#[test]
fn a_revision_is_not_succeeded_while_its_last_nodes_bake() {
    let s = State {
        revisions: vec![rev("new", 2, RevisionPhase::Progressing)],
        nodes: vec![settled("a", "new", 10), settled("b", "new", 20)],
    };
    let p = plan(&s, t(50), &bake(2, 60));
    assert_eq!(phase_changes(&p), vec![]);
    assert_eq!(p.summary.bake.as_ref().map(|b| b.until), Some(t(80)));
    let p = plan(&s, t(80), &bake(2, 60));
    assert_eq!(
        phase_changes(&p),
        vec![("new".to_string(), RevisionPhase::Succeeded)]
    );
}

#[test]
fn with_waves_the_next_wave_waits_for_the_bake_of_the_last() {
    let mut s = fleet(settled("a", "new", 10));
    s.nodes[1] = settled("b", "new", 30);
    s.nodes.push(old("d", "old"));
    let waves = Settings {
        strategy: RolloutStrategy::Waves,
        ..bake(2, 60)
    };
    assert_eq!(dispatched(&plan(&s, t(75), &waves)), pairs(&[]));
    assert_eq!(
        dispatched(&plan(&s, t(90), &waves)),
        pairs(&[("new", "c"), ("new", "d")])
    );
}
