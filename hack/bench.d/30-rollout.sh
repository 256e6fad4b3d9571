#!/usr/bin/env bash
# Rollout planner benchmarks: one planning pass over 1,000, 10,000 and 50,000 nodes (goal < 2 ms
# at 10,000; the other two against it, to show how it grows), the waves a simulated 1,000-node
# rollout with limit 50 takes (ideal 20), and both rollout strategies (waves, window) with agents
# taking 100-400 ms against the ideal for that spread, at 1,000 nodes (limit 50) and 10,000 nodes
# (limit 500), in virtual time. Prints hack/bench.sh rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run --release --locked -q -p netrollout-rollout --example rollout-bench
