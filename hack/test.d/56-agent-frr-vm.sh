#!/usr/bin/env bash
# The agent's FRR VM suite (issue 12): builds the VM-only agent test (VRFs: not in this machine's
# kernel), boots Debian's stock kernel with FRR, python3 and frr-reload.py in the initramfs
# (hack/vm/run.sh, VM_FRR=1 VM_PYTHON=1) and runs it: two nodes, each an agent lab with FRR,
# exchange EVPN type-5 routes for a tenant VRF, every change made by the agent's apply cycle;
# then a second VRF on the running nodes: its layer-3 VNI, router MAC and traffic (apply order).
# Non-zero when the build fails, the VM cannot boot, or the test fails.
# test.sh: beside the others (one qemu guest, nothing shared on this machine; hack/test.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."

bin="$(cargo test -p netrollout-agent --features vm --test vm --no-run --locked --message-format=json |
  grep '"name":"vm"' | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)"
[ -n "$bin" ] || { echo "agent-frr-vm: could not build the VM test binary" >&2; exit 1; }
# VM_FRR=10.3 (on demand, docs/testing.md): FRR 10.3 from its root file system in the guest.
VM_FRR=${VM_FRR:-1} VM_PYTHON=1 hack/vm/run.sh "$bin"
