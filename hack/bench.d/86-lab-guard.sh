#!/usr/bin/env bash
# Fleet guard benchmark: `scenario remote-break --vm` (3 nodes in the Debian-kernel VM, limit
# 1, the border first; the scenario opens with tenant-break's story and ends with the same
# break under --guard off). Rows: time from the break (the first outside probe lost) to the halt
# (the revision Failed by the guard) against the border's wave, to the revert (every node on
# known-good), and the outside probes lost per untouched node, and the healthy fleet's writes
# per node per hour before the break (20 s watched, extrapolated to an hour and to 10,000
# nodes; 85-lab-traffic.sh measures the same with 20 real agents). Needs root, FRR, qemu and
# the cached kernel like the lab; holds the lab lock. Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
hack/vm/deps.sh >/dev/null
cargo build --release --locked --bins -q
# The lab looks for hack/vm/lab.sh above its binary; a CARGO_TARGET_DIR outside the checkout
# needs it named.
export NETROLLOUT_LAB_VM_SCRIPT="$PWD/hack/vm/lab.sh"
state="${TMPDIR:-/tmp}/netrollout-lab-guard-bench"
mkdir -p "$state"
flock /tmp/netrollout-lab.lock "${CARGO_TARGET_DIR:-target}/release/netrollout-lab" --state-dir "$state" \
  scenario remote-break --vm --nodes 3 >"$state.log" 2>&1 \
  || { tail -30 "$state.log" >&2; echo "86-lab-guard: the remote-break scenario failed" >&2; exit 1; }
grep -P '^guard\t' "$state.log"
