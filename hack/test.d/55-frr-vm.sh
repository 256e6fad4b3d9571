#!/usr/bin/env bash
# The FRR renderer's real-kernel VM suite (issue 12): builds the VM-only EVPN type-5 test (VRFs:
# not in this machine's kernel), boots Debian's stock kernel with FRR in the initramfs
# (hack/vm/run.sh, VM_FRR=1) and runs it: two namespaces with zebra + bgpd exchange type-5
# routes for a tenant VRF; an export filter change shows on the other node, an import filter
# stops a prefix. Non-zero when the build fails, the VM cannot boot, or the test fails.
# test.sh: beside the others (one qemu guest, nothing shared on this machine; hack/test.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."

bin="$(cargo test -p netrollout-frr --features vm --test vm --no-run --locked --message-format=json |
  grep '"name":"vm"' | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)"
[ -n "$bin" ] || { echo "frr-vm: could not build the VM test binary" >&2; exit 1; }
VM_FRR=1 hack/vm/run.sh "$bin" --nocapture
