#!/usr/bin/env bash
# hack/test.sh's two lanes, on a copy of it in a scratch tree with stand-ins for cargo, the
# installers and the suites (a few seconds): every suite runs, the marked ones beside the others,
# and a failure in either lane fails the run, naming the suite. Non-zero, with the run's output,
# when a promise breaks.
set -euo pipefail
cd "$(dirname "$0")/../.."

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/hack/test.d" "$t/hack/vm" "$t/bin"
cp hack/test.sh "$t/hack/"
printf '#!/bin/sh\nexit 0\n' >"$t/hack/install-deps.sh"
printf '#!/bin/sh\nexit 0\n' >"$t/hack/vm/deps.sh"
printf '#!/bin/sh\necho "cargo $*"\n' >"$t/bin/cargo"
# The marked suite starts, then waits for the other lane's first suite to have started.
printf '#!/bin/sh\n# test.sh: beside the others (a stand-in)\ntouch "$T/vm.started"\nfor i in $(seq 100); do [ -e "$T/lab.started" ] && break; sleep 0.1; done\n[ -e "$T/lab.started" ] || { echo "vm: ran alone"; exit 5; }\necho vm ran; exit "${VM_RC:-0}"\n' >"$t/hack/test.d/50-vm.sh"
printf '#!/bin/sh\ntouch "$T/lab.started"\nfor i in $(seq 100); do [ -e "$T/vm.started" ] && break; sleep 0.1; done\necho lab ran; exit "${LAB_RC:-0}"\n' >"$t/hack/test.d/80-lab.sh"
printf '#!/bin/sh\necho check ran\n' >"$t/hack/test.d/81-check.sh"
chmod +x "$t"/hack/*.sh "$t"/hack/vm/*.sh "$t"/hack/test.d/*.sh "$t/bin/cargo"

fail() { echo "test-lanes: $1; the run said:"; cat "$t/out"; exit 1; } >&2
run() { # EXPECTED-EXIT [VAR=VALUE...]
  local want=$1 rc=0
  shift
  rm -f "$t"/*.started
  env PATH="$t/bin:$PATH" T="$t" "$@" "$t/hack/test.sh" >"$t/out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || fail "with ${*:-nothing failing} test.sh exited $rc, not $want"
}
run 0
for s in vm lab check; do grep -q "^$s ran" "$t/out" || fail "the $s suite did not run"; done
grep -q 'test.sh: all suites passed' "$t/out" || fail "no closing line"
run 1 VM_RC=3
grep -q '50-vm.sh: FAILED (exit 3)' "$t/out" || fail "the failed VM suite is not named"
run 1 LAB_RC=4
grep -q '80-lab.sh: FAILED (exit 4)' "$t/out" || fail "the failed lab suite is not named"
! grep -q '^check ran' "$t/out" || fail "the lane went on after its failed suite"
echo "test-lanes: both lanes ran at once; a failure in either failed the run" >&2
