#!/usr/bin/env bash
# Run the test stages in order, time each, keep going after a failure and
# close with one summary line "N passed, N failed" (stages and scenarios).
#   scripts/run-tests.sh all       lint, docs, sanity, unit, unit:playbooks and core-versions (background), matrix, build,
#                                  galaxy-importer, molecule
#   scripts/run-tests.sh molecule  Molecule scenarios only
# Env: SCENARIOS (amd64), ARM64_SCENARIOS (also run on arm64), BESIDE_SCENARIOS
#      (run in the background beside the first other scenario),
#      MULTI_HOST_SCENARIOS (every platform of the scenario, all amd64), VENV.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv=${VENV:-$root/.venv}
export PATH=$venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$root/.build/collections
export PY_COLORS=0 ANSIBLE_NOCOLOR=1 NO_COLOR=1
logdir=$root/.build/logs
mkdir -p "$logdir"

passed=0
failed=0
summary=()

stage() {
  local name=$1; shift
  local start end rc log=$logdir/${name//[:\/]/_}.log
  printf '\n=== %s: %s\n' "$name" "$*"
  start=$(date +%s)
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  end=$(date +%s)
  record "$name" "$rc" $((end - start)) "$log" ""
}

# One summary line per stage: PASS, or FAIL with the exit status and the log.
record() {
  local name=$1 rc=$2 secs=$3 log=$4 note=$5
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1)); summary+=("$(printf 'PASS  %-28s %5ss%s' "$name" "$secs" "${note:+  ($note)}")")
  else
    failed=$((failed + 1))
    summary+=("$(printf 'FAIL  %-28s %5ss  (%src=%s, log %s)' "$name" "$secs" "${note:+$note, }" "$rc" "${log#"$root"/}")")
  fi
}

# A stage that runs in the background while the stages after it go on (the
# image builds: mostly downloads and package unpacking, little CPU); its log
# is printed and its result counted where it is waited for.
bg_stages=()
bg_stage() {
  local name=$1; shift
  printf '\n=== %s (background): %s\n' "$name" "$*"
  bg_run "$name" "$@" &
  bg_stages+=("$name|$!")
}

bg_run() {
  local name=$1; shift
  local log=$logdir/${name//[:\/]/_}.log start rc
  start=$(date +%s); "$@" >"$log" 2>&1; rc=$?
  echo "$rc $(($(date +%s) - start))" >"$log.result"
}

# Waits for the background stages, except those named in $1 (left running).
wait_bg_stages() {
  local entry name pid log rc secs left=()
  for entry in "${bg_stages[@]}"; do
    name=${entry%%|*}; pid=${entry##*|}; log=$logdir/${name//[:\/]/_}.log
    if in_list "$name" "${1:-}"; then left+=("$entry"); continue; fi
    wait "$pid" 2>/dev/null
    read -r rc secs <"$log.result"
    printf '\n=== %s (ran in the background, %ss)\n' "$name" "$secs"
    cat "$log"
    record "$name" "$rc" "$secs" "$log" background
  done
  bg_stages=("${left[@]}")
}

in_list() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }

molecule_stages() {
  [ -n "${images_started:-}" ] || start_images
  # The promtool tests (alert rules, collector output) skip in the unit stage
  # when promtool is missing; here, after testbed installed it, they must run.
  stage promtool env KV_REQUIRE_PROMTOOL=1 python -m pytest -q tests/unit/roles/test_monitoring_rules.py \
    tests/unit/roles/test_monitoring_dashboards.py tests/unit/roles/test_monitoring_collector.py \
    tests/unit/plugins/module_utils/probe/test_accelerator_metrics.py
  wait_bg_stages "core-versions unit:playbooks"
  # The scenarios without a vLLM server (BESIDE_SCENARIOS: package doubles,
  # mostly apt and file work) run one after the other in the background,
  # beside the first of the others (the base role); the scenarios with vLLM
  # servers start when they are done, one at a time.
  local s beside=() first=1
  for s in ${SCENARIOS:-}; do
    if in_list "$s" "${BESIDE_SCENARIOS:-}"; then beside+=("$s"); fi
  done
  if [ "${#beside[@]}" -gt 0 ]; then
    printf '\n=== background: %s\n' "${beside[*]}"
    # A HOME of their own: Molecule's prerun installs the collection under
    # test into ~/.ansible/collections with --force, and two scenarios doing
    # that at once remove each other's files; its ephemeral state lives
    # under ~/.ansible/tmp too.
    mkdir -p "$root/.build/home-beside"
    ( export HOME=$root/.build/home-beside
      for s in "${beside[@]}"; do bg_run "$(scenario_name "$s")" scenario_test "$s"; done ) &
    for s in "${beside[@]}"; do bg_stages+=("$(scenario_name "$s")|$!"); done
  fi
  for s in ${SCENARIOS:-}; do
    in_list "$s" "${BESIDE_SCENARIOS:-}" && continue
    stage "$(scenario_name "$s")" scenario_test "$s"
    if [ "$first" = 1 ]; then wait_bg_stages "core-versions unit:playbooks"; first=0; fi
  done
  wait_bg_stages
}

scenario_name() {
  if in_list "$1" "${ARM64_SCENARIOS:-} ${MULTI_HOST_SCENARIOS:-}"; then
    echo "molecule:$1:all-platforms"
  else
    echo "molecule:$1:amd64"
  fi
}

scenario_test() {
  local s=$1
  if in_list "$s" "${ARM64_SCENARIOS:-} ${MULTI_HOST_SCENARIOS:-}"; then
    molecule test -s "$s"
  else
    molecule test -s "$s" --platform-name "kv-$s-amd64"
  fi
}

# The test bed, then the images in the background: the base images (then,
# from the amd64 one, the engine image shared by every scenario with several
# vLLM hosts) build while the lint, sanity and unit stages run.
start_images() {
  images_started=1
  stage testbed bash scripts/testbed.sh
  bg_stage images bash -c 'bash molecule/images/build.sh && bash molecule/images/engine.sh'
}

t0=$(date +%s)
case "${1:-all}" in
  all)
    start_images
    stage yamllint yamllint -s .
    stage ansible-lint ansible-lint --profile production
    stage ruff ruff check .
    # The docsite (antsibull-docs and Sphinx); any warning fails.
    stage docs python scripts/docsite.py
    stage sanity bash scripts/sanity.sh
    # The fast unit tests; the ones that run ansible-playbook (marker
    # "playbook", registered in pyproject.toml) run in the background from
    # here, waited for at the end like core-versions.
    stage unit python -m pytest tests/unit -q -n 2 -m "not playbook"
    bg_stage unit:playbooks python -m pytest tests/unit -q -n 1 -m playbook
    # Unit and sanity again on the other ansible-core minors meta/runtime.yml
    # claims, each in a venv of its own; in the background from here to the
    # end of the Molecule stages (waited for last).
    bg_stage core-versions bash scripts/core-versions.sh
    # Network to the package index only: every matrix row's install sets, resolved by uv.
    stage matrix python scripts/matrix/resolve.py --uv "$venv/bin/uv"
    stage build bash -c 'ansible-galaxy collection build --force --output-path .build/dist >/dev/null && ls .build/dist/kunpeng-vllm-*.tar.gz'
    # The built tarball through Galaxy's own import checks, offline; warnings fail.
    stage galaxy-importer bash scripts/galaxy-importer.sh
    molecule_stages
    ;;
  molecule) molecule_stages ;;
  *) echo "usage: $0 [all|molecule]" >&2; exit 2 ;;
esac

printf '\n=== summary (%ss in all)\n' $(($(date +%s) - t0))
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
