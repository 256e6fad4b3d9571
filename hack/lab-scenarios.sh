#!/usr/bin/env bash
# The end-to-end suite: every lab scenario against the real binaries, namespaces and lab API server.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked --bins -q
target/debug/netrollout-lab down >/dev/null
target/debug/netrollout-lab scenario all --state-dir "${TMPDIR:-/tmp}/netrollout-lab-ci"
