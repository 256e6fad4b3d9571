#!/usr/bin/env bash
# The end-to-end suite: every lab scenario (happy, bad-config, node-join, configurator-crash,
# api-outage) with the real binaries, network namespaces as nodes and the lab API server. Each
# scenario prints its timeline and a summary; any broken promise exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-ci"
target/debug/netrollout-lab --state-dir "$state" down
target/debug/netrollout-lab scenario all --state-dir "$state"
