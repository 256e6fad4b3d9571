#!/usr/bin/env bash
# `cargo test -p ONE_CRATE` after a workspace build reuses the workspace's compiled dependencies:
# for every package, each third-party crate its tests build (normal, build and dev edges) has
# the feature set the whole workspace builds it with. The workspace-hack crate
# (crates/workspace-hack, written by `cargo hakari generate`) makes that true; a new dependency
# or feature that breaks it fails here, naming the crate and both feature sets
# (docs/building.md, "One build of every dependency").
set -euo pipefail
cd "$(dirname "$0")/../.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One line per third-party crate and feature set; our own packages are left out.
tree() {
  cargo tree --locked "$@" --prefix none -f '{p} [{f}]' |
    sed -E 's/ \(\*\)$//; s/ \(proc-macro\)$//; s/ \([^)]*\)//' |
    grep -v -E '^(netrollout-|kubectl-netrollout)' | sort -u
}

tree --workspace -e normal,build,dev > "$work/workspace"
members=$(cargo metadata --locked --no-deps --format-version 1 |
  python3 -c 'import json,sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')

failed=0
checked=0
for pkg in $members; do
  tree -p "$pkg" -e normal,build,dev > "$work/pkg"
  other=$(comm -23 "$work/pkg" "$work/workspace")
  total=$(wc -l < "$work/pkg")
  if [ -n "$other" ]; then
    echo "FAIL: cargo test -p $pkg builds these crates in another feature set than the workspace:" >&2
    while read -r name version _; do
      echo "  $name $version: -p $pkg: $(grep "^$name $version " "$work/pkg" | cut -d' ' -f3-); workspace: $(grep "^$name $version " "$work/workspace" | cut -d' ' -f3- | paste -sd' ')" >&2
    done <<<"$other"
    failed=1
  else
    echo "workspace-hack: cargo test -p $pkg: all $total dependencies as in the workspace build"
  fi
  checked=$((checked + 1))
done

[ "$checked" -ge 10 ] || { echo "FAIL: checked $checked packages; expected the whole workspace" >&2; exit 1; }
if [ "$failed" -ne 0 ]; then
  echo "Run \`cargo hakari generate\` (cargo install cargo-hakari --locked) and commit crates/workspace-hack/Cargo.toml." >&2
  exit 1
fi
echo "workspace-hack: ok ($checked packages)"
