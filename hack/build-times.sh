#!/usr/bin/env bash
# Cold build times of a tree against a baseline tree, measured in one run on the same machine,
# alternately, so that their ratio holds while the machine's speed moves: one tree's cold build
# moves by about a tenth from run to run on a 2-core machine, and by more between days.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: hack/build-times.sh [--debug] [--runs N] [BASE [TREE]]

Builds BASE and TREE (commits; TREE defaults to HEAD, BASE to 2569e99, the tree the build goals
in docs/benchmarks.md were set on) from cold, one after the other, N times each (default 3),
and prints each tree's build times, their medians and the ratio TREE / BASE.

  --release  cargo build --release --bins --locked          (the default)
  --debug    cargo build --workspace --all-targets --locked
  --runs N   cold builds of each tree (the medians need 3 to mean much)

Each tree is checked out in a scratch git worktree with its own target directory, emptied
before every build; the crates are fetched before the first build, so no download is timed.
Everything is removed at the end. It needs about 3 GB of disk per tree while it runs and
takes about 2 x N cold builds (6 min each on an idle 2-core machine): run it on an idle
machine, as the load of anything else moves the figures.
EOF
}

build=(cargo build --release --bins --locked)
runs=3
args=()
while [ $# -gt 0 ]; do
  case "$1" in
  --release) build=(cargo build --release --bins --locked) ;;
  --debug) build=(cargo build --workspace --all-targets --locked) ;;
  --runs)
    runs=${2:-}
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  -*)
    echo "build-times: unknown option $1 (see --help)" >&2
    exit 2
    ;;
  *) args+=("$1") ;;
  esac
  shift
done
[ ${#args[@]} -le 2 ] || {
  echo "build-times: at most two trees, BASE and TREE (see --help)" >&2
  exit 2
}
case "$runs" in
'' | *[!0-9]* | 0)
  echo "build-times: --runs takes a positive number, not '$runs'" >&2
  exit 2
  ;;
esac
cd "$(dirname "$0")/.."
base=${args[0]:-2569e99}
tree=${args[1]:-HEAD}
commit() {
  git rev-parse --verify --quiet "$1^{commit}" || {
    echo "build-times: '$1' is not a commit of this repository" >&2
    exit 2
  }
}
base_id=$(commit "$base")
tree_id=$(commit "$tree")

scratch=$(mktemp -d "${TMPDIR:-/tmp}/build-times.XXXXXX")
cleanup() {
  git worktree remove --force "$scratch/base" 2>/dev/null || true
  git worktree remove --force "$scratch/tree" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
for side in base tree; do
  id=${side}_id
  git worktree add --quiet --detach "$scratch/$side" "${!id}"
  (cd "$scratch/$side" && cargo fetch --locked --quiet)
done

echo "== build-times: ${build[*]}, $runs cold build(s) of each tree, alternated; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: >"$scratch/times"
# bash's `time` counts the CPU of every process the build starts (rustc, build scripts).
TIMEFORMAT='%R %U %S'
for run in $(seq "$runs"); do
  for side in base tree; do
    rm -rf "$scratch/target-$side"
    log="$scratch/$side.log"
    if ! { time (cd "$scratch/$side" && CARGO_TARGET_DIR="$scratch/target-$side" "${build[@]}" >"$log" 2>&1); } 2>"$scratch/time"; then
      echo "build-times: the build of $side (${!side}) failed; its last lines:" >&2
      tail -20 "$log" >&2
      exit 1
    fi
    read -r wall user sys <"$scratch/time"
    printf '%s\t%s\t%s\t%s\n' "$side" "$wall" "$user" "$sys" >>"$scratch/times"
    echo "   run $run, $side: $wall s wall, $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') s CPU" >&2
  done
done

# Each tree by the name it was given and its commit, unless the name is that commit.
label() {
  local short
  short=$(git rev-parse --short "$2")
  case "$2" in "$1"*) echo "$short" ;; *) echo "$1 ($short)" ;; esac
}
python3 - "$scratch/times" "$(label "$base" "$base_id")" "$(label "$tree" "$tree_id")" <<'EOF'
import statistics, sys
path, names = sys.argv[1], {"base": sys.argv[2], "tree": sys.argv[3]}
walls, cpus = {"base": [], "tree": []}, {"base": [], "tree": []}
for line in open(path):
    side, wall, user, sys_ = line.split("\t")
    walls[side].append(float(wall))
    cpus[side].append(float(user) + float(sys_))
med = {s: (statistics.median(walls[s]), statistics.median(cpus[s])) for s in walls}
print("| tree | wall of each build | median wall | median CPU |")
print("|---|---|---:|---:|")
for s in ("base", "tree"):
    each = ", ".join(f"{w:.0f} s" for w in walls[s])
    print(f"| {names[s]} | {each} | {med[s][0]:.0f} s | {med[s][1]:.0f} s |")
ratio = lambda i: f"{med['tree'][i] / med['base'][i]:.2f}x" if med["base"][i] else "n/a"
print(f"tree / base: {ratio(0)} of the median wall time, {ratio(1)} of the median CPU")
EOF
