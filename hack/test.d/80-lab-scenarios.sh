#!/usr/bin/env bash
# The end-to-end suite: every lab scenario (happy, bad-config, node-join, configurator-crash,
# api-outage, tenant-break) with the real binaries, network namespaces as nodes running FRR, the
# lab API server and tenant traffic between workloads. Each scenario prints its timeline, the
# tenant probes lost per network and node, and a summary; any broken promise exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-ci"
target/debug/netrollout-lab --state-dir "$state" down
target/debug/netrollout-lab scenario all --state-dir "$state"
