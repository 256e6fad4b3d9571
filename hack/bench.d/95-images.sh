#!/usr/bin/env bash
# Image sizes: every image of deploy/containers/ built by hack/images.sh from the release
# binaries (hack/bench.sh builds them first); each row is the image against its binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
hack/images.sh --bin-dir "${CARGO_TARGET_DIR:-target}/release"
