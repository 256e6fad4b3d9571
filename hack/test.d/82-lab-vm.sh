#!/usr/bin/env bash
# The lab in VM mode (docs/lab.md "VM mode"): `scenario --vm happy` and `scenario --vm
# remote-break` with 3 nodes running inside Debian's kernel under qemu (hack/vm/lab.sh), with
# the VRF samples and the routed tenant (bridged and routed flows, the outside), FRR 10.3 (the
# lab's default: the guest runs it from hack/frr10.sh's root file system, seen over 9p), the lab
# API server and the configurator on this machine. `remote-break` opens with `tenant-break`'s
# whole story and its checks (limit 1, the border first), then breaks the border's export of the
# outside: the fleet guard must halt and revert the rollout within the border's wave; restarted
# with `--guard off`, the same break must roll on. Each prints its timeline, the tenant probes
# lost per network and node, and a checked summary; a broken promise exits non-zero. Afterwards
# nothing of the lab may be left on this machine: no qemu, no namespace, no link. Lab runs hold
# /tmp/netrollout-lab.lock (the lab uses fixed names). Fails loudly when qemu or the kernel are
# missing (hack/vm/deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
hack/vm/deps.sh >/dev/null
cargo build --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-vm-ci"
# One lab at a time on this machine: hold the lab lock for the whole suite.
exec 9>/tmp/netrollout-lab.lock
flock 9
lab() { target/debug/netrollout-lab --state-dir "$state" "$@"; }
lab down >/dev/null
# A failed check leaves no lab (or VM) running behind it.
pid=
trap '[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null; lab down >/dev/null 2>&1 || true' EXIT
# The full samples, VRFs included (the reason for VM mode), and the routed tenant.
lab scenario happy --vm --nodes 3
# tenant-break's story (limit 1: with 3 nodes in a ring, a first wave of one leaves a pair that
# must lose nothing), then the fleet guard's: one VM boot for both.
lab scenario remote-break --vm --nodes 3
# Ctrl-C on `up --vm` (output into a pipe, as `| tee` would) powers the VM off.
# The log of an earlier run must not pass for this one's: until `cat` (re)creates the file, the
# wait below would read the old one (it did: the check after it then read the new, empty file).
log="$state.up.log"
rm -f "$log"
target/debug/netrollout-lab --state-dir "$state" up --vm --nodes 2 > >(cat >"$log") 2>&1 &
pid=$!
for _ in $(seq 240); do
  grep -qs 'applied config/samples' "$log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 1
done
grep -qs 'applied config/samples' "$log" || { cat "$log" >&2; echo "lab-vm: up --vm did not start" >&2; exit 1; }
kill -INT "$pid"
wait "$pid" || true
pid=
grep -q 'tearing the lab down' "$log" || { cat "$log" >&2; echo "lab-vm: up --vm ignored Ctrl-C" >&2; exit 1; }
left=""
if pgrep -f -- "$state/vm" >/dev/null; then left+=" a qemu process;"; fi
if ip netns list | grep -q '^nrlab'; then left+=" namespaces: $(ip netns list | grep '^nrlab' | tr '\n' ' ');"; fi
if ip -o link show | grep -q ': nrl'; then left+=" host links;"; fi
[ -z "$left" ] || { echo "lab-vm: the VM lab left behind:$left" >&2; exit 1; }
echo "lab-vm: happy and remote-break (tenant-break's story, the fleet guard) passed in the VM; nothing left behind" >&2
