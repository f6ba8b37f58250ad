#!/usr/bin/env bash
# Benchmark, not a test.  Rows "each further host of a fleet" and "converge
# wall time for 1 host -> 4 hosts" of issue 18, with the engine artifact path
# (vllm_engine_artifact_mode: shared by default, the artifact store a fresh
# folder under .build/bench), in one run on this machine.  Per run:
#  M  the manual path on a fresh container (as in first-answer.sh);
#  1  site.yml on one fresh container, empty artifact store: this host builds
#     the engine with pip and publishes it;                   -> fleet/1-host
#  F  site.yml on one more fresh container: it unpacks the published
#     artifact;                                               -> further_host
#  4  the store emptied again, site.yml on four fresh containers at once
#     (forks 4): one builds and publishes, three unpack.      -> fleet/4-hosts
# Each converge ends when kunpeng.vllm.vllm_ready has the first answer of
# every host.  The engines run the demo inventory's settings (eager mode,
# 1 GiB of KV space, float32): four servers in compiled mode do not start in
# a sensible time on two cores, and each server needs ~2-3 GiB of RAM; the
# hosts of a step are removed before the next step starts.
#
# Usage: RUNS=1 VENV=.venv bash scripts/bench/fleet.sh
#        FLEET_SIZE=4 (hosts of the fleet step)
#        BENCH_FLEET_MODE=shared (default: the store is bind-mounted into
#        every container, as an NFS mount would be) | controller (the first
#        host fetches the artifact to the controller, the others get a copy)
#        BENCH_FLEET_VARS='key=value ...' (more extra vars)
#        FLEET_MANUAL=0 skips M: summarize.py then compares with the manual
#        path of first-answer.sh run under the same BENCH_ID
# Out:   .build/bench/results.jsonl (rows "further_host", "fleet"),
#        .build/bench/fleet-*.log (profile_tasks/profile_roles timings)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
fleet_size=${FLEET_SIZE:-4}
store=$out/artifacts
mode=${BENCH_FLEET_MODE:-shared}
if [ "$mode" = shared ]; then
  # The store as every node's shared mount (NFS in a real fleet): a bind
  # mount at the same path in each container.
  mkdir -p "$store"
  bench_docker_args=(-v "$store:$store")
fi
read -r -a fleet_vars <<<"${BENCH_FLEET_VARS:-}"
extra=()
for v in "vllm_engine_artifact_mode=$mode" "vllm_engine_artifact_dir=$store" ${fleet_vars[@]+"${fleet_vars[@]}"}; do
  extra+=(-e "$v")
done
prepare_inputs

fleet_converge() {  # LABEL HOST...: fresh containers, site.yml on all; sets secs and changed
  local label=$1 t0 h; shift
  local inv=$out/inv-fleet-$label
  make_inventory "$inv" "$@"
  t0=$(now)
  for h in "$@"; do start_container "$h"; done
  changed=$(converge "$inv" "$out/fleet-$label.log" --forks "$#" "${extra[@]}")
  secs=$(since "$t0")
}

for run in $(seq 1 "$runs"); do
  if [ "${FLEET_MANUAL:-1}" = 1 ]; then
    log "run $run/$runs: manual path"
    manual_path kv-bench-fleet-manual "$run" further_host
  fi

  log "run $run/$runs: first host, empty artifact store"
  find "$store" -mindepth 1 -delete
  fleet_converge "1-$run" kv-bench-fleet-1
  record fleet 1-host "$run" "$secs" "changed=$changed"
  record further_host first-host "$run" "$secs" "changed=$changed"
  log "store: $(du -sh "$store" | cut -f1) $(ls "$store" | tr '\n' ' ')"

  log "run $run/$runs: one further host, artifact published"
  fleet_converge "further-$run" kv-bench-fleet-2
  record further_host further-host "$run" "$secs" "changed=$changed"
  docker rm -f kv-bench-fleet-1 kv-bench-fleet-2 >/dev/null

  log "run $run/$runs: $fleet_size hosts at once, empty artifact store"
  find "$store" -mindepth 1 -delete
  hosts=()
  for i in $(seq 1 "$fleet_size"); do hosts+=("kv-bench-fleet-$i"); done
  fleet_converge "$fleet_size-$run" "${hosts[@]}"
  record fleet "$fleet_size-hosts" "$run" "$secs" "changed=$changed" \
    "free_mib_after=$(free -m | awk '/^Mem:/{print $7}')"
  docker rm -f "${hosts[@]}" >/dev/null
done
python scripts/bench/summarize.py "$results" --bench-id "$bench_id"
