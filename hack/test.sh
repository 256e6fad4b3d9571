#!/usr/bin/env bash
# Runs every test of the project: installs what the tests need, runs the Rust test suites of the
# whole workspace (unit, property, simulator, kernel-in-namespace and lab end-to-end tests), then
# each extra suite in hack/test.d/ (such as the real-kernel VM suite). Needs root for namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."

hack/install-deps.sh
cargo test --workspace --locked
for suite in hack/test.d/*.sh; do
  [ -e "$suite" ] || continue
  echo "== $suite" >&2
  start=$SECONDS
  "$suite"
  echo "== $suite: passed in $((SECONDS - start)) s" >&2
done
echo "test.sh: all suites passed" >&2
