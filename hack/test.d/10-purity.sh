#!/usr/bin/env bash
# The pure core stays pure in Cargo too: the normal dependency tree of the renderer, the rollout
# crate (the planner and the revision lifecycle), the FRR renderer and the CRD checks (schema and
# CEL rules, which the kubectl plugin links) holds no async runtime, no HTTP stack, no Kubernetes
# client and no netlink. A shared workspace dependency entry that switches on a client feature,
# or a new dependency that drags one in, fails here with the path to it. The decision modules of
# the rollout crate are also checked in their source: they read no clock and touch no file,
# socket or thread (the caller passes `now`).
# The agent's transaction core, a module of an I/O crate, is checked on its source too (below).
set -euo pipefail
cd "$(dirname "$0")/../.."

forbidden='tokio hyper kube-client rtnetlink netlink-sys'
candidates='netrollout-render netrollout-rollout netrollout-frr netrollout-crdcheck'

# The workspace's package names, from cargo metadata (so a package that does not exist yet is
# skipped by name, and a renamed one is noticed).
members=$(cargo metadata --locked --no-deps --format-version 1 |
  python3 -c 'import json,sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')

checked=0
failed=0
for pkg in $candidates; do
  if ! grep -qx "$pkg" <<<"$members"; then
    echo "purity: $pkg is not in this workspace; nothing to check"
    continue
  fi
  tree=$(cargo tree --locked -p "$pkg" -e normal --prefix none)
  count=$(sed 's/ (\*)$//; s/ (proc-macro)$//' <<<"$tree" | sort -u | wc -l)
  found=''
  for crate in $forbidden; do
    if grep -q "^$crate v" <<<"$tree"; then
      echo "FAIL: $pkg's normal dependency tree contains $crate; the path to it:" >&2
      cargo tree --locked -p "$pkg" -e normal -i "$crate" >&2
      found="$found $crate"
      failed=1
    fi
  done
  if [ -z "$found" ]; then
    echo "purity: $pkg: $count crates in its normal tree, none of: $forbidden"
  else
    echo "purity: $pkg: $count crates in its normal tree, including:$found" >&2
  fi
  checked=$((checked + 1))
done

# The pure decisions (and the simulator that drives them in virtual time), by module: each must
# exist (a move out of the crate is noticed) and read no clock nor do I/O through std.
decisions='crates/rollout/src/plan crates/rollout/src/plan.rs crates/rollout/src/lifecycle crates/rollout/src/sim'
io_in_std='SystemTime|Instant::now|std::fs|std::net|std::process|std::thread|std::env'
for module in $decisions; do
  if [ ! -e "$module" ]; then
    echo "FAIL: $module is gone; the pure decisions live in netrollout-rollout" >&2
    failed=1
    continue
  fi
  if hits=$(grep -rnE "$io_in_std" "$module" --include='*.rs'); then
    echo "FAIL: $module reads a clock or does I/O (pass it in as data):" >&2
    echo "$hits" >&2
    failed=1
  else
    echo "purity: $module: no clock, no I/O"
  fi
done

# The agent's transaction core is a module of the agent crate (which needs tokio and netlink),
# so its purity is checked on its source: the core's files and the modules they use may name no
# async runtime, netlink, Kubernetes client, file system, process, socket or clock, and the core
# may use only the agent's pure modules (grep-based: a `use`, a path or a call names them).
core_files=$(find crates/agent/src/txn -name '*.rs' -not -path '*/tests/*' | sort)
pure_mods='convert outcome reason report state txn'
pure_files="$core_files $(for m in $pure_mods; do if [ -f "crates/agent/src/$m.rs" ]; then echo "crates/agent/src/$m.rs"; fi; done)"
forbidden_src='tokio|rtnetlink|netlink_|\bkube\b|k8s_openapi|std::fs|std::io|std::process|std::thread|TcpStream|UdpSocket|SystemTime|Instant::now|Timestamp::now|\bDataplane\b|\bStore\b'
if hits=$(grep -nE "$forbidden_src" $pure_files | grep -vE '^[^:]+:[0-9]+:\s*//'); then
  echo "FAIL: the agent's transaction core (or a module it uses) does I/O or reads a clock:" >&2
  echo "$hits" >&2
  failed=1
fi
used=$(cat $core_files | grep -vE '^\s*//' | grep -oE 'crate::[a-z_]+' | sort -u | sed 's/crate:://')
for m in $used; do
  if ! grep -qw "$m" <<<"$pure_mods"; then
    echo "FAIL: the agent's transaction core uses crate::$m, which is not one of its pure modules ($pure_mods)" >&2
    failed=1
  fi
done
echo "purity: agent transaction core: $(wc -w <<<"$pure_files") files (crates/agent/src/txn and crate::{${pure_mods// /,}}), no I/O or clock named"
checked=$((checked + 1))

[ "$checked" -ge 2 ] || { echo "FAIL: checked $checked packages; expected at least render and rollout" >&2; exit 1; }
[ "$failed" -eq 0 ] || exit 1
echo "purity: ok"
