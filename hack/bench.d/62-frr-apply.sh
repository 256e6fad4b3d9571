#!/usr/bin/env bash
# Agent FRR benchmark (needs root and FRR, hack/install-deps.sh): real FRR in a fresh network
# namespace (pathspace -N), 50 VRFs with policies rendered by netrollout-frr. Rows: the agent's
# apply of one changed VRF through frr-reload.py against a full `vtysh -f` load of the same config
# in the same run, and the no-op apply of an unchanged text (0 FRR writes). Prints TAB-separated
# rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=target/release/examples/frr-apply-bench
[ -x "$bin" ] || cargo build --release -p netrollout-agent --example frr-apply-bench --locked >&2
"$bin"
