#!/usr/bin/env bash
# Build the offline Molecule test images: Debian 12 (bookworm) with systemd as
# PID 1, for amd64 and arm64 (the Kunpeng stand-in, run through qemu-user).
#
# No registry is needed: the root filesystem comes from debootstrap against a
# Debian mirror and is turned into an image with `docker import`.  An image is
# tagged with a hash of this script, so it is rebuilt only when the script
# changes; `kvllm/debian12:<arch>` always points at the current build.
#
# Usage: molecule/images/build.sh [amd64] [arm64]      (default: both)
# Env:   KV_DEBIAN_MIRROR  mirror URL (default: the host's apt source, else
#                          http://deb.debian.org/debian)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hash=$(sha256sum "$here/build.sh" | cut -c1-12)
repo=kvllm/debian12
packages=python3,python3-apt,systemd,systemd-sysv,dbus,sudo,iproute2,ca-certificates

log() { printf 'images: %s\n' "$*" >&2; }

mirror() {
  if [ -n "${KV_DEBIAN_MIRROR:-}" ]; then
    echo "$KV_DEBIAN_MIRROR"; return
  fi
  local url
  url=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
        | grep -oE 'https?://[^ ]+/debian/?$' | head -n1 || true)
  echo "${url:-http://deb.debian.org/debian}"
}

build() {
  local arch=$1 tag="$repo:$1-$hash"
  if docker image inspect "$tag" >/dev/null 2>&1; then
    log "$tag exists, reusing it"
  else
    local rootfs
    rootfs=$(mktemp -d /var/tmp/kvllm-rootfs.XXXXXX)
    trap 'rm -rf "$rootfs"' RETURN
    log "debootstrap $arch into $rootfs from $(mirror)"
    debootstrap --variant=minbase --arch="$arch" --include="$packages" \
      bookworm "$rootfs" "$(mirror)" >"$rootfs.log" 2>&1 \
      || { tail -n 30 "$rootfs.log" >&2; exit 1; }
    rm -f "$rootfs.log"
    : >"$rootfs/etc/machine-id"
    chroot "$rootfs" apt-get clean 2>/dev/null || rm -rf "$rootfs"/var/cache/apt/archives/*.deb
    rm -rf "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import \
      --change 'ENV container=docker' \
      --change 'CMD ["/lib/systemd/systemd"]' - "$tag" >/dev/null
    if [ "$arch" != amd64 ]; then
      fix_arch "$tag" "$arch"
    fi
    log "built $tag"
  fi
  docker tag "$tag" "$repo:$arch"
}

# Docker 20.10 ignores `docker import --platform`: rewrite the architecture in
# the image config through save/edit/load so the engine runs it under qemu.
fix_arch() {
  local tag=$1 arch=$2 work cfg
  work=$(mktemp -d /var/tmp/kvllm-save.XXXXXX)
  docker save "$tag" | tar -C "$work" -x
  cfg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Config"])' "$work/manifest.json")
  python3 - "$work/$cfg" "$arch" <<'PY'
import json, sys
path, arch = sys.argv[1], sys.argv[2]
with open(path) as f:
    cfg = json.load(f)
cfg["architecture"] = arch
if arch == "arm64":
    cfg["variant"] = "v8"
with open(path, "w") as f:
    json.dump(cfg, f)
PY
  # The config file is named by its digest; the engine re-hashes on load.
  local new
  new=$(sha256sum "$work/$cfg" | cut -d' ' -f1).json
  mv "$work/$cfg" "$work/$new"
  python3 - "$work/manifest.json" "$new" <<'PY'
import json, sys
path, new = sys.argv[1], sys.argv[2]
with open(path) as f:
    manifest = json.load(f)
manifest[0]["Config"] = new
with open(path, "w") as f:
    json.dump(manifest, f)
PY
  docker rmi "$tag" >/dev/null
  tar -C "$work" -c . | docker load >/dev/null
  rm -rf "$work"
}

archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(amd64 arm64)
for a in "${archs[@]}"; do
  build "$a"
done
