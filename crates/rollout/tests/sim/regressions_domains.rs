//! Named failure-domain scenarios (docs/contract.md, "Failure domains"): `--domain-key` racks,
//! `--max-in-flight-per-domain`, `--domain-order=sequential`, `--max-failed-domains`.

use netrollout_rollout::{
    DomainOrder, DomainPolicy, Mode, Node, NodePhase, RevisionPhase, RolloutStrategy, Settings,
    State, UpdateLimit, plan,
};

use crate::regressions::{dispatched, limit, on, pairs, phase_changes, rev, t};

fn racked(mut n: Node, rack: &str) -> Node {
    n.domain = rack.into();
    n
}

/// `name` in `rack`, Provisioned on `revision`.
fn at(name: &str, rack: &str, revision: &str) -> Node {
    racked(on(name, revision, NodePhase::Provisioned), rack)
}

fn domains(limit_n: u32, policy: DomainPolicy) -> Settings {
    Settings {
        domains: Some(policy),
        ..limit(limit_n)
    }
}

fn cap(n: usize) -> DomainPolicy {
    DomainPolicy {
        max_in_flight: n,
        ..DomainPolicy::default()
    }
}

fn sequential() -> DomainPolicy {
    DomainPolicy {
        order: DomainOrder::Sequential,
        ..cap(2)
    }
}

/// Two racks of three nodes on `old`, `new` pending.
fn two_racks() -> State {
    State {
        revisions: vec![
            rev("old", 1, RevisionPhase::Succeeded),
            rev("new", 2, RevisionPhase::Pending),
        ],
        nodes: vec![
            at("a1", "rack-a", "old"),
            at("a2", "rack-a", "old"),
            at("a3", "rack-a", "old"),
            at("b1", "rack-b", "old"),
            at("b2", "rack-b", "old"),
            at("b3", "rack-b", "old"),
        ],
    }
}

#[test]
fn with_one_per_domain_no_two_nodes_of_a_rack_go_at_once_however_high_the_limit() {
    let p = plan(&two_racks(), t(1), &domains(6, cap(1)));
    assert_eq!(dispatched(&p), pairs(&[("new", "a1"), ("new", "b1")]));
    let p = plan(&two_racks(), t(1), &domains(6, cap(2)));
    assert_eq!(
        dispatched(&p),
        pairs(&[("new", "a1"), ("new", "a2"), ("new", "b1"), ("new", "b2")])
    );
}

#[test]
fn a_node_of_the_rack_applying_another_revision_holds_the_racks_slot() {
    let mut s = two_racks();
    s.revisions[0].phase = RevisionPhase::Superseded;
    s.nodes[0] = racked(on("a1", "old", NodePhase::Provisioning), "rack-a");
    let p = plan(&s, t(1), &domains(6, cap(1)));
    assert_eq!(dispatched(&p), pairs(&[("new", "b1")]));
}

#[test]
fn nodes_without_the_label_form_one_domain_together() {
    let mut s = two_racks();
    for n in &mut s.nodes {
        n.domain = String::new();
    }
    let p = plan(&s, t(1), &domains(6, cap(1)));
    assert_eq!(dispatched(&p), pairs(&[("new", "a1")]));
}

#[test]
fn waves_wait_until_the_whole_rest_fits_under_the_domain_caps() {
    let mut s = two_racks();
    s.nodes[0] = racked(on("a1", "new", NodePhase::Provisioned), "rack-a");
    s.nodes[3] = racked(on("b1", "new", NodePhase::Provisioning), "rack-b");
    let waves = Settings {
        strategy: RolloutStrategy::Waves,
        ..domains(6, cap(1))
    };
    // a2 could go (rack-a has room), but b1 is still in flight: the wave waits for it.
    let p = plan(&s, t(1), &waves);
    assert_eq!(dispatched(&p), pairs(&[]));
    // The window fills the free slot of rack-a at once.
    let p = plan(&s, t(1), &domains(6, cap(1)));
    assert_eq!(dispatched(&p), pairs(&[("new", "a2")]));
}

#[test]
fn in_sequence_a_rack_is_finished_before_the_next_one_starts() {
    let mut s = two_racks();
    s.nodes[0] = at("a1", "rack-a", "new");
    let p = plan(&s, t(1), &domains(6, sequential()));
    assert_eq!(dispatched(&p), pairs(&[("new", "a2"), ("new", "a3")]));
}

#[test]
fn in_sequence_the_next_rack_waits_for_the_last_nodes_of_the_current_one() {
    let mut s = two_racks();
    s.nodes[0] = at("a1", "rack-a", "new");
    s.nodes[1] = at("a2", "rack-a", "new");
    s.nodes[2] = racked(on("a3", "new", NodePhase::Provisioning), "rack-a");
    let p = plan(&s, t(1), &domains(6, sequential()));
    assert_eq!(dispatched(&p), pairs(&[]), "rack-b waits for a3");
    s.nodes[2] = at("a3", "rack-a", "new");
    let p = plan(&s, t(2), &domains(6, sequential()));
    assert_eq!(dispatched(&p), pairs(&[("new", "b1"), ("new", "b2")]));
}

#[test]
fn in_sequence_the_canarys_rack_goes_first() {
    let mut s = two_racks();
    s.nodes[4].canary = true;
    let p = plan(&s, t(1), &domains(6, sequential()));
    assert_eq!(dispatched(&p), pairs(&[("new", "b2"), ("new", "b1")]));
}

#[test]
fn a_failure_in_a_second_domain_fails_the_revision_within_the_node_budget() {
    let mut s = two_racks();
    s.revisions[1].phase = RevisionPhase::Progressing;
    s.nodes[0] = racked(on("a1", "new", NodePhase::Failed), "rack-a");
    let budget = DomainPolicy {
        max_failed: Some(1),
        ..cap(1)
    };
    let settings = Settings {
        max_failures: 5,
        ..domains(6, budget)
    };
    // One failed rack is within the budget: the rollout goes on.
    let p = plan(&s, t(1), &settings);
    assert_eq!(phase_changes(&p), vec![]);
    assert_eq!(p.summary.mode, Mode::RollingOut);
    // A failure in a second rack fails it, though 2 failed nodes are within --max-failures=5.
    s.nodes[3] = racked(on("b1", "new", NodePhase::Failed), "rack-b");
    let p = plan(&s, t(1), &settings);
    assert_eq!(
        phase_changes(&p),
        vec![("new".to_string(), RevisionPhase::Failed)]
    );
    let reason = p.actions[0].reason();
    assert!(reason.contains("--max-failed-domains=1"), "{reason}");
    assert_eq!(p.summary.mode, Mode::RollingBack);
    // A second failure in the same rack does not.
    s.nodes[3] = racked(on("b1", "new", NodePhase::Failed), "rack-a");
    assert_eq!(phase_changes(&plan(&s, t(1), &settings)), vec![]);
}

#[test]
fn an_apply_timeout_counts_for_its_domain() {
    let mut s = two_racks();
    s.revisions[1].phase = RevisionPhase::Progressing;
    s.nodes[0] = racked(on("a1", "new", NodePhase::Failed), "rack-a");
    s.nodes[3] = racked(on("b1", "new", NodePhase::Provisioning), "rack-b");
    let settings = Settings {
        max_failures: 5,
        ..domains(
            6,
            DomainPolicy {
                max_failed: Some(1),
                ..cap(1)
            },
        )
    };
    assert_eq!(phase_changes(&plan(&s, t(60), &settings)), vec![]);
    let p = plan(&s, t(600), &settings);
    assert_eq!(
        phase_changes(&p),
        vec![("new".to_string(), RevisionPhase::Failed)]
    );
}

#[test]
fn a_rollback_keeps_to_the_domain_cap_too() {
    let s = State {
        revisions: vec![
            rev("good", 1, RevisionPhase::Succeeded),
            rev("bad", 2, RevisionPhase::Failed),
        ],
        nodes: vec![
            racked(on("a1", "bad", NodePhase::Failed), "rack-a"),
            at("a2", "rack-a", "bad"),
            at("b1", "rack-b", "bad"),
        ],
    };
    let p = plan(&s, t(1), &domains(3, cap(1)));
    assert_eq!(p.summary.mode, Mode::RollingBack);
    assert_eq!(dispatched(&p), pairs(&[("good", "a1"), ("good", "b1")]));
}

#[test]
fn without_a_domain_key_the_labels_change_nothing() {
    let s = two_racks();
    let p = plan(
        &s,
        t(1),
        &Settings {
            update_limit: UpdateLimit::Count(6),
            ..Settings::default()
        },
    );
    assert_eq!(dispatched(&p).len(), 6);
}
