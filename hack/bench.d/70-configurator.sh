#!/usr/bin/env bash
# Configurator benchmark: 1,000 simulated nodes on the in-process lab API server, agents taking
# 200 ms, the real configurator binary with --update-limit 50. Rows: wall time against the ideal
# 20 waves x 0.2 s (goal <= 1.2x), API writes per node (goal <= 4), CPU time, peak RSS, and the
# time from a changed input to the first dispatch (goal < 200 ms). Prints hack/bench.sh rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q -p netrollout-configurator --bins --examples
cargo run --release --locked -q -p netrollout-configurator --example configurator-bench
