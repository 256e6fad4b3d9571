#!/usr/bin/env bash
# Proof by repetition for the agent's waits on the kernel (docs/testing.md, "Repeating the
# agent's runs after the dataplane bench"). On demand, never in CI: it takes hours at the full
# count and slows every netlink write on the machine while it runs. Needs root.
#
#   hack/repeat-agent.sh [--count N] [--start K] [--minutes M] [PHASE...]
#
# Phases (all three when none is named), each stopping at its first failure with the count so
# far and a non-zero exit:
#   after-dataplane  the dataplane bench (hack/bench.d/20-dataplane.sh: 6 namespaces of 2,000
#                    links the kernel then removes), and right after it the agent bench row
#                    and the agent's integration tests (the `it` binary), N times (default 3);
#   agent-bench      the agent bench (spec change to Provisioned, 100 layer-2 networks) N times;
#   netlink-lock     the test binary tests/netlink_lock.rs (an apply while the kernel holds its
#                    netlink lock for about 20 s, twice) N times.
# --count N: repetitions of each phase (default 200; 3 for after-dataplane). --start K numbers
# the first repetition K (to add chunks up to a total: `--start 41 --count 20` runs 41..60).
# --minutes M: start no repetition after M minutes from the start (the runs started finish; the
# count done is printed), for chunks of a fixed length.
# On a shared machine run it in chunks, each under the lock the other users honour.
set -euo pipefail
cd "$(dirname "$0")/.."

count=""
start=1
stop_at=""
phases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count="$2"; shift 2 ;;
    --start) start="$2"; shift 2 ;;
    --minutes) stop_at=$(($(date +%s) + 60 * $2)); shift 2 ;;
    after-dataplane|agent-bench|netlink-lock) phases+=("$1"); shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#phases[@]} -gt 0 ] || phases=(after-dataplane agent-bench netlink-lock)

cargo build --release --locked -q -p netrollout-agent --bins --examples
cargo build --release --locked -q -p netrollout-dataplane --example dataplane-bench
# The test binaries, built once; run directly (no cargo between repetitions).
test_bin() {
  cargo test -p netrollout-agent --test "$1" --no-run --locked --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1
}
it_bin=$(test_bin it)
lock_bin=$(test_bin netlink_lock)
[ -x "$it_bin" ] && [ -x "$lock_bin" ] || { echo "test binaries not built" >&2; exit 1; }
# As cargo runs them: from the package's directory.
in_pkg() { (cd crates/agent && "$@"); }

# repeat NAME N CMD...: runs CMD N times (numbered from --start), stops at the first failure.
repeat() {
  local name="$1" n="$2" i passed=0 t0
  shift 2
  for ((i = start; i < start + n; i++)); do
    t0=$(date +%s)
    if [ -n "$stop_at" ] && [ "$t0" -ge "$stop_at" ]; then
      echo "PASS ${name}: ${passed} of ${passed} passed (runs ${start}..$((i - 1)); time is up)"
      return 0
    fi
    if ! "$@" >"${log_dir}/${name}-${i}.log" 2>&1; then
      echo "FAIL ${name} run ${i}: ${passed} of $((i - start + 1)) passed; log ${log_dir}/${name}-${i}.log"
      tail -n 40 "${log_dir}/${name}-${i}.log"
      exit 1
    fi
    passed=$((passed + 1))
    echo "ok ${name} run ${i} ($(($(date +%s) - t0)) s, ended $(date -u +%H:%M:%S) UTC)"
  done
  echo "PASS ${name}: ${passed} of ${n} passed (runs ${start}..$((start + n - 1)))"
}

# (Run in an `if`, where `set -e` is off: chained.)
after_dataplane() {
  hack/bench.d/20-dataplane.sh && target/release/examples/agent-bench && in_pkg "$it_bin"
}

log_dir=$(mktemp -d -t repeat-agent.XXXXXX)
echo "logs in ${log_dir}"
for phase in "${phases[@]}"; do
  case "$phase" in
    after-dataplane) repeat after-dataplane "${count:-3}" after_dataplane ;;
    agent-bench) repeat agent-bench "${count:-200}" target/release/examples/agent-bench ;;
    netlink-lock) repeat netlink-lock "${count:-200}" in_pkg "$lock_bin" ;;
  esac
done
