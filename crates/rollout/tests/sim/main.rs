//! The deterministic fleet simulator for the rollout planner (virtual time, seeded randomness,
//! invariants after every step). Replay one seed with
//! `SIM_SEED=<seed> cargo test -p netrollout-rollout --test sim`; `SIM_SCENARIOS=<n>` changes
//! how many seeds run (default 10,000).
//!
//! Layout: `rng` (SplitMix64), `agent` (simulated agents), `world` (API state, faults,
//! configurator), `check` (the invariants; `slots`: the window's and the awaited nodes'), `scenario` (chaos scenarios), `waves` (healthy fleets' waves),
//! `regressions` (one named scenario per rule of the contract (docs/contract.md)), `lifecycle`
//! (the revision lifecycle decides the revisions when the simulated inputs change, and its
//! invariants are checked at every decision), `guard` (the fleet guard's world and invariants),
//! `preflight` (nodes lacking what a revision needs, and its invariants), `analysis` (revisions
//! gated by analysis checks that pass, fail or are inconclusive, and its invariants),
//! `domains` (failure domains: racks under a cap, in sequence, with a budget of failed racks),
//! `bake` (bake time: committed nodes hold their slots; regressions within it fail),
//! `schedule` (maintenance windows and freezes: no rollout outside a window; undo and rollback
//! never held),
//! `approval` (approval gates held until a person promotes; a degraded fleet is not started).

// A test harness: panicking on a bad SIM_SEED or a crashed worker thread is the right failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod analysis;
mod approval;
mod bake;
mod check;
mod domains;
mod guard;
mod lifecycle;
mod preflight;
mod regressions;
mod regressions_approval;
mod regressions_bake;
mod regressions_domains;
mod regressions_failure;
mod regressions_guard;
mod regressions_known_good;
mod regressions_preflight;
mod regressions_raised;
mod regressions_schedule;
mod regressions_waves;
mod scenario;
mod schedule;
mod slots;
mod waves;

// The simulator itself lives beside the planner (`src/sim/`; the benchmark uses it too).
use netrollout_rollout::sim::{agent, rng, world};

use std::panic::{AssertUnwindSafe, catch_unwind};

type Scenario = fn(u64) -> (Result<(), String>, Vec<String>);

fn seeds(env: &str, default: u64) -> Vec<u64> {
    if let Ok(s) = std::env::var("SIM_SEED") {
        return vec![s.parse().expect("SIM_SEED must be a number")];
    }
    let n = std::env::var(env)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    (0..n).collect()
}

/// Run `scenario` for every seed on all cores; fail with the smallest failing seed, its trace
/// and a one-line replay command. Unless one seed is replayed, every marker in `coverage` must
/// appear in some scenario's trace, so the scenarios provably reach every kind of decision.
fn run_all(test: &str, seeds_env: &str, default: u64, scenario: Scenario, coverage: &[&str]) {
    let seeds = seeds(seeds_env, default);
    let verbose = std::env::var("SIM_SEED").is_ok();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4);
    let mut covered = vec![false; coverage.len()];
    let failures: Vec<(u64, String, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let seeds = &seeds;
                s.spawn(move || {
                    let mut out = Vec::new();
                    let mut seen = vec![false; coverage.len()];
                    for &seed in seeds.iter().skip(t).step_by(threads) {
                        let r = catch_unwind(AssertUnwindSafe(|| scenario(seed)));
                        let (result, log) = r.unwrap_or_else(|e| {
                            let msg = e
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                            (
                                Err(format!("panic: {}", msg.unwrap_or_default())),
                                Vec::new(),
                            )
                        });
                        for (i, m) in coverage.iter().enumerate() {
                            seen[i] = seen[i] || log.iter().any(|l| l.contains(m));
                        }
                        if verbose {
                            println!("{}", log.join("\n"));
                        }
                        if let Err(e) = result {
                            out.push((seed, e, log));
                            break;
                        }
                    }
                    (out, seen)
                })
            })
            .collect();
        let mut failures = Vec::new();
        for h in handles {
            let (f, s) = h.join().expect("simulation thread");
            failures.extend(f);
            for (i, seen) in s.into_iter().enumerate() {
                covered[i] |= seen;
            }
        }
        failures
    });
    if let Some((seed, err, log)) = failures.into_iter().min_by_key(|f| f.0) {
        let tail = log.len().saturating_sub(60);
        panic!(
            "scenario with seed {seed} failed: {err}\n--- last trace lines ---\n{}\n--- replay: SIM_SEED={seed} cargo test -p netrollout-rollout --test sim {test}",
            log[tail..].join("\n")
        );
    }
    if !verbose {
        let missing: Vec<&str> = coverage
            .iter()
            .zip(&covered)
            .filter(|(_, c)| !**c)
            .map(|(m, _)| *m)
            .collect();
        assert!(
            missing.is_empty(),
            "no scenario of {test} reached: {missing:?}"
        );
    }
    println!("{test}: {} seeded scenarios passed", seeds.len());
}

/// What every chaos run must reach in some scenario, whatever the strategy.
const CHAOS_COVERAGE: &[&str] = &[
    "-> Progressing",
    "-> Succeeded",
    "-> Superseded",
    "-> Failed: 1 node",
    "-> Failed: 2 node",
    "although it had succeeded before",
    "rollback halted",
    "apply timeout",
    "crashed while applying",
    "probe failed",
    "unresponsive",
    "(Rollout)",
    "(Join)",
    "(Rollback)",
    "newest Succeeded revision",
    "prune ",
    "identical to failed",
    "sequence raised",
    "API write failed",
    "configurator crashed",
    "loses the API server",
    "ready=false",
    "leaving",
    "global pause=true",
    "paused=true",
];

#[test]
fn random_fleet_scenarios_keep_every_invariant_and_converge_once_healed() {
    let mut coverage = CHAOS_COVERAGE.to_vec();
    coverage.push("in waves of at most");
    run_all(
        "random_fleet_scenarios_keep_every_invariant_and_converge_once_healed",
        "SIM_SCENARIOS",
        10_000,
        scenario::chaos,
        &coverage,
    );
}

#[test]
fn random_fleet_scenarios_with_a_window_keep_every_invariant_and_no_idle_slot() {
    let mut coverage = CHAOS_COVERAGE.to_vec();
    coverage.push("in flight (window)");
    run_all(
        "random_fleet_scenarios_with_a_window_keep_every_invariant_and_no_idle_slot",
        "SIM_SCENARIOS",
        10_000,
        scenario::chaos_window,
        &coverage,
    );
}

#[test]
fn random_fleet_scenarios_with_failure_domains_keep_every_invariant() {
    let mut coverage = CHAOS_COVERAGE.to_vec();
    coverage.extend([
        "waits for its domain",
        "order: Sequential",
        "more than --max-failed-domains",
        "rack-none",
    ]);
    run_all(
        "random_fleet_scenarios_with_failure_domains_keep_every_invariant",
        "SIM_SCENARIOS",
        5_000,
        domains::chaos_domains,
        &coverage,
    );
}

#[test]
fn fleets_with_a_bake_time_never_release_a_baking_node_early() {
    run_all(
        "fleets_with_a_bake_time_never_release_a_baking_node_early",
        "SIM_SCENARIOS",
        1_000,
        bake::scenario,
        &[
            "baking",
            "health regressed=true",
            "regressed within the bake time",
            "(Rollout)",
            "(Rollback)",
            "-> Succeeded",
            "-> converged on",
        ],
    );
}

#[test]
fn fleets_under_a_maintenance_schedule_dispatch_a_rollout_only_inside_a_window() {
    run_all(
        "fleets_under_a_maintenance_schedule_dispatch_a_rollout_only_inside_a_window",
        "SIM_SCENARIOS",
        400,
        schedule::scenario,
        &[
            "held OutsideWindow",
            "held Frozen",
            "closed dispatch of",
            "(Rollback) undo=false",
            "undo=true",
            "undo to ",
            "(Rollout)",
            "-> Succeeded",
            "-> converged on",
        ],
    );
}

#[test]
fn fleets_with_approval_gates_never_pass_a_gate_nor_start_degraded() {
    run_all(
        "fleets_with_approval_gates_never_pass_a_gate_nor_start_degraded",
        "SIM_SCENARIOS",
        1_000,
        approval::scenario,
        &[
            "held at gate",
            "held: unhealthy",
            "held: blocked",
            "person: promote ncr-",
            "person: promote --full",
            "person: promote --force",
            "-> Succeeded",
            "-> converged on",
        ],
    );
}

#[test]
fn ten_thousand_node_fleets_keep_every_invariant_with_both_strategies() {
    run_all(
        "ten_thousand_node_fleets_keep_every_invariant_with_both_strategies",
        "SIM_LARGE_SCENARIOS",
        2,
        scenario::chaos_large,
        &[
            "== heal",
            "in waves of at most",
            "in flight (window)",
            "(Rollout)",
        ],
    );
}

#[test]
fn healthy_fleets_reach_the_newest_revision_in_the_ideal_number_of_waves() {
    run_all(
        "healthy_fleets_reach_the_newest_revision_in_the_ideal_number_of_waves",
        "SIM_SCENARIOS",
        2_000,
        waves::waves,
        &[
            "gone",
            "join",
            "(Rollout)",
            "(Join)",
            "== window",
            "== waves",
        ],
    );
}

#[test]
fn fleets_whose_health_regresses_keep_every_fleet_guard_invariant() {
    run_all(
        "fleets_whose_health_regresses_keep_every_fleet_guard_invariant",
        "SIM_SCENARIOS",
        2_000,
        guard::scenario,
        &[
            "caused regression",
            "pre-wave regression",
            "flap ",
            "guard=revert tripped",
            "guard=halt tripped",
            "guard off: ",
            "regressed before the wave of",
            "(Succeeded): raised",
            "(Rollback)",
            "-> Succeeded",
            "== heal",
        ],
    );
}

#[test]
fn fleets_with_nodes_lacking_a_capability_never_get_a_revision_that_needs_it() {
    run_all(
        "fleets_with_nodes_lacking_a_capability_never_get_a_revision_that_needs_it",
        "SIM_SCENARIOS",
        500,
        preflight::scenario,
        &[
            "held by pre-flight",
            "module loaded: vrf",
            "joins lacking vrf",
            "(Rollout)",
            "(Join)",
            "-> Succeeded",
            "-> converged on",
        ],
    );
}

#[test]
fn fleets_with_analysis_gates_never_pass_a_wave_whose_analysis_has_not_passed() {
    run_all(
        "fleets_with_analysis_gates_never_pass_a_wave_whose_analysis_has_not_passed",
        "SIM_SCENARIOS",
        300,
        analysis::scenario,
        &[
            "inconclusive",
            "passed with 1 node(s)",
            "passed with 2 node(s)",
            "failed with",
            "(Succeeded, analysis Passed",
            "analysis of revision",
            "(Rollout)",
            "(Rollback)",
            "-> Succeeded",
            "-> converged on",
        ],
    );
}
