#!/usr/bin/env bash
# The crates `Cargo.toml` builds unoptimised in the dev profile (`[profile.dev.package]`,
# opt-level 0: proc macros, build scripts and what only they use) must run inside the compiler
# only: a crate that tests or binaries also run would lose its optimisation there. And every
# crate that runs only inside the compiler must be listed, or it builds at the dependencies'
# opt-level 1 (a quarter of a cold debug build before the list; docs/building.md, "Profiles").
# Fails naming each crate and what to change.
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

failed=0
while read -r name; do
  echo "build-only: $name is listed at opt-level 0 but tests or binaries run it: drop its line from [profile.dev.package]"
  failed=1
done < <(comm -12 "$work/listed" "$work/run")
while read -r name; do
  echo "build-only: $name is listed at opt-level 0 but nothing builds it: drop its line from [profile.dev.package]"
  failed=1
done < <(comm -23 "$work/listed" "$work/built")
while read -r name; do
  echo "build-only: $name runs only inside the compiler: add \`$name = { opt-level = 0 }\` to [profile.dev.package]"
  failed=1
done < <(comm -23 "$work/compiler" "$work/listed")
[ "$failed" = 0 ] || exit 1
echo "build-only: ok ($(wc -l < "$work/listed") crates unoptimised in the dev profile, each run by the compiler only)"
