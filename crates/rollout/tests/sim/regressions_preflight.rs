//! Named pre-flight scenarios (docs/contract.md, "Pre-flight"): a revision whose config needs
//! what a node lacks.

use netrollout_rollout::{DispatchKind, Mode, NodePhase, RevisionPhase, State, Unmet, plan};

use crate::regressions::{dispatched, kinds, limit, on, pairs, rev, t};

fn lacking(node: &str, what: &str) -> Unmet {
    Unmet {
        node: node.into(),
        missing: vec![what.into()],
    }
}

fn fleet(new_unmet: Vec<Unmet>) -> State {
    let mut new = rev("new", 2, RevisionPhase::Pending);
    new.unmet = new_unmet;
    State {
        revisions: vec![rev("old", 1, RevisionPhase::Succeeded), new],
        nodes: vec![
            on("a", "old", NodePhase::Provisioned),
            on("b", "old", NodePhase::Provisioned),
            on("c", "old", NodePhase::Provisioned),
        ],
    }
}

#[test]
fn a_revision_needing_what_one_node_lacks_is_dispatched_to_no_node_and_the_node_is_named() {
    let p = plan(&fleet(vec![lacking("b", "vrf")]), t(60), &limit(3));
    assert_eq!(dispatched(&p), pairs(&[]), "nothing half rolled out");
    assert!(p.summary.held);
    assert_eq!(p.summary.unmet, vec![lacking("b", "vrf")]);
    assert_eq!(p.summary.mode, Mode::RollingOut);
    assert_eq!(p.summary.target.as_deref(), Some("new"));
}

#[test]
fn once_the_node_reports_what_was_missing_the_rollout_proceeds_on_its_own() {
    let p = plan(&fleet(Vec::new()), t(60), &limit(3));
    assert_eq!(
        dispatched(&p),
        pairs(&[("new", "a"), ("new", "b"), ("new", "c")])
    );
    assert!(!p.summary.held && p.summary.unmet.is_empty());
}

#[test]
fn a_node_that_already_runs_the_revision_does_not_hold_it() {
    let mut s = fleet(vec![lacking("a", "vrf")]);
    s.nodes[0] = on("a", "new", NodePhase::Provisioned);
    let p = plan(&s, t(60), &limit(3));
    assert_eq!(dispatched(&p), pairs(&[("new", "b"), ("new", "c")]));
    assert!(!p.summary.held);
}

#[test]
fn a_leaving_node_that_lacks_a_capability_does_not_hold_the_rollout() {
    let mut s = fleet(vec![lacking("c", "dummy")]);
    s.nodes[2].deleting = true;
    let p = plan(&s, t(60), &limit(3));
    assert_eq!(dispatched(&p), pairs(&[("new", "a"), ("new", "b")]));
}

#[test]
fn a_rollback_is_never_held_but_skips_a_node_that_lacks_what_the_known_good_revision_needs() {
    let mut good = rev("good", 1, RevisionPhase::Succeeded);
    good.unmet = vec![lacking("b", "vrf")];
    let s = State {
        revisions: vec![good, rev("bad", 2, RevisionPhase::Failed)],
        nodes: vec![
            on("a", "bad", NodePhase::Failed),
            on("b", "bad", NodePhase::Failed),
        ],
    };
    let p = plan(&s, t(60), &limit(2));
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(dispatched(&p), pairs(&[("good", "a")]));
    assert_eq!(kinds(&p), vec![DispatchKind::Rollback]);
}

#[test]
fn a_joining_node_that_lacks_what_a_succeeded_target_needs_waits_without_holding_others() {
    let mut done = rev("done", 1, RevisionPhase::Succeeded);
    done.unmet = vec![lacking("new-1", "vrf")];
    let s = State {
        revisions: vec![done],
        nodes: vec![
            on("a", "done", NodePhase::Provisioned),
            netrollout_rollout::Node::new("new-1"),
            netrollout_rollout::Node::new("new-2"),
        ],
    };
    let p = plan(&s, t(60), &limit(2));
    assert_eq!(dispatched(&p), pairs(&[("done", "new-2")]));
    assert!(!p.summary.held);
    assert_eq!(p.summary.unmet, vec![lacking("new-1", "vrf")]);
}
