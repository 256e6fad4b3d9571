#!/usr/bin/env bash
# Configurator benchmark: simulated nodes behind the in-process lab API server, agents taking
# 200 ms, the real configurator binary. Two fleets with the default rollout strategy (window):
# 1,000 nodes with --update-limit 50 (goal <= 1.1x the ideal 20 x 0.2 s) and 10,000 nodes with
# --update-limit 5% (500; goal <= 1.2x the ideal 20 x 0.2 s, peak RSS < 250 MiB); then both
# fleets with --rollout-strategy waves, for comparison (lock-step waves: each also waits for
# its whole wave's node configs to be written). Each fleet rolls out three times (creating every
# node's config, then changing it twice). Rows: the median wall time against the ideal, API
# writes per node and rollout (goal <= 3), CPU time per rollout, passes per second and CPU per
# pass, peak RSS, and the time from a changed input to the first dispatch (goal < 200 ms).
# Then 1,000 nodes whose configs hold 20 VRFs and 20 layer-2 networks each (BENCH_VRFS).
# Prints hack/bench.sh rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q -p netrollout-configurator --bins --examples
bench=target/release/examples/configurator-bench
BENCH_NODES=1000 BENCH_LIMIT=50 BENCH_WALL_GOAL=1.1 "$bench"
BENCH_NODES=10000 BENCH_LIMIT=5% BENCH_WALL_GOAL=1.2 "$bench"
# Node configs of a real node's size (20 VRFs and 20 layer-2 networks each), for the
# configurator's CPU per rollout; the wall time is the lab API server's (docs/benchmarks.md).
BENCH_NODES=1000 BENCH_LIMIT=50 BENCH_VRFS=20 BENCH_WALL_GOAL=- BENCH_TIMEOUT_S=300 "$bench"
# Lock-step waves, for comparison.
BENCH_NODES=1000 BENCH_LIMIT=50 BENCH_WALL_GOAL=- BENCH_STRATEGY=waves "$bench"
BENCH_NODES=10000 BENCH_LIMIT=5% BENCH_WALL_GOAL=- BENCH_STRATEGY=waves "$bench"
