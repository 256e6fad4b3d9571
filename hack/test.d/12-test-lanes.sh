#!/usr/bin/env bash
# hack/test.sh's two lanes, on a copy of it in a scratch tree with stand-ins for cargo, the
# installers and the suites (a few seconds): every suite runs, the marked ones beside the others,
# and a failure in either lane fails the run, naming the suite; the test binaries' run times
# are reported, slowest first, by package and target. Non-zero, with the run's output,
# when a promise breaks.
set -euo pipefail
cd "$(dirname "$0")/../.."

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/hack/test.d" "$t/hack/vm" "$t/bin"
cp hack/test.sh "$t/hack/"
printf '#!/bin/sh\nexit 0\n' >"$t/hack/install-deps.sh"
printf '#!/bin/sh\nexit 0\n' >"$t/hack/vm/deps.sh"
# The stand-in cargo: two test binaries (one package named as its directory is, which cargo's
# package id leaves out), each run printing its time as libtest does.
cat >"$t/bin/cargo" <<'EOF'
#!/bin/sh
echo "cargo $*"
case "$*" in
*--no-run*)
  echo '{"reason":"compiler-artifact","package_id":"path+file:///src/crates/agent#netrollout-agent@0.1.0","target":{"name":"it"},"executable":"/src/target/debug/deps/it-0a1b"}'
  echo '{"reason":"compiler-artifact","package_id":"path+file:///src/crates/kubectl-netrollout#0.1.0","target":{"name":"it"},"executable":"/src/target/debug/deps/it-2c3d"}'
  ;;
test*)
  for b in it-2c3d:0.30 it-0a1b:12.50; do
    printf '     Running tests/it/main.rs (target/debug/deps/%s)\n\ntest result: ok. 1 passed; 0 failed; finished in %ss\n\n' "${b%:*}" "${b#*:}"
  done
  ;;
esac
EOF
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
grep -q '^== test binaries: 2, 12.8 s of run time' "$t/out" || fail "no report of the test binaries' run times"
grep -A1 '^== test binaries' "$t/out" | grep -q '12.5 s  netrollout-agent it$' ||
  fail "the slowest test binary is not first, named by its package and target"
grep -q '0.3 s  kubectl-netrollout it$' "$t/out" || fail "a package named as its directory is not named"
run 1 VM_RC=3
grep -q '50-vm.sh: FAILED (exit 3)' "$t/out" || fail "the failed VM suite is not named"
run 1 LAB_RC=4
grep -q '80-lab.sh: FAILED (exit 4)' "$t/out" || fail "the failed lab suite is not named"
! grep -q '^check ran' "$t/out" || fail "the lane went on after its failed suite"
echo "test-lanes: both lanes ran at once; a failure in either failed the run; the test binaries' run times were reported" >&2
