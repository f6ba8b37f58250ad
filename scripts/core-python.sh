#!/usr/bin/env bash
# A Python the development venv's interpreter cannot stand in for: ansible-core
# 2.20 and later need Python >= 3.12 on the controller, and Debian 12 (the CI
# machine and the development venv) ships 3.11.  This builds, once, a Docker
# image with Debian 13 (trixie)'s Python 3.13 from Debian's mirror (debootstrap
# + `docker import`, no registry) and runs a command in it with the checkout
# mounted at its own path, as root, with the host's CA bundle and pip settings
# (pip inside reaches PyPI through the same certificates as the host).
#
#   scripts/core-python.sh build            build the image (tagged with this script's hash)
#   scripts/core-python.sh run CMD [ARG...] run CMD in it, in the checkout
#
# Env: KV_DEBIAN_MIRROR (default: the host's apt source, else deb.debian.org).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
hash=$(sha256sum "$root/scripts/core-python.sh" | cut -c1-12)
repo=kvllm/python-trixie
tag=$repo:$hash
packages=python3,python3-venv,git,ca-certificates

log() { printf 'core-python: %s\n' "$*" >&2; }

mirror() {
  if [ -n "${KV_DEBIAN_MIRROR:-}" ]; then echo "$KV_DEBIAN_MIRROR"; return; fi
  local url
  url=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
        | grep -oE 'https?://[^ ]+/debian/?$' | head -n1 || true)
  echo "${url:-http://deb.debian.org/debian}"
}

build() {
  if docker image inspect "$tag" >/dev/null 2>&1; then log "$tag exists, reusing it"; return; fi
  command -v debootstrap >/dev/null || { log "debootstrap is missing: apt-get install debootstrap"; exit 1; }
  local rootfs
  rootfs=$(mktemp -d /var/tmp/kvllm-trixie.XXXXXX)
  trap 'rm -rf "$rootfs" "$rootfs.log"' RETURN
  log "debootstrap trixie into $rootfs from $(mirror)"
  debootstrap --variant=minbase --arch=amd64 --include="$packages" trixie "$rootfs" "$(mirror)" >"$rootfs.log" 2>&1 \
    || { tail -n 30 "$rootfs.log" >&2; exit 1; }
  chroot "$rootfs" apt-get clean 2>/dev/null || rm -rf "$rootfs"/var/cache/apt/archives/*.deb
  rm -rf "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - "$tag" >/dev/null
  log "built $tag ($(docker run --rm "$tag" python3 --version))"
}

run() {
  build
  local args=(--rm --network bridge -v "$root:$root" -w "$root" -e HOME=/root -e CI="${CI:-}")
  # The host's CA bundle (it may trust a proxy's CA) and pip's settings.
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    args+=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro
           -e PIP_CERT=/etc/ssl/certs/ca-certificates.crt -e SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt)
  fi
  for var in PIP_INDEX_URL PIP_DEFAULT_TIMEOUT; do
    [ -n "${!var:-}" ] && args+=(-e "$var=${!var}")
  done
  docker run "${args[@]}" "$tag" "$@"
}

case "${1:-}" in
  build) build ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 build | run CMD [ARG...]" >&2; exit 2 ;;
esac
