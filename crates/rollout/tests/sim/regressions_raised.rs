//! Named regression scenarios for a revision that is the target again (its sequence raised: an
//! undo, inputs returning to its content, a retry): it is rolled out like a new one
//! (docs/contract.md, "Failure", "Fleet guard" and "Analysis gates").
//!
//! The fleet: `a` Succeeded long ago (sequence 1) and c, d still run it from that rollout
//! (dispatched at t(0)); `b` (sequence 2) rolled out to e, f at t(30). The inputs return to
//! `a`'s content: its sequence is raised to 3.

use netrollout_rollout::analysis::{Analysis, Verdict};
use netrollout_rollout::guard::{GuardMode, Health};
use netrollout_rollout::{
    DispatchRecord, Mode, Node, NodePhase, RevisionPhase, Settings, State, plan,
};

use crate::regressions::{dispatched, limit, on, pairs, phase_changes, rev, t};

/// A node on `revision` (Provisioned or applying), dispatched at `secs` while `revision` had
/// sequence `sequence` (the targeting the dispatch belongs to).
fn node(name: &str, revision: &str, phase: NodePhase, secs: u64, sequence: u64) -> Node {
    let mut n = on(name, revision, phase);
    n.dispatch = Some(DispatchRecord {
        revision: revision.into(),
        at: t(secs),
        previous: None,
        picked_up_at: (phase == NodePhase::Provisioning).then(|| t(secs)),
        sequence: Some(sequence),
        settled_at: None,
    });
    n
}

fn regressed(mut n: Node, since_secs: u64) -> Node {
    n.health = Health::Regressed {
        since: t(since_secs),
        checks: vec!["tenant-a".into()],
    };
    n
}

/// The fleet of this file: `d` regressed at t(20), after `a`'s old dispatch and before `b`'s
/// wave; `a` raised to sequence 3.
fn raised() -> State {
    State {
        revisions: vec![
            rev("a", 3, RevisionPhase::Succeeded),
            rev("b", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            node("c", "a", NodePhase::Provisioned, 0, 1),
            regressed(node("d", "a", NodePhase::Provisioned, 0, 1), 20),
            node("e", "b", NodePhase::Provisioned, 30, 2),
            node("f", "b", NodePhase::Provisioned, 30, 2),
        ],
    }
}

fn guard(mode: GuardMode) -> Settings {
    Settings {
        guard: mode,
        ..limit(2)
    }
}

#[test]
fn the_guard_never_fails_a_raised_revision_for_a_regression_before_its_new_first_dispatch() {
    for mode in [GuardMode::Revert, GuardMode::Halt] {
        let s = guard(mode);
        // First pass after the raise: nothing of the current targeting is dispatched, so there
        // is no wave and the guard is quiet; the old dispatch of c and d at t(0) is not one.
        let p = plan(&raised(), t(40), &s);
        assert!(p.summary.guard.is_none(), "{mode}: {p:?}");
        assert!(
            phase_changes(&p)
                .iter()
                .all(|(_, phase)| *phase != RevisionPhase::Failed),
            "{mode}: {p:?}"
        );
        assert_eq!(p.summary.mode, Mode::RollingOut, "{mode}");
        assert_eq!(
            dispatched(&p),
            pairs(&[("a", "e"), ("a", "f")]),
            "{mode}: a rolls out again like a new revision"
        );
        // Its new wave is in flight (dispatched at t(40) under sequence 3): d, regressed since
        // before it, still does not count; e regressing now does.
        let mut state = raised();
        state.revisions[0].phase = RevisionPhase::Progressing;
        state.revisions[1].phase = RevisionPhase::Superseded;
        state.nodes[2] = node("e", "a", NodePhase::Provisioning, 40, 3);
        state.nodes[3] = node("f", "a", NodePhase::Provisioning, 40, 3);
        let p = plan(&state, t(45), &s);
        assert!(p.summary.guard.is_none(), "{mode}: {p:?}");
        assert!(phase_changes(&p).is_empty(), "{mode}: {p:?}");
        state.nodes[2] = regressed(state.nodes[2].clone(), 44);
        let p = plan(&state, t(45), &s);
        let g = p
            .summary
            .guard
            .as_ref()
            .expect("e regressed during a's new wave");
        assert_eq!(g.revision, "a");
        assert_eq!(g.wave_start, t(40));
        assert_eq!(g.wave, ["e", "f"]);
        let names: Vec<&str> = g.regressed.iter().map(|r| r.node.as_str()).collect();
        assert_eq!(names, ["e"], "{mode}: d regressed before the wave");
        assert_eq!(
            phase_changes(&p),
            [("a".to_string(), RevisionPhase::Failed)]
        );
    }
}

#[test]
fn a_dispatch_record_without_a_targeting_starts_no_wave() {
    // A record written before dispatches named their targeting belongs to no current wave.
    let mut state = raised();
    for n in &mut state.nodes {
        if let Some(d) = n.dispatch.as_mut() {
            d.sequence = None;
        }
    }
    let p = plan(&state, t(40), &guard(GuardMode::Revert));
    assert!(p.summary.guard.is_none(), "{p:?}");
    assert_eq!(dispatched(&p), pairs(&[("a", "e"), ("a", "f")]));
}

/// `a` gated by one check: its last rollout passed with all four nodes, under sequence 1.
fn gated_raised() -> State {
    let mut state = raised();
    state.nodes[1].health = Health::Healthy;
    state.revisions[0].analysis = Analysis {
        checks: 1,
        verdict: Verdict::Passed { nodes: 4 },
        sequence: Some(1),
        ..Analysis::default()
    };
    state
}

#[test]
fn a_raised_gated_revision_is_measured_afresh_before_any_node_gets_it_and_before_it_succeeds() {
    let s = limit(2);
    // The pass that raised it: its old verdict speaks for another rollout. The nodes that run
    // it are measured first; no node gets it meanwhile.
    let p = plan(&gated_raised(), t(40), &s);
    assert!(dispatched(&p).is_empty(), "{p:?}");
    let g = p.summary.analysis.as_ref().expect("a is gated again");
    assert!(g.due && g.held && g.nodes == 2, "{g:?}");
    assert_eq!(
        g.sequence, 3,
        "the verdict is written for the current sequence"
    );
    // Passed under sequence 3 with c and d: the next wave goes out.
    let mut state = gated_raised();
    state.revisions[0].phase = RevisionPhase::Progressing;
    state.revisions[1].phase = RevisionPhase::Superseded;
    state.revisions[0].analysis.verdict = Verdict::Passed { nodes: 2 };
    state.revisions[0].analysis.sequence = Some(3);
    let p = plan(&state, t(50), &s);
    assert_eq!(dispatched(&p), pairs(&[("a", "e"), ("a", "f")]));
    // Every node on it: Succeeded only once it passed with all four under sequence 3, not on
    // the strength of the old rollout's verdict.
    state.nodes[2] = node("e", "a", NodePhase::Provisioned, 50, 3);
    state.nodes[3] = node("f", "a", NodePhase::Provisioned, 50, 3);
    state.revisions[0].analysis.sequence = Some(1);
    state.revisions[0].analysis.verdict = Verdict::Passed { nodes: 4 };
    let p = plan(&state, t(60), &s);
    assert!(phase_changes(&p).is_empty(), "{p:?}");
    assert!(
        p.summary
            .analysis
            .as_ref()
            .is_some_and(|g| g.due && g.nodes == 4)
    );
    state.revisions[0].analysis.sequence = Some(3);
    let p = plan(&state, t(60), &s);
    assert_eq!(
        phase_changes(&p),
        [("a".to_string(), RevisionPhase::Succeeded)]
    );
    // A failure under the old sequence does not fail it either; one under the current does.
    state.revisions[0].analysis.verdict = Verdict::Failed {
        message: "check tenants/lost: result 3".into(),
    };
    state.revisions[0].analysis.sequence = Some(1);
    let p = plan(&state, t(60), &s);
    assert!(
        !phase_changes(&p).contains(&("a".to_string(), RevisionPhase::Failed)),
        "{p:?}"
    );
    state.revisions[0].analysis.sequence = Some(3);
    let p = plan(&state, t(60), &s);
    assert_eq!(
        phase_changes(&p),
        [("a".to_string(), RevisionPhase::Failed)]
    );
}
