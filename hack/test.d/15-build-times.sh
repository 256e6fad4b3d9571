#!/usr/bin/env bash
# hack/build-times.sh, in a scratch repository of two commits with a stand-in cargo (a few
# seconds): every build starts from an empty target directory, in a checkout of its own tree,
# the trees alternate, the table lists every build with the medians and the ratio, a failed
# build is named and fails the run, and no worktree or scratch directory is left behind.
# Non-zero, with the run's output, when a promise breaks.
set -euo pipefail
cd "$(dirname "$0")/../.."

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/repo/hack" "$t/bin" "$t/tmp"
cp hack/build-times.sh "$t/repo/hack/"
git -C "$t/repo" init --quiet
git -C "$t/repo" -c user.name=t -c user.email=t@t add -A
git -C "$t/repo" -c user.name=t -c user.email=t@t commit --quiet -m base
git -C "$t/repo" -c user.name=t -c user.email=t@t commit --quiet --allow-empty -m tree
base=$(git -C "$t/repo" rev-parse HEAD~1)
tree=$(git -C "$t/repo" rev-parse HEAD)
# The stand-in cargo: `fetch` is noted; a build notes the commit it runs in and refuses a target
# directory that is not empty, then leaves a file in it (as a real build leaves 3 GB).
cat >"$t/bin/cargo" <<'EOF'
#!/bin/sh
case "$1" in
fetch) echo "fetch $(git rev-parse HEAD)" >>"$T/calls" ;;
build)
  here=$(git rev-parse HEAD)
  echo "build $here $*" >>"$T/calls"
  if [ -n "$(ls -A "$CARGO_TARGET_DIR" 2>/dev/null)" ]; then echo "target directory not empty"; exit 3; fi
  [ "$here" != "${FAIL_IN:-}" ] || { echo "error[E0308]: mismatched types"; exit 101; }
  mkdir -p "$CARGO_TARGET_DIR/release" && echo x >"$CARGO_TARGET_DIR/release/built"
  ;;
esac
EOF
chmod +x "$t/bin/cargo"

fail() { echo "build-times: $1; the run said:"; cat "$t/out"; exit 1; } >&2
run() { # EXPECTED-EXIT ARGS...
  local want=$1 rc=0
  shift
  : >"$t/calls"
  env PATH="$t/bin:$PATH" T="$t" TMPDIR="$t/tmp" "$t/repo/hack/build-times.sh" "$@" >"$t/out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || fail "build-times.sh $* exited $rc, not $want"
  [ -z "$(ls -A "$t/tmp")" ] || fail "the scratch directory was left behind"
  [ "$(git -C "$t/repo" worktree list | wc -l)" = 1 ] || fail "a worktree was left behind"
}

run 0 --runs 3 HEAD~1
[ "$(grep -c '^fetch' "$t/calls")" = 2 ] || fail "the crates were not fetched once per tree"
order=$(grep '^build' "$t/calls" | cut -d' ' -f2 | tr '\n' ' ')
[ "$order" = "$base $tree $base $tree $base $tree " ] || fail "the builds did not alternate base, tree: $order"
grep '^build' "$t/calls" | grep -qv -- '--release --bins --locked' && fail "a build was not the release build"
grep -q "^| HEAD~1 (${base:0:7}) | [0-9]* s, [0-9]* s, [0-9]* s | [0-9]* s | [0-9]* s |$" "$t/out" ||
  fail "the base's row does not list its three builds and medians"
grep -q "^| HEAD (${tree:0:7}) | [0-9]* s, [0-9]* s, [0-9]* s |" "$t/out" || fail "the tree's row is missing"
grep -Eq '^tree / base: ([0-9.]+x|n/a) of the median wall time' "$t/out" || fail "no ratio line"

run 0 --debug --runs 1 "$base" "$tree"
[ "$(grep -c -- '^build .* --workspace --all-targets --locked' "$t/calls")" = 2 ] || fail "--debug did not build every target"

FAIL_IN=$tree run 1 --runs 2 "$base"
grep -q "the build of tree (HEAD) failed" "$t/out" || fail "the failed build is not named"
grep -q "mismatched types" "$t/out" || fail "the failed build's output is not shown"
[ "$(grep -c '^build' "$t/calls")" = 2 ] || fail "the run went on after a failed build"

run 2 --runs 0
run 2 not-a-commit
grep -q "'not-a-commit' is not a commit" "$t/out" || fail "a wrong tree is not named"
echo "build-times: cold, alternated builds of both trees, tabled with medians and the ratio; failures named; nothing left behind" >&2
