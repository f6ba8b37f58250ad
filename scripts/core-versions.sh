#!/usr/bin/env bash
# Unit tests and ansible-test sanity on the ansible-core minors that
# meta/runtime.yml claims besides the development venv's (requirements-dev.txt
# pins 2.19, which the sanity and unit stages test). Each minor gets a venv of
# its own, .build/core-<X.Y>/venv, with the newest patch release of the minor.
#
# ansible-core 2.20 and later need Python >= 3.12 on the controller; Debian 12
# (the CI machine, the development venv) has 3.11. Those minors' venvs are made
# from scripts/core-python.sh's interpreter: Debian 13's Python 3.13, which the
# project installs from Debian's mirror into .build/python-trixie and runs on
# this host (the playbook tests still apply the roles to this Debian 12 host).
#
# Collections: ansible-core alone has none, so each venv also takes the
# `ansible` release of its minor for ansible.posix, community.general and
# community.docker. tests/unit/test_core_versions.py holds this table, the
# runtime claim, the ignore files and galaxy.yml to each other (galaxy.yml's
# lower bounds are the collections of the lowest minor: the development
# venv's ansible release).
#
#   scripts/core-versions.sh            every minor below, one after the other
#   CORE_VERSIONS="2.21" scripts/core-versions.sh
# Env: VENV (the development venv), CORE_VERSIONS, CORE_UNIT_WORKERS (2).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv=${VENV:-$root/.venv}

# minor -> the `ansible` release installed beside it (its collections).
declare -A bundle=(
  [2.20]=13.8.0
  [2.21]=14.5.0
)
# Minors whose controller Python the development venv's interpreter cannot be:
# their venvs come from scripts/core-python.sh's Python 3.13.
declare -A newer_python=(
  [2.20]=1
  [2.21]=1
)
# Sanity tests a minor skips (none today).
declare -A sanity_skip=()
versions=${CORE_VERSIONS:-2.20 2.21}

failed=()
results=()
for v in $versions; do
  if [ -z "${bundle[$v]:-}" ]; then
    echo "core-versions: no collection bundle is set for ansible-core $v" >&2
    failed+=("$v:setup"); continue
  fi
  python_for_venv=$venv/bin/python
  if [ -n "${newer_python[$v]:-}" ]; then
    if ! python_for_venv=$(bash scripts/core-python.sh); then
      failed+=("$v:python"); continue
    fi
  fi
  dir=$root/.build/core-$v
  cvenv=$dir/venv
  start=$(date +%s)
  # The venv is reused while its install set is the same.
  # The unit suite validates the Kubernetes export with kubernetes-validate (pinned in requirements-dev.txt).
  want="ansible-core==$v.* ansible==${bundle[$v]} pytest pytest-xdist $(grep -E '^kubernetes-validate==' "$root/requirements-dev.txt")"
  if [ "$(cat "$cvenv/.installed" 2>/dev/null)" != "$want" ]; then
    rm -rf "$cvenv"
    # shellcheck disable=SC2086  # $want is a list of requirements
    if ! { "$python_for_venv" -m venv "$cvenv" && "$cvenv/bin/pip" install -q $want; }; then
      failed+=("$v:venv"); continue
    fi
    echo "$want" >"$cvenv/.installed"
  fi
  made=$(date +%s)
  printf '\n--- ansible-core %s (%s): unit\n' "$v" "$("$cvenv/bin/python" -c 'import ansible.release as r; print(r.__version__)')"
  "$cvenv/bin/python" -m pytest tests/unit -q -p no:cacheprovider -n "${CORE_UNIT_WORKERS:-2}" || failed+=("$v:unit")
  unit=$(date +%s)
  printf '\n--- ansible-core %s: sanity\n' "$v"
  skip=()
  for test in ${sanity_skip[$v]:-}; do skip+=(--skip-test "$test"); done
  VENV=$cvenv SANITY_DEST=$dir/sanity bash scripts/sanity.sh "${skip[@]}" || failed+=("$v:sanity")
  end=$(date +%s)
  results+=("$(printf '%s  venv %3ss  unit %3ss  sanity %3ss' "$v" $((made - start)) $((unit - made)) $((end - unit)))")
done

printf '\n--- ansible-core versions\n'
printf '%s\n' "${results[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed: ${failed[*]}"
  exit 1
fi
