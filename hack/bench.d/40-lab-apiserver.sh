#!/usr/bin/env bash
# Lab API server benchmarks: 1,000 watchers under sustained writes, memory per stored
# object, writes/s of a CEL-validated kind, and the server's CPU per write and per delivered
# watch event under the 10,000-node rollout's load (the configurator benchmark's watchers, then
# real agents' watchers pinned by name). Prints hack/bench.sh rows. Needs the release
# example built (hack/bench.sh does it; CARGO_TARGET_DIR is honoured). The example runs mimalloc,
# the server binary's allocator.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${CARGO_TARGET_DIR:-target}/release/examples/apiserver-bench
[ -x "$bin" ] || cargo build --release --locked -p netrollout-lab-apiserver --example apiserver-bench >&2
ulimit -n 65536 2>/dev/null || true
"$bin" watch 1000 6
"$bin" memory 100000
"$bin" cel 6
"$bin" rollout 10000 sim
"$bin" rollout 10000 agents
