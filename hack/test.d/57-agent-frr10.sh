#!/usr/bin/env bash
# The agent's FRR tests on FRR 10.3 (issue 42): `cargo test --workspace` ran them on the host's
# FRR 8.4; this runs them again with NETROLLOUT_FRR_VERSION=10.3, so the test kit starts FRR 10.3
# (mgmtd, zebra, bgpd by chroot into the root file system hack/frr10.sh builds and caches) and
# the agent reaches it with that version's vtysh and frr-reload.py. In CI: the converge walk
# (`frr_converge`: every construct the renderer produces, forwards and back, without the
# fallback), the vty read against vtysh's (`frr_vty`), the listed defaults (`frr_defaults`) and
# FRR's error answers as failures (`frr_errors`): about 30 s (the test binary is the one
# `cargo test --workspace` built). With ALL=1 (on demand, docs/testing.md) also FRR dying
# mid-apply (`frr_dies`), the agent against FRR (`frr::`, `evpn::`) and the kill -9 tests
# (`kills`).
# Non-zero when the build or a test fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

hack/frr10.sh >/dev/null
filters=(frr_converge:: frr_vty:: frr_defaults:: frr_errors::)
if [ "${ALL:-0}" = 1 ]; then
  filters+=(frr_dies:: frr:: evpn:: kills:: peering::)
fi
NETROLLOUT_FRR_VERSION=10.3 cargo test -p netrollout-agent --test it --locked -- "${filters[@]}"
