#!/usr/bin/env bash
# Greedy comparison behind the CPU plan's served dtype for small models: the engine image's vLLM in
# bfloat16 and float32 and transformers (same virtualenv) in both, on the same
# prompt token ids at temperature 0.  One bounded container per run, with the
# Molecule default scenario's shm size and no --privileged; removed after.
#
# Usage: scripts/cpu-dtype-compare.sh [MODEL_DIR] > tests/unit/fixtures/cpu_dtype/greedy-smollm2-<cpu>.jsonl
# The first line records the host CPU (model name, bf16/AMX flags).
set -euo pipefail
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODEL=${1:-$(dirname "$SCRIPTS")/.cache/models/SmolLM2-135M-Instruct}
IMAGE=${KV_ENGINE_IMAGE:-kvllm/engine-cpu:amd64}
PY=${KV_ENGINE_PYTHON:-/opt/vllm/0.32.0-cpu/bin/python}

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512_bf16|amx_bf16|amx_tile|avx512f|avx2)$' | sort | tr '\n' ' ')
printf '{"host": {"cpu": "%s", "flags": "%s", "image": "%s"}}\n' "$cpu" "${flags% }" "$IMAGE"

for run in "transformers float32" "transformers bfloat16" "vllm float32" "vllm bfloat16"; do
  set -- $run
  docker run --rm --shm-size 2g --platform linux/amd64 \
    -e VLLM_CPU_KVCACHE_SPACE=1 -e HF_HUB_OFFLINE=1 -e VLLM_LOGGING_LEVEL=WARNING \
    -v "$MODEL":/model:ro -v "$SCRIPTS/cpu_dtype_greedy.py":/greedy.py:ro \
    --stop-timeout 5 "$IMAGE" timeout 900 "$PY" /greedy.py /model "$1" "$2" | grep "^{\"engine\""
done
