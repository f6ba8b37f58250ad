#!/usr/bin/env bash
# Benchmark, not a test: vLLM's logged KV-cache size and memory split on one
# NVIDIA GPU, with random weights of real model shapes (no checkpoint, no
# tokenizer, no network).  For each run named on the command line (all runs
# when none is named) it starts `vllm serve <dir with config.json>
# --load-format dummy --skip-tokenizer-init --gpu-memory-utilization 0.9`
# plus the run's own flags, waits until the engine has profiled memory,
# sized the KV cache and captured its CUDA graphs ("init engine ... took"),
# then stops it, and writes next to dummy-<run>.log a dummy-<run>.json:
#   {"model_config": "models/<file>.json", "engine_args": {...}, "vllm": ..., "gpu": ...}
# the flags given to vLLM, the port left out; model_config is relative to
# tests/unit/fixtures.  The dummy-*.log files of tests/unit/fixtures/nvidia/h200/kv/
# that have a .json sidecar were taken with it.
# Inputs: VLLM (the vllm executable of an installed vLLM), CONFIGS (the
# folder holding tests/unit/fixtures/models/*.json), RESULTS (output folder).
# Processes started here are stopped by their own process-group id.
set -uo pipefail

: "${VLLM:?vllm executable}" "${CONFIGS:?folder of the model config.json fixtures}"
: "${RESULTS:=/tmp/gpu-kv}" "${RUN_LIMIT:=300}" "${PORT:=8002}"
mkdir -p "$RESULTS"

# run name | config file under $CONFIGS | extra vLLM flags
RUNS='
llama-3.1-8b|llama-3.1-8b.json|
llama-3.1-8b-kv-fp8|llama-3.1-8b.json|--kv-cache-dtype fp8
qwen2.5-32b-instruct|qwen2.5-32b-instruct.json|
qwen3-30b-a3b|qwen3-30b-a3b.json|
deepseek-v2-lite-fp8|deepseek-v2-lite.json|--quantization fp8
deepseek-v2-lite-kv-fp8|deepseek-v2-lite.json|--kv-cache-dtype fp8
'
BASE_FLAGS='--load-format dummy --skip-tokenizer-init --gpu-memory-utilization 0.9'

vllm_version=$("$(dirname "$VLLM")/python3" -c 'import vllm; print(vllm.__version__)')
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
gpu_pids() { nvidia-smi --query-compute-apps=pid --format=csv,noheader; }
wait_gpu_free() { for _ in $(seq 1 60); do [ -z "$(gpu_pids)" ] && return 0; sleep 1; done; return 1; }

# The sidecar: flags as vLLM's engine arguments (--a-b c -> "a_b": c, a lone flag -> true).
sidecar() {  # name config flags...
  local name=$1 config=$2; shift 2
  python3 - "$RESULTS/dummy-$name.json" "$config" "$vllm_version" "$gpu_name" "$@" <<'PY'
import json, sys
out, config, version, gpu, *flags = sys.argv[1:]
args, i = {}, 0
while i < len(flags):
    key = flags[i][2:].replace("-", "_")
    if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
        value = flags[i + 1]
        try:
            value = json.loads(value)
        except ValueError:
            pass
        args[key], i = value, i + 2
    else:
        args[key], i = True, i + 1
with open(out, "w") as f:
    json.dump({"model_config": "models/" + config, "engine_args": args,
               "vllm": version, "gpu": gpu}, f, indent=2)
    f.write("\n")
PY
}

one_run() {  # name config extra-flags
  local name=$1 config=$2 extra=$3 dir log server
  dir=/tmp/dummy/${config%.json} log=$RESULTS/dummy-$name.log
  mkdir -p "$dir" && cp "$CONFIGS/$config" "$dir/config.json"
  # shellcheck disable=SC2086  # the flags are words on purpose
  set -- $BASE_FLAGS $extra
  sidecar "$name" "$config" "$@"
  echo "$VLLM serve $dir $* --port $PORT" >"$RESULTS/dummy-$name.cmd"
  local t0=$SECONDS
  (cd /tmp && exec setsid "$VLLM" serve "$dir" "$@" --port "$PORT" >"$log" 2>&1 </dev/null) &
  server=$!
  while [ $((SECONDS - t0)) -lt "$RUN_LIMIT" ] && kill -0 "$server" 2>/dev/null; do
    grep -qsE "Actual usage is|init engine \(profile" "$log" && break
    sleep 1
  done
  sleep 2
  echo "$name: $((SECONDS - t0)) s; $(grep -ho 'GPU KV cache size: [0-9,]* tokens' "$log" || echo 'no KV cache line')" \
    | tee -a "$RESULTS/summary.txt"
  # setsid made the server its process group's leader; the engine core is in that group.
  kill -TERM -- "-$server" 2>/dev/null
  wait_gpu_free || { for pid in $(gpu_pids); do kill -KILL "$pid"; done; wait_gpu_free; }
  kill -KILL -- "-$server" 2>/dev/null
  wait "$server" 2>/dev/null
}

nvidia-smi >"$RESULTS/nvidia-smi.txt" 2>&1
for want in "${@:-}"; do
  while IFS='|' read -r name config extra; do
    [ -n "$name" ] || continue
    [ -z "$want" ] || [ "$want" = "$name" ] || continue
    one_run "$name" "$config" "$extra"
  done <<<"$RUNS"
done
