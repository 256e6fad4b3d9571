#!/usr/bin/env bash
# Configurator benchmark at 65,000 nodes (the largest cluster a managed Kubernetes offers):
# the same harness as 70-configurator.sh (in-process lab API server, simulated agents, the real
# configurator binary) with --update-limit 5% (3,250) and agents taking 1 s. Goals: wall time
# <= 1.2x the ideal 20 x 1 s, configurator peak RSS < 1 GiB, API writes per node and rollout
# <= 3. The bench process's own CPU (lab API server and simulated agents) is a row of its own,
# so the harness's cost is never hidden in the configurator's row. Prints hack/bench.sh rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q -p netrollout-configurator --bins --examples
BENCH_NODES=65000 BENCH_LIMIT=5% BENCH_LATENCY_MS=1000 BENCH_WALL_GOAL=1.2 \
  BENCH_RSS_GOAL_MIB=1024 target/release/examples/configurator-bench
