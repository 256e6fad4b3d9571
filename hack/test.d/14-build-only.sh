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
# From Cargo.toml: the dev profile's crates at opt-level 0 (listed), all its entries (entries),
# and the dependencies the release profile builds at 0 (cold).
python3 - "$work" <<'EOF'
import sys, tomllib
profile = tomllib.load(open("Cargo.toml", "rb"))["profile"]
dev = {n: c for n, c in profile["dev"]["package"].items() if n != "*"}
release = profile["release"].get("package", {})
files = {
    "listed": [n for n, c in dev.items() if c.get("opt-level") == 0],
    "entries": list(dev),
    "cold": [n for n, c in release.items()
             if c.get("opt-level") == 0 and not n.startswith(("netrollout-", "kubectl-"))],
}
for file, names in files.items():
    with open(f"{sys.argv[1]}/{file}", "w") as out:
        out.writelines(f"{n}\n" for n in names)
EOF
for f in listed entries cold; do sort -o "$work/$f" "$work/$f"; done  # in comm's order

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
