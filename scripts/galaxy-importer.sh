#!/usr/bin/env bash
# Import the built tarball the way Galaxy does, offline: galaxy-importer
# 0.4.44 with flake8 on (Galaxy shows its warnings on the collection page),
# ansible-doc and ansible-lint; ansible-test off, which the sanity stage
# covers.  Only the tarball is imported: no dependency is installed beside it,
# as on Galaxy, so a reference the tarball cannot resolve on its own shows.
# Any WARNING or ERROR line fails the stage.
#   scripts/galaxy-importer.sh [TARBALL]   default: .build/dist/kunpeng-vllm-<version>.tar.gz
# galaxy-importer pins its own ansible-lint and ansible-core, so it lives in
# its own venv (.build/importer-venv, created on first use).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^version: *//p' "$root/galaxy.yml")
tarball=${1:-$root/.build/dist/kunpeng-vllm-$version.tar.gz}
venv=$root/.build/importer-venv
importer=galaxy-importer==0.4.44

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/pip" show -q galaxy-importer 2>/dev/null ||
   [ "$("$venv/bin/pip" show galaxy-importer 2>/dev/null | sed -n 's/^Version: //p')" != "${importer#*==}" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "$importer"
fi
[ -f "$tarball" ] || { echo "no tarball $tarball: run the build stage (make build) first" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/galaxy-importer.cfg" <<'CFG'
[galaxy-importer]
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_LINT = True
OFFLINE_ANSIBLE_LINT = True
RUN_FLAKE8 = True
LOG_LEVEL_MAIN = INFO
CFG
# An importer venv that an earlier version of this script linked the
# dependencies into: remove the links, Galaxy has none.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
find "$site/ansible_collections" -mindepth 2 -maxdepth 2 -type l -delete 2>/dev/null || true
# A private HOME and collections path: only the tarball's own content is
# imported, not a copy of the collection installed under ~/.ansible.
mkdir -p "$work/home"
(cd "$work" && env -u ANSIBLE_COLLECTIONS_PATH HOME="$work/home" PATH="$venv/bin:$PATH" \
  GALAXY_IMPORTER_CONFIG="$work/galaxy-importer.cfg" \
  "$venv/bin/python" -m galaxy_importer.main "$tarball") 2>&1 | tee "$work/import.log"
status=${PIPESTATUS[0]}
if [ "$status" != 0 ]; then
  echo "galaxy-importer failed (rc=$status)" >&2
  exit "$status"
fi
if grep -E '^(WARNING|ERROR)' "$work/import.log" >/dev/null; then
  echo "galaxy-importer reported warnings or errors (above); Galaxy would show them on the collection page" >&2
  exit 1
fi
grep -q 'Importer processing completed successfully' "$work/import.log"
