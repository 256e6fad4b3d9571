#!/usr/bin/env bash
# Agent FRR benchmark, FRR 8.4 and 10.3 side by side (needs root, FRR 8.4 and FRR 10.3's root
# file system: hack/install-deps.sh). Per version and size, real FRR of that version in a fresh
# network namespace (pathspace -N), a config of N VRFs with policies rendered by netrollout-frr.
# Rows: the first apply of the whole config (FRR ran the base config), one changed VRF (a fresh
# agent, and one that checked the texts before), the first apply of a freshly started agent when
# FRR already runs the text (0 FRR writes), the no-op apply, each against that version's
# frr-reload.py doing the same in the same run; and each step of an apply on its own (wall time
# and the CPU of the agent, its vtysh, zebra, bgpd and mgmtd).
# FRR 8.4 runs 50 and 200 VRFs only: its bgpd commits each configuration line through its
# northbound (the whole candidate tree copied and validated per line), so a load grows with the
# square of the VRFs: 200 take minutes, 500 more than an hour for the two first applies
# (docs/benchmarks.md). FRR_BENCH_RUNS replaces the runs (e.g. "10.3:500" or "8.4:50,200,500").
# Prints TAB-separated rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=target/release/examples/frr-apply-bench
[ -x "$bin" ] || cargo build --release -p netrollout-agent --example frr-apply-bench --locked >&2
hack/frr10.sh >/dev/null
runs=${FRR_BENCH_RUNS:-8.4:50,200 10.3:50,200,500}
# shellcheck disable=SC2086 # one argument per version
"$bin" $runs
if [ -z "${FRR_BENCH_RUNS:-}" ]; then
  printf 'agent-frr\tFRR 8.4, 500 VRFs: not run (its load commits line by line, the square of the VRFs: > 1 h for the two first applies; docs/benchmarks.md)\t-\t-\t-\t-\n'
fi
