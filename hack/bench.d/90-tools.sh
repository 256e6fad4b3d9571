#!/usr/bin/env bash
# kubectl-netrollout benchmark rows (issue 9): `diff` on a 1,000-node fleet against rendering.
set -euo pipefail
cargo run -q --release --locked -p kubectl-netrollout --example kubectl-bench
