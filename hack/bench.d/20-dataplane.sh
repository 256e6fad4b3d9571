#!/usr/bin/env bash
# Dataplane benchmarks (needs root; hack/bench.sh has built the release examples): 1,000 Layer2
# networks applied from scratch against `ip -batch` of the same objects in the same run,
# re-apply of the unchanged config, and a change of 10 of the 1,000. Prints TAB-separated rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=target/release/examples/dataplane-bench
[ -x "$bin" ] || cargo build --release -p netrollout-dataplane --example dataplane-bench --locked >&2
"$bin" --runs 3
