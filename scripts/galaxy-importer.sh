#!/usr/bin/env bash
# Import the built tarball the way Galaxy does, offline: galaxy-importer
# 0.4.44 (its ansible-doc and ansible-lint checks; ansible-test off, which
# the sanity stage covers).  Any WARNING or ERROR line fails the stage.
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
LOG_LEVEL_MAIN = INFO
CFG
# The collections galaxy.yml declares as dependencies are installed beside
# the importer, as an install from Galaxy would bring them: its ansible-lint
# runs with ANSIBLE_COLLECTIONS_PATH set to the unpacked tarball only, and
# ansible-core also finds collections under site-packages.  They come from the
# dev venv's ansible package.
bundled=$("${VENV:-$root/.venv}/bin/python" -c 'import ansible_collections.ansible.posix as m, os; print(os.path.dirname(os.path.dirname(m.__path__[0])))')
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for dep in $("$venv/bin/python" -c 'import sys, yaml; print(" ".join(yaml.safe_load(open(sys.argv[1]))["dependencies"]))' "$root/galaxy.yml"); do
  mkdir -p "$site/ansible_collections/${dep%%.*}"
  ln -sfn "$bundled/${dep%%.*}/${dep#*.}" "$site/ansible_collections/${dep%%.*}/${dep#*.}"
done
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
