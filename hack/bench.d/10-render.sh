#!/usr/bin/env bash
# Render benchmark rows (issue 2).
set -euo pipefail
cargo run -q --release --locked -p netrollout-render --example render-bench
