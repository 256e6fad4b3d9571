#!/usr/bin/env bash
# Rollout planner benchmarks: one planning pass over 10,000 nodes (goal < 5 ms) and the waves a
# simulated 1,000-node rollout with limit 50 takes (ideal 20). Prints hack/bench.sh rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run --release --locked -q -p netrollout-rollout --example rollout-bench
