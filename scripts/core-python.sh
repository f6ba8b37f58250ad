#!/usr/bin/env bash
# A controller Python for the ansible-core minors the development venv's
# interpreter cannot run: ansible-core 2.20 and later need Python >= 3.12, and
# Debian 12 (the CI machine, the development venv) ships 3.11.
#
# This installs Debian 13 (trixie)'s Python 3.13 from Debian's mirror into
# .build/python-trixie (debootstrap, no registry, no compiler) and makes it run
# on this host: the interpreter and its extension modules load
# trixie's own dynamic loader and libraries (patchelf: interpreter and rpath),
# so nothing of the host's libc is replaced and the processes it starts
# (ansible-playbook's targets, /bin/sh, apt) are the host's own. The roles'
# playbook tests therefore still run against this host (Debian 12), as they
# do on the development venv.
#
#   scripts/core-python.sh            build it if needed, print the interpreter's path
# Env: KV_DEBIAN_MIRROR (default: the host's apt source, else deb.debian.org).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/.build/python-trixie
# Patched in place: ansible-test makes its virtualenvs with
# sys.base_prefix/bin/python3.13.
python=$dest/usr/bin/python3.13
stamp="$(sha256sum "$root/scripts/core-python.sh" | cut -c1-12) $dest"

log() { printf 'core-python: %s\n' "$*" >&2; }

mirror() {
  if [ -n "${KV_DEBIAN_MIRROR:-}" ]; then echo "$KV_DEBIAN_MIRROR"; return; fi
  local url
  url=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
        | grep -oE 'https?://[^ ]+/debian/?$' | head -n1 || true)
  echo "${url:-http://deb.debian.org/debian}"
}

need() {
  command -v "$1" >/dev/null && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
  else
    log "$1 is missing: apt-get install $1"; exit 1
  fi
}

build() {
  need debootstrap
  need patchelf
  rm -rf "$dest" "$dest.log"
  mkdir -p "$dest"
  log "debootstrap trixie (python3, python3-venv) into $dest from $(mirror)"
  debootstrap --variant=minbase --arch=amd64 --include=python3,python3-venv,ca-certificates \
    trixie "$dest" "$(mirror)" >"$dest.log" 2>&1 || { tail -n 30 "$dest.log" >&2; exit 1; }
  rm -rf "$dest"/var/cache/apt/archives/*.deb "$dest"/var/lib/apt/lists/*
  local libs=$dest/lib/x86_64-linux-gnu:$dest/usr/lib/x86_64-linux-gnu so
  patchelf --set-interpreter "$dest/lib64/ld-linux-x86-64.so.2" --set-rpath "$libs" "$python"
  for so in "$dest"/usr/lib/python3.13/lib-dynload/*.so; do patchelf --set-rpath "$libs" "$so"; done
  # ensurepip (venv, ansible-test's per-test virtualenvs) takes pip from
  # Debian's wheel directory: trixie's, not the host's.
  sed -i "s#'WHEEL_PKG_DIR': '/usr/share/python-wheels/'#'WHEEL_PKG_DIR': '$dest/usr/share/python-wheels/'#" \
    "$dest"/usr/lib/python3.13/_sysconfigdata_*.py
  "$python" -c 'import ssl, sqlite3, ctypes, lzma, bz2, hashlib, venv' \
    || { log "the interpreter in $dest does not start"; exit 1; }
  echo "$stamp" >"$dest/.kvllm-built"
  rm -f "$dest.log"
  log "built $("$python" --version) in $dest"
}

if [ "$(cat "$dest/.kvllm-built" 2>/dev/null)" != "$stamp" ]; then
  build
fi
echo "$python"
