#!/usr/bin/env bash
# Runs every test of the project: installs what the tests need, runs the Rust test suites of the
# whole workspace (unit, property, simulator, kernel-in-namespace and lab end-to-end tests), then
# each extra suite in hack/test.d/ (such as the real-kernel VM suite). Needs root for namespaces.
#
# The suites run in two lanes at once: the ones marked `# test.sh: beside the others` (a qemu
# guest running one test binary: CPU-bound, nothing shared on this machine) in one lane, every
# other suite (labs, checks: mostly waiting) in the other, each lane in name order. Each suite's
# output is printed when it ends; a lane stops at its first failure and test.sh fails when either
# lane did. `cargo test` holds cargo's lock on the target directory while its tests run, so the
# lanes start after it (a suite's own cargo call would wait for it).
set -euo pipefail
cd "$(dirname "$0")/.."

hack/install-deps.sh
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$SECONDS
# Built first (the same build the test run then finds fresh) to learn which package and target
# each test binary is: cargo's "Running" lines name only the file (most are `tests/it/main.rs`).
cargo test --workspace --locked --no-run --message-format=json-render-diagnostics >"$logs/artifacts"
cargo test --workspace --locked 2>&1 | tee "$logs/cargo-test"
echo "== cargo test --workspace: passed in $((SECONDS - start)) s" >&2
# Each test binary's run time, slowest first: a test that turns slow (as the lab API server's
# slow-watcher test did, 4 s to 11 s, when a build profile left kube-core unoptimised) shows
# here, with no timed test.
python3 - "$logs/artifacts" "$logs/cargo-test" >&2 <<'EOF'
import json, os, re, sys

def package(id):
    # "path+file:///src/crates/agent#netrollout-agent@0.1.0", or "...#0.1.0" when the name is
    # the directory's; the older form is "netrollout-agent 0.1.0 (path+file:///...)".
    if "#" not in id:
        return id.split(" ")[0]
    url, frag = id.rsplit("#", 1)
    return frag.split("@")[0] if "@" in frag else url.rstrip("/").rsplit("/", 1)[-1]

names = {}
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        names[os.path.basename(m["executable"])] = f"{package(m['package_id'])} {m['target']['name']}"
running, times = None, []
for line in open(sys.argv[2], errors="replace"):
    if m := re.match(r"\s+Running .*\((.+)\)$", line):
        running = names.get(os.path.basename(m.group(1)), m.group(1))
    elif m := re.match(r"\s+Doc-tests (\S+)", line):
        running = f"{m.group(1)} doctests"
    elif running and (m := re.match(r"test result: .*finished in ([0-9.]+)s", line)):
        times.append((float(m.group(1)), running))
        running = None
if times:
    print(f"== test binaries: {len(times)}, {sum(t for t, _ in times):.1f} s of run time; the slowest:")
    for t, name in sorted(times, reverse=True)[:10]:
        print(f"   {t:7.1f} s  {name}")
EOF
# Runs the suites given, in order, until one fails; prints each one's output when it ends.
lane() {
  local suite name start rc
  for suite in "$@"; do
    name=$(basename "$suite")
    start=$SECONDS
    rc=0
    "$suite" >"$logs/$name.log" 2>&1 || rc=$?
    {
      echo "== $suite"
      cat "$logs/$name.log"
      if [ "$rc" = 0 ]; then
        echo "== $suite: passed in $((SECONDS - start)) s"
      else
        echo "== $suite: FAILED (exit $rc) after $((SECONDS - start)) s"
      fi
    } >&2
    [ "$rc" = 0 ] || return 1
  done
}
beside=()
others=()
for suite in hack/test.d/*.sh; do
  [ -e "$suite" ] || continue
  if grep -q '^# test.sh: beside the others' "$suite"; then beside+=("$suite"); else others+=("$suite"); fi
done
# The VM kernel, fetched once before two suites could want it at the same time.
if [ "${#beside[@]}" -gt 0 ]; then hack/vm/deps.sh >/dev/null; fi
start=$SECONDS
lane "${beside[@]}" &
beside_pid=$!
failed=0
lane "${others[@]}" || failed=1
wait "$beside_pid" || failed=1
[ "$failed" = 0 ] || { echo "test.sh: a suite failed (its output above)" >&2; exit 1; }
echo "test.sh: all suites passed ($((SECONDS - start)) s for the suites)" >&2
