#!/usr/bin/env bash
# The crates `Cargo.toml` builds unoptimised in the dev profile (`[profile.dev.package]`,
# opt-level 0) are of two kinds, and each listed crate must be one of them:
# - proc macros, build scripts and what only they use: they run inside the compiler only. Every
#   such crate must be listed, or it builds at the dependencies' opt-level 1 (a quarter of a cold
#   debug build before the list; docs/building.md, "Profiles").
# - crates with no hot path, which `[profile.release.package]` builds at opt-level 0 too (the
#   reason is given there). Every such crate must have a line in the dev profile as well: at 0,
#   or at 1 with the reason it is hot in the tests (generic code the dev profile shares).
# A crate that tests or binaries run and that the release profile optimises must not be listed:
# it would lose its optimisation in the tests. Fails naming each crate and what to change.
set -euo pipefail
cd "$(dirname "$0")/../.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Crate names as cargo builds them on this platform (with the real feature resolver); our own
# packages are left out.
names() {
  cargo tree --locked --workspace --target "$(rustc -vV | sed -n 's/^host: //p')" \
    --prefix none -f '{p}' "$@" | sed -E 's/ .*//' |
    grep -v -E '^(netrollout-|kubectl-netrollout$)' | sort -u
}
# Everything built, and what tests and binaries run (no build scripts' or proc macros' edges).
names -e normal,build,dev > "$work/built"
names -e normal,dev,no-proc-macro > "$work/run"
comm -23 "$work/built" "$work/run" > "$work/compiler"
python3 -c '
import sys, tomllib
packages = tomllib.load(open("Cargo.toml", "rb"))["profile"]["dev"]["package"]
for name, cfg in packages.items():
    if name != "*" and cfg.get("opt-level") == 0:
        print(name)
' | sort > "$work/listed"
python3 -c '
import tomllib
print("\n".join(n for n in tomllib.load(open("Cargo.toml", "rb"))["profile"]["dev"]["package"] if n != "*"))
' | sort > "$work/entries"
python3 -c '
import tomllib
packages = tomllib.load(open("Cargo.toml", "rb"))["profile"]["release"].get("package", {})
for name, cfg in packages.items():
    if cfg.get("opt-level") == 0 and not name.startswith(("netrollout-", "kubectl-")):
        print(name)
' | sort > "$work/cold"

failed=0
while read -r name; do
  echo "build-only: $name is listed at opt-level 0 but tests or binaries run it and the release profile optimises it: drop its line from [profile.dev.package]"
  failed=1
done < <(comm -12 "$work/listed" "$work/run" | comm -23 - "$work/cold")
while read -r name; do
  echo "build-only: $name has no hot path ([profile.release.package] builds it at opt-level 0): add \`$name = { opt-level = 0 }\` to [profile.dev.package] (or opt-level 1, saying why the tests need it optimised)"
  failed=1
done < <(comm -23 "$work/cold" "$work/entries")
while read -r name; do
  echo "build-only: $name is listed at opt-level 0 but nothing builds it: drop its line from [profile.dev.package]"
  failed=1
done < <(comm -23 "$work/listed" "$work/built")
while read -r name; do
  echo "build-only: $name runs only inside the compiler: add \`$name = { opt-level = 0 }\` to [profile.dev.package]"
  failed=1
done < <(comm -23 "$work/compiler" "$work/listed")
[ "$failed" = 0 ] || exit 1
echo "build-only: ok ($(wc -l < "$work/listed") crates unoptimised in the dev profile: $(comm -12 "$work/listed" "$work/cold" | wc -l) without a hot path as in release, the rest run by the compiler only)"
