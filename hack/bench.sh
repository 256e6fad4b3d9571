#!/usr/bin/env bash
# Runs every benchmark and prints one table. Each script in hack/bench.d/ prints rows of
# tab-separated fields: area, benchmark, measured, baseline (same run), ratio, goal.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --workspace --all-targets --locked >&2
{
  printf 'AREA\tBENCHMARK\tMEASURED\tBASELINE\tRATIO\tGOAL\n'
  for b in hack/bench.d/*.sh; do
    [ -e "$b" ] || continue
    "$b"
  done
} | column -t -s $'\t'
