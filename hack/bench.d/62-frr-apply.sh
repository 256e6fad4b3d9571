#!/usr/bin/env bash
# Agent FRR benchmark (needs root and FRR, hack/install-deps.sh): real FRR in a fresh network
# namespace (pathspace -N) per size, 50 and 500 VRFs with policies rendered by netrollout-frr.
# Rows per size: the agent's apply of one changed VRF (its own diff of FRR's running config, read
# over the daemons' vty sockets) against frr-reload.py applying the same change in the same run,
# by a fresh agent and by one that checked the texts before; the first apply of a freshly
# started agent when FRR already runs the text (0 FRR writes); the no-op apply of the loaded
# text (0 FRR writes); each step of an apply on its own (wall time and the CPU of the agent, its
# vtysh, zebra and bgpd); and FRR's own start with the size's config (wall and CPU), which bounds
# the sizes: FRR 8.4's bgpd commits each line of a startup file through its northbound
# (libyang), whose cost grows with the config, so the load grows with the square of the VRFs;
# a size that does not load within FRR_BENCH_LOAD_TIMEOUT seconds (600) gets a row saying so.
# Prints TAB-separated rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=target/release/examples/frr-apply-bench
[ -x "$bin" ] || cargo build --release -p netrollout-agent --example frr-apply-bench --locked >&2
"$bin" 50 200 500
