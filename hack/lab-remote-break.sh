#!/usr/bin/env bash
# The fleet guard in the lab (docs/lab.md "remote-break"; not in hack/test.sh: about 20 minutes
# under TCG, see docs/testing.md): in the Debian-kernel VM (VRFs), 3
# nodes, limit 1, the border first. The border's export filter stops announcing the outside;
# its own probes pass, the other nodes lose the outside. With the default guard the scenario
# checks that the rollout halts within the border's wave, the border returns to known-good and
# traffic comes back; with `--guard off` it checks that the rollout goes on past that wave (the
# comparison issue 28 asks for). Each run exits non-zero on a broken promise. Holds
# /tmp/netrollout-lab.lock (the lab uses fixed names). Fails loudly when qemu or the kernel
# are missing (hack/vm/deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/vm/deps.sh >/dev/null
cargo build --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-remote-break-ci"
exec 9>/tmp/netrollout-lab.lock
flock 9
lab() { target/debug/netrollout-lab --state-dir "$state" "$@"; }
lab down >/dev/null
lab scenario remote-break --vm --nodes 3
lab scenario remote-break --vm --nodes 3 --guard off
echo "lab-remote-break: the guard halted and reverted the border; without it the rollout went on" >&2
