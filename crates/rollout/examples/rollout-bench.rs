//! Benchmarks of the planner, printed as rows for `hack/bench.sh` (tab-separated: area,
//! benchmark, measured, baseline, ratio, goal). Run in release:
//! `cargo run --release -p netrollout-rollout --example rollout-bench`.
//!
//! 1. One planning pass over 1,000, 10,000 and 50,000 nodes and 3 revisions, mid-rollout, that
//!    dispatches a wave of 1 % of the fleet, planned from a kept `Fleet` (`plan_with`, as the
//!    configurator plans; goal: under 2 ms at 10,000 and 50,000). Timed as the fastest of 201
//!    passes, because the machine is shared and a median measures the neighbours (the median is
//!    printed too). Baseline: the same pass with the fleet indexed from scratch (`plan`), what
//!    every pass would cost without the kept index.
//! 2. The simulated rollout of 1,000 healthy nodes with update limit 50 and agents applying in
//!    one step: waves used against the ideal ceil(1000 / 50) = 20 (goal: ratio 1.00).
//! 3. The simulated rollout of 1,000 nodes (limit 50) and 10,000 nodes (limit 500) whose agents
//!    take 100-400 ms (uniform, seeded), with each strategy, in virtual time (10 ms steps, one
//!    configurator pass per step). Baseline: the ideal for that spread, every slot always busy:
//!    max(sum of apply times / limit, slowest apply).

use std::hint::black_box;
use std::time::{Duration, Instant};

use netrollout_rollout::sim::{agent, rng, world};
use netrollout_rollout::{
    Action, DispatchRecord, Fleet, Node, NodePhase, NodeStatus, Revision, RevisionPhase,
    RolloutStrategy, Settings, State, Timestamp, UpdateLimit, plan, plan_with,
};

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
            node.zone = format!("zone-{}", i % 3);
            node.canary = i % 97 == 0;
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
                    reason: None,
                    message: None,
                });
                node.dispatch = Some(DispatchRecord {
                    revision: r.into(),
                    at: Timestamp::from_millis(0),
                    previous: None,
                    picked_up_at: Some(Timestamp::from_millis(1)),
                    sequence: None,
                    settled_at: None,
                });
            }
            node.ready = i % 250 != 0;
            node
        })
        .collect();
    State { revisions, nodes }
}

/// Fastest and median of `runs` timings of `f`.
fn timed(mut f: impl FnMut(), runs: usize) -> (Duration, Duration) {
    let mut v: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    v.sort();
    (v[0], v[runs / 2])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A planning pass over `n` nodes: the fastest and median from the kept fleet, and the
/// fastest with the fleet indexed from scratch; checks that both dispatch the same full wave.
struct PassTimes {
    kept: Duration,
    kept_median: Duration,
    scratch: Duration,
}

fn pass(n: usize) -> PassTimes {
    let state = fleet(n);
    let kept = Fleet::from_nodes(state.nodes.iter().cloned());
    let settings = Settings {
        update_limit: UpdateLimit::Percent(1),
        ..Settings::default()
    };
    let now = Timestamp::from_millis(60_000);
    let p = plan_with(&state, &kept, now, &settings);
    assert_eq!(
        p,
        plan(&state, now, &settings),
        "the kept fleet plans alike"
    );
    let dispatched: usize = p
        .actions
        .iter()
        .map(|a| match a {
            Action::Dispatch { nodes, .. } => nodes.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(
        dispatched,
        n / 100,
        "the benchmark pass must dispatch a full wave"
    );
    let (fastest, median) = timed(
        || {
            black_box(plan_with(
                black_box(&state),
                black_box(&kept),
                now,
                &settings,
            ));
        },
        201,
    );
    let (scratch, _) = timed(
        || {
            black_box(plan(black_box(&state), now, &settings));
        },
        21,
    );
    PassTimes {
        kept: fastest,
        kept_median: median,
        scratch,
    }
}

fn main() {
    for n in [1_000, 10_000, 50_000] {
        let t = pass(n);
        let goal = if n == 1_000 { "-" } else { "< 2 ms" };
        println!(
            "rollout\tplan pass from the kept fleet, {n} nodes, 3 revisions, a wave of {}\t{:.3} ms (median {:.3})\t{:.3} ms (fleet indexed from scratch)\t{:.3}\t{goal}",
            n / 100,
            ms(t.kept),
            ms(t.kept_median),
            ms(t.scratch),
            ms(t.kept) / ms(t.scratch)
        );
    }

    let (waves, nodes) = simulated_rollout(1_000, 50);
    let ideal = nodes.div_ceil(50);
    println!(
        "rollout\tsimulated rollout (waves), {nodes} nodes, limit 50\t{waves} waves\t{ideal} waves (ideal)\t{:.2}\t= 20 waves (1.00)",
        waves as f64 / ideal as f64
    );

    for (n, limit) in [(1_000, 50), (10_000, 500)] {
        for strategy in RolloutStrategy::ALL {
            let r = varied_rollout(n, limit, strategy);
            let goal = match strategy {
                RolloutStrategy::Waves => "none (each wave waits for its slowest node)",
                RolloutStrategy::Window => "<= 1.1x",
            };
            println!(
                "rollout\tsimulated {strategy} rollout, {n} nodes, limit {limit}, agents 100-400 ms\t{:.2} s\t{:.2} s (ideal for the spread)\t{:.2}\t{goal}",
                r.took.as_secs_f64(),
                r.ideal.as_secs_f64(),
                r.took.as_secs_f64() / r.ideal.as_secs_f64()
            );
        }
    }
}
/// Roll a new revision out to a converged fleet of healthy agents; count the passes that
/// dispatched it.
fn simulated_rollout(n: u64, limit: u32) -> (usize, usize) {
    let settings = Settings {
        update_limit: UpdateLimit::Count(limit),
        strategy: RolloutStrategy::Waves,
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

/// How long a rollout with varied apply times took, against the ideal for that spread.
struct Varied {
    took: Duration,
    ideal: Duration,
}

/// Virtual time per simulated step and configurator pass.
const VARIED_STEP_MS: u64 = 10;

/// Roll a new revision out to `n` converged nodes whose agents take 100-400 ms (uniform,
/// seeded; the same fleet for every strategy), one configurator pass per 10 ms step.
fn varied_rollout(n: u64, limit: u32, strategy: RolloutStrategy) -> Varied {
    let settings = Settings {
        update_limit: UpdateLimit::Count(limit),
        strategy,
        ..Settings::default()
    };
    let mut w = world::World::new(1, settings);
    w.step_ms = VARIED_STEP_MS;
    let mut times = rng::Rng::new(42);
    let mut total_ms = 0;
    let mut slowest_ms = 0;
    for i in 0..n {
        // An agent occupies its slot for apply_steps + 1 steps (it reports Provisioning first).
        let apply_ms = times.range(10, 40) * VARIED_STEP_MS;
        total_ms += apply_ms;
        slowest_ms = slowest_ms.max(apply_ms);
        let steps = (apply_ms / VARIED_STEP_MS - 1) as u32;
        w.add_node(
            i % 3,
            i % 100 == 0,
            agent::Agent::new(agent::Behavior::Healthy, steps),
        );
    }
    let base = w.add_revision(0);
    w.converge_on(&base);
    let target = w.add_revision(1);
    let start = w.now;
    for _ in 0..1_000_000 {
        w.step_agents();
        w.configurator_pass();
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
    let ideal_ms = (total_ms / u64::from(limit)).max(slowest_ms);
    Varied {
        took: Duration::from_millis(w.now.as_millis() - start.as_millis()),
        ideal: Duration::from_millis(ideal_ms),
    }
}
