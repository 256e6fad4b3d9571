//! Named regression scenarios of the two rollout strategies (docs/contract.md, "The plan"): waves
//! move in lock-step, each waiting for its slowest node; the window fills each slot as it frees.
//! The builders are `regressions`'.

use netrollout_rollout::{
    NodePhase, RevisionPhase, RolloutStrategy, Settings, State, UpdateLimit, plan,
};

use crate::agent::{Agent, Behavior};
use crate::lifecycle::Inputs;
use crate::regressions::{dispatched, limit, on, pairs, rev, t};
use crate::world::World;

#[test]
fn a_healthy_fleet_of_twenty_nodes_with_limit_five_takes_four_waves() {
    let mut w = World::new(7, limit(5));
    for i in 0..20 {
        w.add_node(i % 3, false, Agent::new(Behavior::Healthy, 1));
    }
    let base = w.change_inputs(0);
    w.converge_on(&base);
    let target = w.change_inputs(1);
    let mut waves = 0;
    for _ in 0..40 {
        w.step_agents();
        let (p, _) = w.configurator_pass();
        waves += usize::from(dispatched(&p).iter().any(|d| d.0 == target));
        w.advance();
    }
    assert_eq!(waves, 4);
    assert!(
        w.state
            .nodes
            .iter()
            .all(|n| n.spec_revision.as_ref() == Some(&target))
    );
    assert_eq!(
        w.state
            .revisions
            .iter()
            .find(|r| r.name == target)
            .map(|r| r.phase),
        Some(RevisionPhase::Succeeded)
    );
}

#[test]
fn waves_wait_for_the_slowest_node_while_a_window_fills_each_slot_as_it_frees() {
    // Two of four nodes moved to r2: a finished, b still applying; c and d still on r1.
    let state = State {
        revisions: vec![
            rev("r1", 1, RevisionPhase::Succeeded),
            rev("r2", 2, RevisionPhase::Progressing),
        ],
        nodes: vec![
            on("a", "r2", NodePhase::Provisioned),
            on("b", "r2", NodePhase::Provisioning),
            on("c", "r1", NodePhase::Provisioned),
            on("d", "r1", NodePhase::Provisioned),
        ],
    };
    let waves = Settings {
        strategy: RolloutStrategy::Waves,
        ..limit(2)
    };
    assert_eq!(limit(2).strategy, RolloutStrategy::Window, "the default");
    assert_eq!(dispatched(&plan(&state, t(1), &waves)), vec![]);
    let window = Settings {
        strategy: RolloutStrategy::Window,
        ..limit(2)
    };
    let p = plan(&state, t(1), &window);
    assert_eq!(dispatched(&p), pairs(&[("r2", "c")]));
    assert_eq!(p.summary.in_flight, 2);
    // The limit still holds: with both slots taken nothing more moves.
    let mut full = state.clone();
    full.nodes[0] = on("a", "r2", NodePhase::Provisioning);
    assert_eq!(dispatched(&plan(&full, t(1), &window)), vec![]);
    // Once b finishes too, waves move the next whole wave, as the window would.
    let mut done = state;
    done.nodes[1] = on("b", "r2", NodePhase::Provisioned);
    assert_eq!(
        dispatched(&plan(&done, t(1), &waves)),
        pairs(&[("r2", "c"), ("r2", "d")])
    );
    assert_eq!(
        dispatched(&plan(&done, t(1), &window)),
        pairs(&[("r2", "c"), ("r2", "d")])
    );
}

#[test]
fn a_rollout_split_by_failed_writes_and_restarts_dispatches_in_the_order_of_one_pass() {
    for seed in 0..60 {
        let mut w = World::new(seed, limit(1));
        let (nodes, zones) = (w.rng.range(2, 30), w.rng.range(1, 4));
        w.settings = limit(w.rng.range(1, 5) as u32);
        for i in 0..nodes {
            let steps = w.rng.range(1, 3) as u32;
            w.add_node(i % zones, false, Agent::new(Behavior::Healthy, steps));
        }
        let base = w.change_inputs(0);
        w.converge_on(&base);
        let target = w.change_inputs(1);
        // The order one pass gives with a slot for every node.
        let all = Settings {
            update_limit: UpdateLimit::Percent(100),
            ..w.settings.clone()
        };
        let expected: Vec<String> = dispatched(&plan(&w.state, w.now, &all))
            .into_iter()
            .map(|d| d.1)
            .collect();
        // Writes fail and the configurator crashes mid-pass: waves split over passes.
        (w.write_fail_pct, w.crash_pct) = (30, 10);
        let mut order: Vec<String> = Vec::new();
        for _ in 0..400 {
            w.step_agents();
            if let Err(e) = w.check_fleet() {
                panic!("seed {seed}: {e}\n{}", w.log.join("\n"));
            }
            let (p, _) = w.configurator_pass();
            for (rev, node) in dispatched(&p) {
                let moved =
                    w.state.nodes.iter().any(|n| {
                        n.name == node && n.spec_revision.as_deref() == Some(rev.as_str())
                    });
                if rev == target && moved && !order.contains(&node) {
                    order.push(node);
                }
            }
            w.advance();
            if order.len() == expected.len() {
                break;
            }
        }
        assert_eq!(order, expected, "seed {seed}\n{}", w.log.join("\n"));
    }
}
