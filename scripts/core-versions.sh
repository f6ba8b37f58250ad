#!/usr/bin/env bash
# Unit tests and ansible-test sanity on the ansible-core minors that
# meta/runtime.yml claims besides the development venv's (requirements-dev.txt
# pins 2.19, which the sanity and unit stages test). Each minor gets a venv of
# its own, .build/core-<X.Y>/venv, made here from the development venv's
# interpreter (Python 3.11: ansible-core 2.20 and later need 3.12, which is why
# the claim stops below 2.20) with the newest patch release of the minor.
#
# Collections: ansible-core alone has none, so each venv also takes the
# `ansible` release of its minor for ansible.posix, community.general and
# community.docker. 2.16 takes the oldest (ansible 9.0.1: ansible.posix 1.5.4,
# community.general 8.0.2, community.docker 3.4.11), the lower bounds that
# galaxy.yml states; tests/unit/test_core_versions.py holds this table, the
# runtime claim, the ignore files and galaxy.yml to each other.
#
#   scripts/core-versions.sh            every minor below, one after the other
#   CORE_VERSIONS="2.17" scripts/core-versions.sh
# Env: VENV (the development venv), CORE_VERSIONS, CORE_UNIT_WORKERS (2).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv=${VENV:-$root/.venv}

# minor -> the `ansible` release installed beside it (its collections).
declare -A bundle=(
  [2.16]=9.0.1
  [2.17]=10.7.0
  [2.18]=11.13.0
)
# Sanity tests a minor skips: 2.16's Python 2 boilerplate tests (gone from
# 2.17 on) want `from __future__ import ...` and `__metaclass__` in every
# file, the unit tests too; nothing here runs on Python 2.
declare -A sanity_skip=(
  [2.16]="future-import-boilerplate metaclass-boilerplate"
)
versions=${CORE_VERSIONS:-2.16 2.17 2.18}

failed=()
results=()
for v in $versions; do
  if [ -z "${bundle[$v]:-}" ]; then
    echo "core-versions: no collection bundle is set for ansible-core $v" >&2
    failed+=("$v:setup"); continue
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
    if ! { "$venv/bin/python" -m venv "$cvenv" && "$cvenv/bin/pip" install -q $want; }; then
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
