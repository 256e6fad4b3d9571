#!/usr/bin/env bash
# Runs every test of the project: installs what the tests need, runs the Rust test suites of the
# whole workspace (unit, property, simulator, kernel-in-namespace and lab end-to-end tests), then
# each extra suite in hack/test.d/ (such as the real-kernel VM suite). Needs root for namespaces.
#
# The suites run in two lanes at once: the ones marked `# test.sh: beside the others` (a qemu
# guest running one test binary: CPU-bound, nothing shared on this machine) in one lane, every
# other suite (labs, checks: mostly waiting) in the other, each lane in name order. Each suite's
# output is printed when it ends; a lane stops at its first failure and test.sh fails when either
# lane did. `cargo test` holds cargo's lock on the target directory while its tests run, so the
# lanes start after it (a suite's own cargo call would wait for it).
set -euo pipefail
cd "$(dirname "$0")/.."

hack/install-deps.sh
start=$SECONDS
cargo test --workspace --locked
echo "== cargo test --workspace: passed in $((SECONDS - start)) s" >&2

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Runs the suites given, in order, until one fails; prints each one's output when it ends.
lane() {
  local suite name start rc
  for suite in "$@"; do
    name=$(basename "$suite")
    start=$SECONDS
    rc=0
    "$suite" >"$logs/$name.log" 2>&1 || rc=$?
    {
      echo "== $suite"
      cat "$logs/$name.log"
      if [ "$rc" = 0 ]; then
        echo "== $suite: passed in $((SECONDS - start)) s"
      else
        echo "== $suite: FAILED (exit $rc) after $((SECONDS - start)) s"
      fi
    } >&2
    [ "$rc" = 0 ] || return 1
  done
}
beside=()
others=()
for suite in hack/test.d/*.sh; do
  [ -e "$suite" ] || continue
  if grep -q '^# test.sh: beside the others' "$suite"; then beside+=("$suite"); else others+=("$suite"); fi
done
# The VM kernel, fetched once before two suites could want it at the same time.
if [ "${#beside[@]}" -gt 0 ]; then hack/vm/deps.sh >/dev/null; fi
start=$SECONDS
lane "${beside[@]}" &
beside_pid=$!
failed=0
lane "${others[@]}" || failed=1
wait "$beside_pid" || failed=1
[ "$failed" = 0 ] || { echo "test.sh: a suite failed (its output above)" >&2; exit 1; }
echo "test.sh: all suites passed ($((SECONDS - start)) s for the suites)" >&2
