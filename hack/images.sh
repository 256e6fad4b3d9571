#!/usr/bin/env bash
# Builds the images of deploy/containers/ on this machine, without a registry.
#
#   hack/images.sh [--bin-dir DIR] [--refresh] [IMAGE...]
#
# IMAGE is a Containerfile's name without `.Containerfile` (netrollout-agent,
# netrollout-configurator, netrollout-lab-apiserver, kubectl-netrollout); all of them by default.
# The Containerfiles are used as they are:
# - their base images cannot be pulled here, so the script makes them from Debian's packages
#   with mmdebstrap and `podman import`s them under the names the Containerfiles use:
#   `docker.io/library/debian:RELEASE-slim` (mmdebstrap --variant=minbase, without manuals and
#   docs as Debian's slim images; RELEASE is $DEBIAN_RELEASE, default bookworm, also passed as
#   the build argument of that name) and
#   `gcr.io/distroless/cc-debian12:nonroot` (a stand-in: glibc, libgcc, CA certificates,
#   tzdata, netbase, the `nonroot` user 65532; no shell, no package manager). Each is made once
#   and reused while the recipe below is the same (`--refresh` makes them anew, e.g. for
#   Debian's security updates);
# - their `build` stage (a Rust toolchain image, which cannot be pulled either) is replaced by
#   the binaries already built: `--build-context build=DIR` with DIR/out/BINARY, so
#   `COPY --from=build /out/BINARY` takes this machine's binary. `--bin-dir` names where they are
#   (default target/release; missing ones are built there with `cargo build --release`);
#   target/debug works for tests;
# - the runtime stages run as written (the agent's installs FRR's vtysh and frr-reload.py with
#   apt from Debian's archive); podman's layer cache makes a second run with the same binaries
#   take seconds.
# Tags are the bundle's: the registry and version of deploy/netrollout.yaml's agent image
# (ghcr.io/netrollout/NAME:0.1.0). An image on another Debian release than bookworm (the agent's
# carries that release's FRR: trixie's is 10.3) is tagged with the release after the version
# (ghcr.io/netrollout/netrollout-agent:0.1.0-trixie), so it does not replace bookworm's (FRR
# 8.4), which the bundle and the container-mode lab run.
#
# Prints one hack/bench.sh row per image on stdout: the image's size against its binary's.
# Installs podman, runc and mmdebstrap when missing (Debian's packages). podman runs with runc
# and without default ulimits (.image-cache/containers.conf, through CONTAINERS_CONF): crun and
# podman's default nproc/nofile ulimits fail on some machines' cgroup and rlimit setup.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

bin_dir=target/release
refresh=0
images=()
while (($#)); do
  case $1 in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --refresh) refresh=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "images.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) images+=("$1"); shift ;;
  esac
done
if ((${#images[@]} == 0)); then
  for f in deploy/containers/*.Containerfile; do images+=("$(basename "$f" .Containerfile)"); done
fi
for image in "${images[@]}"; do
  [ -f "deploy/containers/$image.Containerfile" ] || {
    echo "images.sh: no deploy/containers/$image.Containerfile; the images are: $(cd deploy/containers && ls | sed 's/\.Containerfile$//' | tr '\n' ' ')" >&2
    exit 2
  }
done

missing=()
for p in podman runc mmdebstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "images.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cache=$root/.image-cache
mkdir -p "$cache"
# Only runc, and no default ulimits: see the header.
printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' >"$cache/containers.conf"
export CONTAINERS_CONF=$cache/containers.conf

# The bundle's registry and version, from its agent image.
agent_image=$(sed -n 's/^ *image: \(.*\/netrollout-agent:.*\)$/\1/p' deploy/netrollout.yaml | head -1)
[ -n "$agent_image" ] || { echo "images.sh: no netrollout-agent image in deploy/netrollout.yaml" >&2; exit 1; }
registry=${agent_image%/netrollout-agent:*}
version=${agent_image##*:}

# A base image from Debian's packages: TAG, then mmdebstrap's arguments (without the output).
# The recipe (the arguments and this script's hook) is the cache key, kept as a label.
base() {
  local tag=$1 key; shift
  key=$(printf '%s\n' "$@" "$(declare -f nonroot_hook)" | sha256sum | cut -c1-16)
  if ((refresh == 0)) && [ "$(podman image inspect --format '{{index .Labels "io.netrollout.base"}}' "$tag" 2>/dev/null)" = "$key" ]; then
    return
  fi
  local start=$SECONDS tmp
  tmp=$(mktemp -d "$cache/base.XXXXXX")
  echo "images.sh: making $tag from Debian's packages (mmdebstrap $*) ..." >&2
  mmdebstrap --quiet "$@" "$tmp/root.tar" >&2
  podman import --quiet "${changes[@]}" --change "LABEL io.netrollout.base=$key" "$tmp/root.tar" "$tag" >/dev/null
  rm -rf "$tmp"
  echo "images.sh: $tag made in $((SECONDS - start)) s" >&2
}

# The distroless stand-in's users, CA bundle and /tmp (mmdebstrap's extract variant runs no
# package scripts, so what ca-certificates' and base-passwd's scripts would make is made here).
nonroot_hook() {
  local r=$1
  mkdir -p "$r/etc/ssl/certs" "$r/tmp" "$r/home/nonroot"
  chmod 1777 "$r/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$r/etc/group"
  cat "$r"/usr/share/ca-certificates/mozilla/*.crt >"$r/etc/ssl/certs/ca-certificates.crt"
  chown 65532:65532 "$r/home/nonroot"
}

release=${DEBIAN_RELEASE:-bookworm}
needs() { grep -q "^FROM $1" "deploy/containers/$image.Containerfile"; }
for image in "${images[@]}"; do
  if needs 'docker.io/library/debian:'; then
    changes=(--change 'CMD ["bash"]')
    # As Debian's slim images: no manuals, docs (but the copyrights) or translations, also for
    # what a Containerfile installs later (the options stay in /etc/dpkg/dpkg.cfg.d).
    base "docker.io/library/debian:$release-slim" --variant=minbase \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/locale/*' "$release"
  fi
  if needs 'gcr.io/distroless/cc-debian12:nonroot'; then
    hook=$cache/nonroot-hook.sh
    { echo '#!/bin/bash'; echo 'set -eu'; declare -f nonroot_hook; echo 'nonroot_hook "$1"'; } >"$hook"
    chmod +x "$hook"
    changes=(--change 'USER 65532:65532' --change 'WORKDIR /home/nonroot')
    base gcr.io/distroless/cc-debian12:nonroot --variant=extract \
      --include=libc6,libgcc-s1,ca-certificates,tzdata,netbase,base-files \
      --extract-hook="$hook \"\$1\"" bookworm
  fi
done

build_args=()
[ -z "${DEBIAN_RELEASE:-}" ] || build_args+=(--build-arg "DEBIAN_RELEASE=$DEBIAN_RELEASE")
for image in "${images[@]}"; do
  file=deploy/containers/$image.Containerfile
  binary=$(sed -n 's|^COPY --from=build /out/\([^ ]*\) .*|\1|p' "$file" | head -1)
  [ -n "$binary" ] || { echo "images.sh: $file copies no /out/BINARY from its build stage" >&2; exit 1; }
  if [ ! -x "$bin_dir/$binary" ]; then
    [ "$bin_dir" = target/release ] || { echo "images.sh: $bin_dir/$binary not found; build it or pass another --bin-dir" >&2; exit 1; }
    echo "images.sh: building $binary (cargo build --release) ..." >&2
    cargo build --release --locked --bin "$binary" -q
  fi
  ctx=$cache/build/$image
  rm -rf "$ctx"
  mkdir -p "$ctx/out"
  cp "$bin_dir/$binary" "$ctx/out/$binary"
  tag=$registry/$image:$version
  if needs 'docker.io/library/debian:' && [ "$release" != bookworm ]; then tag=$tag-$release; fi
  start=$SECONDS
  log=$cache/build-$image.log
  podman build --network host "${build_args[@]}" --build-context "build=$ctx" \
    -f "$file" -t "$tag" . >"$log" 2>&1 || {
    tail -40 "$log" >&2
    echo "images.sh: building $tag failed; the whole log is $log" >&2
    exit 1
  }
  rm -rf "$ctx"
  echo "images.sh: $tag built in $((SECONDS - start)) s" >&2
  size=$(podman image inspect --format '{{.Size}}' "$tag")
  bin_size=$(stat -c %s "$bin_dir/$binary")
  awk -v image="$image" -v kind="$(basename "$(readlink -f "$bin_dir")")" -v s="$size" -v b="$bin_size" \
    'BEGIN { printf "images\t%s image size (%s binary)\t%.1f MB\t%.1f MB (the binary)\t%.2fx\t-\n", image, kind, s / 1e6, b / 1e6, s / b }'
done
