#!/usr/bin/env bash
# Benchmark, not a test.  Row "`make demo` on a new machine" of issue 18, as
# a breakdown: what `make demo` builds (read from `make -n -B demo`, i.e.
# every prerequisite out of date, as on a new machine), and what each of
# those parts costs when done from nothing on this machine, without touching
# this machine's own caches and images:
#  venv        python3 -m venv + requirements-dev.txt, empty pip cache
#  testbed     scripts/testbed.sh as it runs here (Docker and qemu present:
#              on a new machine it also installs them, not measured)
#  image-amd64 molecule/images/build.sh amd64 (debootstrap)    } copies of the
#  image-arm64 molecule/images/build.sh arm64 (qemu debootstrap)} scripts that
#  engine      molecule/images/engine.sh (pip in a container)   } tag kv-bench/*
#  model       scripts/prepare-smollm2.sh in a scratch copy of scripts/
#  wheelhouse  scripts/prepare-wheelhouse.sh into a scratch folder
# The converge itself (scripts/demo.sh: site.yml on a fresh container to the
# first answer) is the site.yml path of first-answer.sh; DEMO_CONVERGE=1 runs
# it here too.  The kv-bench/* images this script makes are removed at the
# end; kvllm/* images are never touched.
#
# Usage: VENV=.venv bash scripts/bench/demo-parts.sh
#        DEMO_PARTS=needed (default: only what `make demo` runs) | all
# Out:   .build/bench/results.jsonl (row "demo": path = part, needed = true
#        when `make demo` runs it)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
which_parts=${DEMO_PARTS:-needed}
scratch=$out/demo-scratch
rm -rf "$scratch" && mkdir -p "$scratch"
cleanup_images() {
  cleanup_containers
  docker images --format '{{.Repository}}:{{.Tag}}' | grep '^kv-bench/' | xargs -r docker rmi -f >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup_images EXIT

# What `make demo` runs on a machine where nothing is built yet.
plan=$(make -n -B demo VENV="$scratch/plan-venv" 2>/dev/null)
printf '%s\n' "$plan" >"$out/demo-make-plan.txt"
needs() {  # PART: does the plan run it?
  case $1 in
    venv) grep -q -- '-m venv' <<<"$plan" ;;
    testbed) grep -q 'testbed.sh' <<<"$plan" ;;
    image-amd64) grep -qE 'images/build.sh( amd64)?$|images/build.sh amd64' <<<"$plan" ;;
    image-arm64) grep -qE 'images/build.sh$|images/build.sh.* arm64' <<<"$plan" ;;
    engine) grep -q 'images/engine.sh' <<<"$plan" ;;
    model | wheelhouse | converge) grep -q 'scripts/demo.sh' <<<"$plan" ;;
  esac
}

# Copies of the image scripts that tag kv-bench/* instead of kvllm/*.
mkdir -p "$scratch/images"
sed 's#^repo=kvllm/debian12#repo=kv-bench/debian12#' molecule/images/build.sh >"$scratch/images/build.sh"
sed -e 's#^base=kvllm/debian12:amd64#base=kv-bench/debian12:amd64#' -e 's#^repo=kvllm/engine-cpu#repo=kv-bench/engine-cpu#' \
  molecule/images/engine.sh >"$scratch/images/engine.sh"
grep -q '^repo=kv-bench/debian12' "$scratch/images/build.sh" && grep -q '^repo=kv-bench/engine-cpu' "$scratch/images/engine.sh" \
  || { log "cannot retarget the image scripts"; exit 1; }

part() {  # NAME COMMAND...
  local name=$1 needed=false t0; shift
  needs "$name" && needed=true
  if [ "$which_parts" != all ] && [ "$needed" != true ]; then
    record demo "$name" 1 0 "needed=false" "measured=false"; return
  fi
  log "demo part $name (needed=$needed)"
  t0=$(now)
  "$@" >"$out/demo-$name.log" 2>&1 || { log "$name failed, see $out/demo-$name.log"; tail -n 20 "$out/demo-$name.log" >&2; return 1; }
  record demo "$name" 1 "$(since "$t0")" "needed=$needed" "measured=true"
}

part venv bash -c "python3 -m venv '$scratch/venv' && PIP_CACHE_DIR='$scratch/pip-cache' '$scratch/venv/bin/pip' install -q --upgrade pip \
  && PIP_CACHE_DIR='$scratch/pip-cache' '$scratch/venv/bin/pip' install -q -r requirements-dev.txt"
part testbed bash scripts/testbed.sh
part image-amd64 bash "$scratch/images/build.sh" amd64
part image-arm64 bash "$scratch/images/build.sh" arm64
part engine env KV_WHEELHOUSE="$wheels" bash "$scratch/images/engine.sh"
mkdir -p "$scratch/root" && cp -r scripts "$scratch/root/"
part model env KV_MODEL_CACHE="$scratch/models" bash "$scratch/root/scripts/prepare-smollm2.sh"
part wheelhouse bash scripts/prepare-wheelhouse.sh "$scratch/wheelhouse"
if [ "${DEMO_CONVERGE:-0}" = 1 ]; then
  prepare_inputs
  make_inventory "$out/inv-demo" kv-bench-demo
  t0=$(now)
  start_container kv-bench-demo
  changed=$(converge "$out/inv-demo" "$out/demo-converge.log")
  record demo converge 1 "$(since "$t0")" "needed=true" "measured=true" "changed=$changed"
fi
python scripts/bench/summarize.py "$results" --bench-id "$bench_id"
