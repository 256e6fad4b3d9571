#!/usr/bin/env bash
# Fleet guard benchmark: `scenario remote-break --vm` (3 nodes in the Debian-kernel VM, limit
# 1, the border first). Rows: time from the break (the first outside probe lost) to the halt
# (the revision Failed by the guard) against the border's wave, to the revert (every node on
# known-good), and the outside probes lost per untouched node. The write cost of continuous
# health in a healthy fleet is a row of 85-lab-traffic.sh (20 real agents). Needs root, FRR,
# qemu and the cached kernel like the lab; holds the lab lock.
set -euo pipefail
cd "$(dirname "$0")/../.."
hack/vm/deps.sh >/dev/null
cargo build --release --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-guard-bench"
mkdir -p "$state"
flock /tmp/netrollout-lab.lock target/release/netrollout-lab --state-dir "$state" \
  scenario remote-break --vm --nodes 3 >"$state.log" 2>&1 \
  || { tail -30 "$state.log" >&2; echo "86-lab-guard: the remote-break scenario failed" >&2; exit 1; }
grep -P '^guard\t' "$state.log"
