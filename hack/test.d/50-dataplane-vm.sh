#!/usr/bin/env bash
# The dataplane's real-kernel VM suite: builds the VM-only kernel tests (vrf, 8021q, dummy:
# drivers this machine's kernel lacks), boots Debian's stock kernel in qemu and runs them there
# (hack/vm/run.sh). Non-zero when the build fails, the VM cannot boot, or a test fails.
# test.sh: beside the others (one qemu guest, nothing shared on this machine; hack/test.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."

bin="$(cargo test -p netrollout-dataplane --features vm --test vm --no-run --locked --message-format=json |
  grep '"name":"vm"' | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)"
[ -n "$bin" ] || { echo "dataplane-vm: could not build the VM test binary" >&2; exit 1; }
hack/vm/run.sh "$bin"
