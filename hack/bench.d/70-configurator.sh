#!/usr/bin/env bash
# Configurator benchmark: simulated nodes on the in-process lab API server, agents taking
# 200 ms, the real configurator binary. Two fleets: 1,000 nodes with --update-limit 50 (goal
# <= 1.1x the ideal 20 waves x 0.2 s) and 10,000 nodes with --update-limit 5% (500; goal
# <= 1.2x the ideal 20 waves x 0.2 s, peak RSS < 250 MiB), the latter with both rollout
# strategies (waves, then window). Rows: wall time against the ideal,
# API writes per node (goal <= 3), CPU time, passes per second and CPU per pass, peak RSS, and
# the time from a changed input to the first dispatch (goal < 200 ms). Prints hack/bench.sh rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q -p netrollout-configurator --bins --examples
bench=target/release/examples/configurator-bench
BENCH_NODES=1000 BENCH_LIMIT=50 BENCH_WALL_GOAL=1.1 "$bench"
BENCH_NODES=10000 BENCH_LIMIT=5% BENCH_WALL_GOAL=1.2 "$bench"
# The same fleet with --rollout-strategy window: a node is dispatched as soon as a slot frees.
BENCH_NODES=10000 BENCH_LIMIT=5% BENCH_WALL_GOAL=1.2 BENCH_STRATEGY=window "$bench"
