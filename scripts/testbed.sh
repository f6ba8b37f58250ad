#!/usr/bin/env bash
# Prepare this machine to run the Molecule test bed: a Docker engine,
# qemu-aarch64 binfmt for the arm64 (Kunpeng stand-in) containers and
# promtool.
# Idempotent; needs root only when something is missing.
set -euo pipefail

log() { printf 'testbed: %s\n' "$*" >&2; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    log "this step needs root: $*"; exit 1
  fi
}

apt_install() {
  need_root "apt-get install $*"
  if [ -z "${_APT_UPDATED:-}" ]; then
    apt-get update -qq
    _APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_docker() {
  if docker info >/dev/null 2>&1; then
    return
  fi
  command -v dockerd >/dev/null 2>&1 || [ -x /usr/sbin/dockerd ] || apt_install docker.io
  need_root "start dockerd"
  log "starting dockerd in the background (log: /var/log/dockerd-testbed.log)"
  PATH="$PATH:/usr/sbin" nohup setsid dockerd >/var/log/dockerd-testbed.log 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return
    sleep 1
  done
  log "dockerd did not come up; last lines of its log:"
  tail -n 20 /var/log/dockerd-testbed.log >&2
  exit 1
}

ensure_binfmt() {
  if [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    return
  fi
  [ -x /usr/bin/qemu-aarch64-static ] && command -v update-binfmts >/dev/null 2>&1 \
    || apt_install qemu-user-static binfmt-support
  need_root "mount binfmt_misc"
  mountpoint -q /proc/sys/fs/binfmt_misc \
    || mount binfmt_misc -t binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable qemu-aarch64
  [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || { log "qemu-aarch64 binfmt not registered"; exit 1; }
}

ensure_tools() {
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  # systemd-analyze security --offline scores the unit templates (tests/unit/roles/test_unit_exposure.py).
  command -v systemd-analyze >/dev/null 2>&1 || apt_install systemd
  # promtool (Debian's prometheus package) for the alert-rule and metrics tests.
  command -v promtool >/dev/null 2>&1 || apt_install --no-install-recommends prometheus
}

ensure_tools
ensure_docker
if [ "${KV_SKIP_ARM64:-0}" != 1 ]; then
  ensure_binfmt
fi
log "ready: $(docker version --format 'docker {{.Server.Version}}')"
