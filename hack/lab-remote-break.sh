#!/usr/bin/env bash
# The fleet guard in the lab (docs/lab.md "remote-break"; not in hack/test.sh yet: it takes
# 20 minutes or more under TCG, see docs/testing.md): in the Debian-kernel VM (VRFs), 3 nodes,
# limit 1, the border first. The scenario opens with tenant-break's story, then breaks the
# border's export of the outside: the border's own probes pass, the other nodes lose the
# outside. With the default guard it checks that the rollout halts within the border's wave,
# the border returns to known-good and traffic comes back; restarted with `--guard off`, that
# the rollout goes on past that wave. Exits non-zero on a broken promise. Holds
# /tmp/netrollout-lab.lock (the lab uses fixed names). Fails loudly when qemu or the kernel are
# missing (hack/vm/deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/vm/deps.sh >/dev/null
cargo build --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-remote-break"
exec 9>/tmp/netrollout-lab.lock
flock 9
lab() { target/debug/netrollout-lab --state-dir "$state" "$@"; }
lab down >/dev/null
lab scenario remote-break --vm --nodes 3
echo "lab-remote-break: the guard halted and reverted the border; without it the rollout went on" >&2
