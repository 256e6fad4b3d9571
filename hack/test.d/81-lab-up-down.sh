#!/usr/bin/env bash
# `netrollout-lab up` as a user runs it: the rollout succeeds, the lab says it is ready only once
# every agent reports TenantReachable=True, kubectl works with the kubeconfig it writes, and after
# the lab is killed with SIGKILL (a crash) `netrollout-lab down` leaves no namespace, link,
# process, FRR daemon or FRR directory behind. `down` run while `up` runs makes `up` say its lab
# is gone and exit. Then `up 2>&1 | tee up.log`
# ended by Ctrl-C (SIGINT to the whole pipeline, as a terminal sends it; tee dies too, so the
# lab's stdout is a broken pipe) must tear everything down by itself. The first lab runs FRR 8.4
# (`--frr 8.4`: CI's lab on the version the agent still supports), the others the lab's default,
# FRR 10.3.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked --bins -q
state="${TMPDIR:-/tmp}/netrollout-lab-updown"
frr10="$(hack/frr10.sh)" # FRR 10.3's root file system (the default FRR of the labs below)
lab=target/debug/netrollout-lab
# A failed check leaves no lab running behind it (the suites after this one, or the next run).
pid= group=
trap '[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null; [ -z "$group" ] || kill -9 -- "-$group" 2>/dev/null
  $lab --state-dir "$state" down >/dev/null 2>&1 || true' EXIT
$lab --state-dir "$state" down >/dev/null

# Without root it stops at once and says what it needs.
if out=$(setpriv --reuid=65534 --regid=65534 --clear-groups $lab --state-dir /tmp/nrlab-nobody up 2>&1); then
  echo "FAIL: the lab started without privileges" >&2; exit 1
fi
echo "$out" | grep -q "needs root or CAP_NET_ADMIN" || { echo "FAIL: unclear message: $out" >&2; exit 1; }
echo "without root: $out"
# Without FRR it stops at once, says what to install, and leaves nothing behind: FRR 8.4
# (`--frr 8.4`, Debian's package) and the default, FRR 10.3 (its root file system).
if out=$(NETROLLOUT_LAB_FRR_DIR=/nonexistent $lab --state-dir "$state" up --nodes 1 --frr 8.4 2>&1); then
  echo "FAIL: the lab started without FRR" >&2; exit 1
fi
echo "$out" | grep -q "install Debian's frr package" || { echo "FAIL: unclear message: $out" >&2; exit 1; }
echo "without frr 8.4: $out"
if out=$(NETROLLOUT_FRR10_ROOT=/nonexistent $lab --state-dir "$state" up --nodes 1 2>&1); then
  echo "FAIL: the lab started without FRR 10.3's root file system" >&2; exit 1
fi
echo "$out" | grep -q "FRR 10.3 on every node.*hack/frr10.sh" || { echo "FAIL: unclear message: $out" >&2; exit 1; }
echo "without frr 10.3: $out"
ip netns list | grep nrlab- && { echo "FAIL: namespaces left after the FRR check" >&2; exit 1; }
# A --manifests directory with a document that is not an input is refused before anything starts,
# naming the file, the document and the fix.
bad="$state-bad-manifests"
rm -rf "$bad" && mkdir -p "$bad"
cp tests/data/go-operator/schiff-group.yaml "$bad/"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stray}\n' > "$bad/stray.yaml"
if out=$($lab --state-dir "$state" up --nodes 1 --manifests "$bad" 2>&1); then
  echo "FAIL: the lab started with a ConfigMap among the manifests" >&2; exit 1
fi
echo "$out" | grep -q "stray.yaml, document 1: kind \"ConfigMap\" is not an input the lab applies" \
  || { echo "FAIL: unclear message: $out" >&2; exit 1; }
echo "bad manifests: $out"
ip netns list | grep nrlab- && { echo "FAIL: namespaces left after the manifest check" >&2; exit 1; }
rm -rf "$bad"

leftovers() {
  local fail=0
  ip netns list | grep nrlab- && { echo "FAIL: namespaces left" >&2; fail=1; }
  ip -br link | grep -E '^(nrlab|nrlv)' && { echo "FAIL: links left" >&2; fail=1; }
  # The lab's own processes (their command lines), not builds of these packages running nearby.
  pgrep -af -- "netrollout-agent --node-name lab-node|netrollout-configurator --update-limit|netrollout-lab pinger" \
    && { echo "FAIL: processes left" >&2; fail=1; }
  pgrep -af "(zebra|bgpd|mgmtd) .*-N nrlab-" && { echo "FAIL: FRR daemons left" >&2; fail=1; }
  ls -d /etc/frr/nrlab-* /var/run/frr/nrlab-* "$frr10"/run/frr/nrlab-* 2>/dev/null && { echo "FAIL: FRR directories left" >&2; fail=1; }
  return "$fail"
}
# Waits until the `up` of $pid, logging to $state/up.log, says its rollout succeeded.
up_succeeded() {
  for _ in $(seq 1 120); do
    grep -q "rollout succeeded" "$state/up.log" && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$state/up.log"; echo "FAIL: netrollout-lab up exited" >&2; exit 1; }
    sleep 1
  done
  cat "$state/up.log"; echo "FAIL: no success in 120 s" >&2; exit 1
}
# This lab runs FRR 8.4 (`--frr 8.4`), which the agent still supports; the labs after it run
# the default, FRR 10.3.
rm -f "$state/up.log"
mkdir -p "$state"
$lab --state-dir "$state" up --nodes 3 --frr 8.4 >"$state/up.log" 2>&1 &
pid=$!
up_succeeded
export KUBECONFIG="$state/kubeconfig"
kubectl get ncr,nnc
phases=$(kubectl get nnc -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | sort | uniq -c)
echo "$phases"
[ "$(kubectl get nnc -o name | wc -l)" -eq 3 ] && [ "$(echo "$phases" | awk '{print $2}')" = "Provisioned" ] \
  || { echo "FAIL: not every node Provisioned" >&2; exit 1; }
kubectl get ncr -o jsonpath='{.items[0].status.phase}' | grep -qx Succeeded \
  || { echo "FAIL: the revision is not Succeeded" >&2; exit 1; }
# `up` says it is ready only once tenant traffic flows and every agent's health checks pass.
grep -q "^rollout succeeded; tenant traffic flows between the nodes' workloads and every agent's health checks pass" "$state/up.log" \
  || { cat "$state/up.log"; echo "FAIL: up did not say the lab is ready" >&2; exit 1; }
reachable=$(kubectl get nnc -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="TenantReachable")].status}{"\n"}{end}')
echo "$reachable"
[ "$(echo "$reachable" | grep -c '=True$')" -eq 3 ] \
  || { echo "FAIL: up said the lab is ready before every agent reported TenantReachable=True" >&2; exit 1; }
versions=$(kubectl get nnc -o jsonpath='{range .items[*]}{.metadata.name}={.status.capabilities.frrVersion}{"\n"}{end}')
echo "$versions"
[ "$(echo "$versions" | grep -c '=8\.4')" -eq 3 ] \
  || { echo "FAIL: not every agent of the --frr 8.4 lab found FRR 8.4" >&2; exit 1; }

kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=
leftover_procs=$(pgrep -f -- "netrollout-agent --node-name lab-node|netrollout-configurator --update-limit" | wc -l)
echo "after SIGKILL: $(ip netns list | grep -c nrlab- || true) namespaces, $leftover_procs agent/configurator processes"
$lab --state-dir "$state" down
sleep 0.5
leftovers || exit 1
echo "after down: nothing left"

# `down` from a second terminal while `up` runs (as a new user does): `up` notices its lab is
# gone, says so and exits non-zero by itself, leaving nothing behind. This lab runs FRR 10.3,
# the default (docs/lab.md): every node and the route reflector on it, the rollout succeeds
# and tenant traffic flows, each agent reports the version it found; `down` ends FRR 10.3's
# daemons (mgmtd too) and removes their directories in its root file system.
rm -f "$state/up.log"
$lab --state-dir "$state" up --nodes 2 >"$state/up.log" 2>&1 &
pid=$!
up_succeeded
for _ in $(seq 1 60); do grep -q "^rollout succeeded; tenant traffic flows" "$state/up.log" && break; sleep 1; done
grep -q "^rollout succeeded; tenant traffic flows" "$state/up.log" \
  || { cat "$state/up.log"; echo "FAIL: the FRR 10.3 lab never said tenant traffic flows" >&2; exit 1; }
kubectl get ncr -o jsonpath='{.items[0].status.phase}' | grep -qx Succeeded \
  || { echo "FAIL: the FRR 10.3 lab's revision is not Succeeded" >&2; exit 1; }
versions=$(kubectl get nnc -o jsonpath='{range .items[*]}{.metadata.name}={.status.capabilities.frrVersion}{"\n"}{end}')
echo "$versions"
[ "$(echo "$versions" | grep -c '=10\.3')" -eq 2 ] \
  || { echo "FAIL: not every agent of the default (FRR 10.3) lab found FRR 10.3" >&2; exit 1; }
"$frr10/netrollout/bin/vtysh" -N nrlab-rr --vty_socket "$frr10/run/frr" -c "show version" | grep -q "FRRouting 10.3" \
  || { echo "FAIL: the route reflector does not run FRR 10.3" >&2; exit 1; }
$lab --state-dir "$state" down
for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
kill -0 "$pid" 2>/dev/null && { echo "FAIL: up still runs 30 s after down removed its lab" >&2; exit 1; }
if wait "$pid"; then echo "FAIL: up exited 0 after its lab was removed under it" >&2; exit 1; fi
pid=
grep -q "the lab is gone: " "$state/up.log" || { cat "$state/up.log"; echo "FAIL: up did not say its lab is gone" >&2; exit 1; }
sleep 0.5
leftovers || exit 1
echo "down while up runs: $(grep -o 'the lab is gone: .*' "$state/up.log")"

# Ctrl-C on `up 2>&1 | tee up.log`: the pipeline runs in a process group of its own; SIGINT goes
# to all of it, as the terminal's Ctrl-C does. A script's background jobs ignore SIGINT, so
# `env --default-signal=INT` restores it: tee dies at once, as in a terminal, and the lab's
# stdout and stderr become a broken pipe. This lab rolls out a user's own manifests
# (`--manifests`): the repository's fixtures in the Go operator's format, its API groups
# converted, those that need a VRF left out on a kernel without VRFs.
rm -f "$state/tee.log"
setsid env --default-signal=INT bash -c "$lab --state-dir '$state' up --nodes 3 --manifests tests/data/go-operator 2>&1 | tee '$state/tee.log' >/dev/null" &
group=$!
for _ in $(seq 1 120); do
  grep -q "rollout succeeded" "$state/tee.log" 2>/dev/null && break
  sleep 1
done
grep -q "rollout succeeded" "$state/tee.log" || { cat "$state/tee.log"; echo "FAIL: no success in 120 s" >&2; exit 1; }
for line in "applied the manifests in tests/data/go-operator and the lab's tenant network" \
  "object(s) in the Go operator's API group, applied as netrollout.io/v1alpha1" \
  "Layer2NetworkConfiguration/mgmt-hosts"; do
  grep -qF "$line" "$state/tee.log" || { cat "$state/tee.log"; echo "FAIL: --manifests: no line with: $line" >&2; exit 1; }
done
kubectl --kubeconfig "$state/kubeconfig" get layer2 storage-replication >/dev/null \
  || { echo "FAIL: --manifests: the user's Layer2NetworkConfiguration storage-replication is not in the lab" >&2; exit 1; }
if kubectl --kubeconfig "$state/kubeconfig" get layer2 vlan502 >/dev/null 2>&1; then
  echo "FAIL: --manifests: the samples were applied too" >&2; exit 1
fi
# The closing hint patches one of the user's own networks, not the samples' vlan502.
hint=$(grep -o 'kubectl patch layer2 [^ ]*' "$state/tee.log" || true)
[ -n "$hint" ] && ! grep -q vlan502 <<<"$hint" \
  || { cat "$state/tee.log"; echo "FAIL: --manifests: the hint is not one of the user's networks: $hint" >&2; exit 1; }
kubectl --kubeconfig "$state/kubeconfig" get layer2 "${hint##* }" >/dev/null \
  || { echo "FAIL: --manifests: the hint's network ${hint##* } is not in the lab" >&2; exit 1; }
kill -INT -- "-$group"
for _ in $(seq 1 30); do
  pgrep -f "netrollout-lab --state-dir $state up" >/dev/null || break
  sleep 1
done
pgrep -af "netrollout-lab --state-dir $state up" && { echo "FAIL: the lab did not exit after Ctrl-C" >&2; exit 1; }
group=
leftovers || { echo "FAIL: Ctrl-C on up | tee left the above behind" >&2; exit 1; }
# tee died with the Ctrl-C, before the lab said it tears down: the lab wrote into a broken pipe.
grep -q "tearing the lab down" "$state/tee.log" && echo "note: tee outlived the lab's last line this time"
echo "Ctrl-C on up | tee: nothing left"
echo "lab up/down: PASSED"
