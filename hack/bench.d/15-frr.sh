#!/usr/bin/env bash
# FRR renderer benchmark row (issue 12): render 100 VRFs + 1,000 layer-2 networks (goal < 10 ms).
set -euo pipefail
cargo run -q --release --locked -p netrollout-frr --example frr-bench
