#!/usr/bin/env bash
# Agent crash points (issue 27): the transaction core's deterministic crash-point tests on the
# model world (model kernel, model FRR, a disk that loses or tears unsynced writes). Rows: the
# single crash points enumerated and passed (every point between two effects and inside the
# kernel, FRR and state writes, in three crash modes, five scenarios), the double crashes (a
# second crash at every point of the restart), and how long the enumeration takes. No root.
# Prints TAB-separated rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s.%N)
out=$(cargo test --release -q -p netrollout-agent --lib --locked -- txn::tests::crash --nocapture --test-threads=1 2>&1) || {
  echo "$out" >&2
  echo "agent crash points: the crash-point tests failed" >&2
  exit 1
}
t1=$(date +%s.%N)
# `-q` prints a dot per test, and a test's own line may follow one: strip them from line starts.
lines=$(sed -E 's/^\.+//' <<<"$out")
single=$(grep -oE '^crash points enumerated: [0-9]+, passed: [0-9]+' <<<"$lines")
double=$(grep -oE '^double crash points enumerated: [0-9]+, passed: [0-9]+' <<<"$lines")
[ -n "$single" ] && [ -n "$double" ] || { echo "$out" >&2; echo "agent crash points: no counts printed" >&2; exit 1; }
n1=$(grep -oE 'enumerated: [0-9]+' <<<"$single" | grep -oE '[0-9]+'); p1=$(grep -oE 'passed: [0-9]+' <<<"$single" | grep -oE '[0-9]+')
n2=$(grep -oE 'enumerated: [0-9]+' <<<"$double" | grep -oE '[0-9]+'); p2=$(grep -oE 'passed: [0-9]+' <<<"$double" | grep -oE '[0-9]+')
printf 'agent\tcrash points passed / enumerated (model)\t%s / %s\t-\t-\tall pass, >= 400\n' "$p1" "$n1"
printf 'agent\tdouble crash points passed / enumerated (model)\t%s / %s\t-\t-\tall pass, >= 1000\n' "$p2" "$n2"
printf 'agent\tcrash-point enumeration (release, incl. build check)\t%.1f s\t-\t-\t-\n' "$(echo "$t1 - $t0" | bc)"
