//! Benchmarks of the planner, printed as rows for `hack/bench.sh` (tab-separated: area,
//! benchmark, measured, baseline, ratio, goal). Run in release:
//! `cargo run --release -p netrollout-rollout --example rollout-bench`.
//!
//! 1. One planning pass over 10,000 nodes and 3 revisions (goal: under 5 ms). Baseline: sorting
//!    the 10,000 node names once (the planner orders nodes, so no pass can be much cheaper).
//! 2. The simulated rollout of 1,000 healthy nodes with update limit 50: waves used against the
//!    ideal ceil(1000 / 50) = 20 (goal: ratio 1.00).

use std::hint::black_box;
use std::time::{Duration, Instant};

use netrollout_rollout::{
    Action, CANARY_LABEL, DispatchRecord, Node, NodePhase, NodeStatus, Revision, RevisionPhase,
    Settings, State, Timestamp, UpdateLimit, ZONE_LABEL, plan,
};
use netrollout_testkit::sim::{agent, world};

fn fleet(n: usize) -> State {
    let mut revisions = vec![
        Revision::new("ncr-a", 1, "a"),
        Revision::new("ncr-b", 2, "b"),
        Revision::new("ncr-c", 3, "c"),
    ];
    revisions[0].phase = RevisionPhase::Succeeded;
    revisions[1].phase = RevisionPhase::Superseded;
    revisions[2].phase = RevisionPhase::Progressing;
    let nodes = (0..n)
        .map(|i| {
            let mut node = Node::new(format!("worker-{i:05}"));
            node.labels
                .insert(ZONE_LABEL.into(), format!("zone-{}", i % 3));
            node.labels
                .insert("kubernetes.io/hostname".into(), node.name.clone());
            if i % 97 == 0 {
                node.labels.insert(CANARY_LABEL.into(), "true".into());
            }
            let rev = match i % 10 {
                0..=5 => Some("ncr-a"),
                6 => Some("ncr-b"),
                7 | 8 => Some("ncr-c"),
                _ if i % 20 == 9 => None,
                _ => Some("ncr-a"),
            };
            if let Some(r) = rev {
                node.spec_revision = Some(r.into());
                node.status = Some(NodeStatus {
                    observed_revision: r.into(),
                    phase: NodePhase::Provisioned,
                    started_at: None,
                    finished_at: None,
                    message: None,
                });
                node.dispatch = Some(DispatchRecord {
                    revision: r.into(),
                    at: Timestamp::from_millis(0),
                    previous: None,
                    picked_up_at: Some(Timestamp::from_millis(1)),
                });
            }
            node.ready = i % 250 != 0;
            node
        })
        .collect();
    State { revisions, nodes }
}

fn median(mut f: impl FnMut() -> Duration, runs: usize) -> Duration {
    let mut v: Vec<Duration> = (0..runs).map(|_| f()).collect();
    v.sort();
    v[runs / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let state = fleet(10_000);
    let settings = Settings {
        update_limit: UpdateLimit::Percent(1),
        ..Settings::default()
    };
    let now = Timestamp::from_millis(60_000);
    let p = plan(&state, now, &settings);
    let dispatched: usize = p
        .actions
        .iter()
        .map(|a| match a {
            Action::Dispatch { nodes, .. } => nodes.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(
        dispatched, 100,
        "the benchmark pass must dispatch a full wave"
    );
    let pass = median(
        || {
            let t = Instant::now();
            black_box(plan(black_box(&state), now, &settings));
            t.elapsed()
        },
        101,
    );
    let sort = median(
        || {
            let t = Instant::now();
            let mut names: Vec<&str> = state.nodes.iter().map(|n| n.name.as_str()).collect();
            names.sort_unstable_by(|a, b| b.cmp(a));
            black_box(names);
            t.elapsed()
        },
        101,
    );
    println!(
        "rollout\tplan pass, 10000 nodes, 3 revisions\t{:.2} ms\t{:.2} ms (sort node names)\t{:.2}\t< 5 ms",
        ms(pass),
        ms(sort),
        ms(pass) / ms(sort)
    );

    let (waves, nodes) = simulated_rollout(1_000, 50);
    let ideal = nodes.div_ceil(50);
    println!(
        "rollout\tsimulated rollout, {nodes} nodes, limit 50\t{waves} waves\t{ideal} waves (ideal)\t{:.2}\t= 20 waves (1.00)",
        waves as f64 / ideal as f64
    );
}

/// Roll a new revision out to a converged fleet of healthy agents; count the passes that
/// dispatched it.
fn simulated_rollout(n: u64, limit: u32) -> (usize, usize) {
    let settings = Settings {
        update_limit: UpdateLimit::Count(limit),
        ..Settings::default()
    };
    let mut w = world::World::new(1, settings);
    for i in 0..n {
        w.add_node(
            i % 3,
            i % 100 == 0,
            agent::Agent::new(agent::Behavior::Healthy, 1),
        );
    }
    let base = w.add_revision(0);
    w.converge_on(&base);
    let target = w.add_revision(1);
    let mut waves = 0;
    for _ in 0..1_000 {
        w.step_agents();
        let (p, _) = w.configurator_pass();
        waves += usize::from(
            p.actions
                .iter()
                .any(|a| matches!(a, Action::Dispatch { revision, .. } if *revision == target)),
        );
        let done = w
            .state
            .revisions
            .iter()
            .any(|r| r.name == target && r.phase == RevisionPhase::Succeeded);
        if done {
            break;
        }
        w.advance();
    }
    (waves, w.state.nodes.len())
}
