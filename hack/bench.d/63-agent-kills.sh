#!/usr/bin/env bash
# Agent kill -9 with real FRR (issue 27; needs root and FRR, hack/install-deps.sh): the agent's
# `tests/it/kills.rs` — 200 kills of the real agent (and the helpers it runs, frr-reload.py among
# them) at random moments of applies that change kernel objects and FRR text, in parallel network
# namespaces, each with zebra + bgpd and an eBGP peer. Rows: kills, half-applied configs found
# after the restarts, restarts that found a journal and restored, and the recovery time (kill ->
# settled: recovered, journal removed, final status), median and max. Prints TAB-separated rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(cargo test --release -q -p netrollout-agent --test it --locked -- kills:: --nocapture 2>&1) || {
  echo "$out" >&2
  echo "agent kills: the kill test failed" >&2
  exit 1
}
# `-q` prints a dot per test, and a test's own line may follow one: strip them from line starts.
lines=$(sed -E 's/^\.+//' <<<"$out")
kills=$(grep -oE '^kills: [0-9]+ in [0-9]+ revisions over [0-9]+ namespaces in [0-9.]+ s' <<<"$lines") || true
summary=$(grep -oE '^half-applied found: .*' <<<"$lines") || true
[ -n "$kills" ] && [ -n "$summary" ] || { echo "$out" >&2; echo "agent kills: no figures printed" >&2; exit 1; }
n=$(awk '{print $2}' <<<"$kills"); secs=$(awk '{print $(NF-1)}' <<<"$kills")
half=$(grep -oE 'half-applied found: [0-9]+' <<<"$summary" | grep -oE '[0-9]+$')
found=$(grep -oE 'found a journal: [0-9]+' <<<"$summary" | grep -oE '[0-9]+$')
restored=$(grep -oE 'restored: [0-9]+' <<<"$summary" | grep -oE '[0-9]+$')
median=$(grep -oE 'median [0-9]+ ms' <<<"$summary" | grep -oE '[0-9]+')
max=$(grep -oE 'max [0-9]+ ms' <<<"$summary" | grep -oE '[0-9]+')
printf 'agent\tkill -9 with FRR: kills / half-applied / restored of journals found\t%s / %s / %s of %s\t-\t-\t>= 200 kills, 0 half-applied\n' "$n" "$half" "$restored" "$found"
printf 'agent\tkill -9 with FRR: recovery (kill -> settled), median / max\t%s / %s ms\t-\t-\t-\n' "$median" "$max"
printf 'agent\tkill -9 with FRR: whole run (parallel namespaces)\t%s s\t-\t-\t<= 150 s\n' "$secs"
