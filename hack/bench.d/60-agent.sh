#!/usr/bin/env bash
# Agent benchmark: from a spec change in the API to Provisioned for 100 layer-2 networks, with
# the real agent in a network namespace against the lab API server, split into apply, probe and
# status time; baseline: `ip -batch` of the same links in the same run. Needs root.
# Prints hack/bench.sh rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -q -p netrollout-agent --bins --examples
target/release/examples/agent-bench
