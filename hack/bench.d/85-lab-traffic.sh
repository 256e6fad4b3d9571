#!/usr/bin/env bash
# Lab benchmark: a 20-node lab (FRR, workloads, tenant ping streams) rolls out a one-network
# change (vlan502's MTU) with --update-limit 5. Rows: wall time against the ideal (waves × the
# agents' mean apply+probe time, measured in the same run) and the tenant probes lost per node on
# the untouched network (goal 0) and the changed one. Needs root and FRR like the lab; holds the
# lab lock so it never runs next to another lab. Prints hack/bench.sh rows (the lab's timeline
# goes to bench.log in the state directory).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-bench"
mkdir -p "$state"
flock /tmp/netrollout-lab.lock target/release/netrollout-lab --state-dir "$state" \
  bench --nodes 20 --update-limit 5 --probe-hold 1s >"$state/bench.log" 2>&1 \
  || { tail -30 "$state/bench.log" >&2; echo "85-lab-traffic: the lab bench failed" >&2; exit 1; }
grep -P '^(lab|guard)\t' "$state/bench.log"
