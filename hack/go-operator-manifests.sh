#!/usr/bin/env bash
# The Go network operator's own manifests through netrollout, as a repeatable outside check.
#
# Usage: hack/go-operator-manifests.sh [--rollout] [--only REGEX] [DIR]
#
#   DIR            a checkout of telekom/das-schiff-network-operator (or NETROLLOUT_GO_OPERATOR_DIR);
#                  it stays outside this repository: the script refuses a directory inside it
#   --rollout      also roll out each file's converted objects in the VM lab, with traffic:
#                  `netrollout-lab scenario happy --vm --nodes 2 --manifests` (as root; qemu and
#                  Debian's kernel from hack/vm/deps.sh; a few minutes per file)
#   --only REGEX   with --rollout: only the files whose path matches REGEX (bash, extended)
#
# Every YAML file of DIR (but vendor/ and its CRDs) and every ```yaml block of its Markdown that
# holds objects of the operator's v1alpha1 groups goes through `kubectl netrollout migrate`,
# object by object (kubectl-netrollout's `go_operator` test does it: NETROLLOUT_GO_OPERATOR_DIR);
# what converts is applied with kubectl to the lab API server (the CRDs' schemas and CEL rules)
# and rendered for a fleet. Prints one table: file, kinds, how many converted, the objects
# refused or skipped and why, whether the converted ones rolled out with traffic. Exits 1 when
# the check or a rollout fails. Work files: ${TMPDIR:-/tmp}/netrollout-go-operator/.
set -euo pipefail
cd "$(dirname "$0")/.."
rollout=0 only="" dir="${NETROLLOUT_GO_OPERATOR_DIR:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --rollout) rollout=1 ;;
    --only) only="${2:?--only needs a regular expression}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "go-operator-manifests: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) dir="$1" ;;
  esac
  shift
done
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
  echo "go-operator-manifests: name a checkout of telekom/das-schiff-network-operator (DIR or NETROLLOUT_GO_OPERATOR_DIR)${dir:+; $dir is no directory}" >&2
  exit 2
fi
dir="$(cd "$dir" && pwd)"
case "$dir/" in
  "$PWD/"*) echo "go-operator-manifests: $dir is inside this repository; keep the operator's manifests outside it" >&2; exit 2 ;;
esac
out="${TMPDIR:-/tmp}/netrollout-go-operator"
rm -rf "$out"
mkdir -p "$out"
echo "go-operator-manifests: migrate, apply and render every manifest of $dir ..." >&2
if ! NETROLLOUT_GO_OPERATOR_DIR="$dir" NETROLLOUT_GO_OPERATOR_OUT="$out" \
  cargo test -q --locked -p kubectl-netrollout --test it go_operator -- --nocapture >"$out/check.log" 2>&1; then
  cat "$out/check.log" >&2
  echo "go-operator-manifests: the migrate/apply/render check failed (above)" >&2
  exit 1
fi
if [ "$rollout" = 1 ]; then
  hack/vm/deps.sh >/dev/null
  cargo build --locked --bins -q
fi
status=0
rows="$out/table.tsv"
printf 'FILE\tKINDS\tCONVERTED\tREFUSED OR SKIPPED (WHY)\tROLLED OUT\n' >"$rows"
while IFS=$'\t' read -r file kinds converted refused sub; do
  # The repository's own refused.yaml runs too; the table is about the operator's files.
  case "$file" in "$dir"/*) ;; *) continue ;; esac
  rel="${file#"$dir"/}"
  rolled="-"
  if [ "$sub" != "-" ]; then
    rolled="not run (--rollout)"
    if [ "$rollout" = 1 ] && [[ -z "$only" || "$rel" =~ $only ]]; then
      echo "go-operator-manifests: rolling out $rel in the VM lab (log $sub/lab.log) ..." >&2
      lab=(target/debug/netrollout-lab --state-dir "$sub/lab")
      "${lab[@]}" down >/dev/null 2>&1 || true
      if "${lab[@]}" scenario happy --vm --nodes 2 --manifests "$sub" >"$sub/lab.log" 2>&1; then
        nets="$(grep -o 'tenant traffic: workloads on [^,]*\(, [^,]*\)*' "$sub/lab.log" | head -1 | sed 's/.*workloads on //; s/, [0-9]* pair(s).*//')"
        rolled="yes, traffic on $nets"
      else
        rolled="FAILED ($sub/lab.log)"
        status=1
      fi
    elif [ "$rollout" = 1 ]; then
      rolled="not run (--only $only)"
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$rel" "$kinds" "$converted" "$refused" "$rolled" >>"$rows"
done <"$out/report.tsv"
column -t -s $'\t' "$rows"
grep -E '^[0-9]+ converted, [0-9]+ refused$' "$out/check.log" | sed 's/^/all objects (with the repository'"'"'s own refused.yaml): /' || true
exit "$status"
