#!/usr/bin/env bash
# Builds the binaries and brings the lab up: `hack/lab.sh up --nodes 5` (as root; Ctrl-C tears it
# down). Any netrollout-lab command works: `hack/lab.sh scenario bad-config`, `hack/lab.sh down`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ip >/dev/null || hack/install-deps.sh
cargo build --release --locked --bins -q
exec target/release/netrollout-lab "${@:-up}"
