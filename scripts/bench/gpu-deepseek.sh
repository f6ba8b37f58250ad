#!/usr/bin/env bash
# Benchmark, not a test: DeepSeek-V2-Lite served THROUGH THE ROLE on one
# NVIDIA GPU host with no network and no systemd (the H200 host of
# tests/unit/fixtures/nvidia/h200), as a rehearsal (vllm_engine_args
# load_format: dummy: random weights of the real shapes, a model directory
# holding the config.json fixture and a synthetic word-level tokenizer from
# word_tokenizer.py, which the benchmark client and the chat endpoint need).
# One phase per call, each within one device call; state stays in $WH and
# $RESULTS between the calls:
#   setup          unpack the carried parts (part.NN: one tar of wheels/, ans/),
#                  ansible-core in a venv that sees the host's site-packages,
#                  what the base role would make, the model directory, the plays
#   install        role install from the wheelhouse (--tags vllm_install) vs the
#                  same wheels installed by hand with pip and with uv (HAND=0
#                  skips the hand installs); the full converge of the bf16
#                  instance; three idempotent re-runs (the converged fast path)
#   serve VARIANT  (bf16 | fp8 | kvfp8) converge that instance through the role
#                  (bf16 was converged by install), start its launcher as a
#                  supervisor would, kunpeng.vllm.vllm_ready (rehearsal), nvidia-smi,
#                  playbooks/benchmark.yml BENCH_RUNS times, stop it; then a
#                  default `vllm serve` with the same model flags on the same GPU,
#                  vllm_ready, benchmark.yml BENCH_RUNS times, stop it.  DEFAULT=0
#                  skips the default server, BENCH_RUNS=0 the benchmarks.  Parts that
#                  would not end before DEADLINE (epoch seconds) are skipped and
#                  say so in summary.txt.
#   pack NAME      tar $RESULTS into $OUT/NAME.tgz
# Processes started here are stopped by their process-group id (setsid makes
# each server its group's leader; the engine core is in that group).
set -uo pipefail

: "${WH:=/root/wh}" "${RESULTS:=/root/res}" "${HOST_PYTHON:=/opt/torch/.venv/bin/python3}"
: "${MODEL:=/srv/models/deepseek-v2-lite}" "${BENCH_RUNS:=3}" "${DEFAULT:=1}" "${DEADLINE:=$(( $(date +%s) + 580 ))}"
: "${NUM_PROMPTS:=256}" "${HAND:=1}" "${CONCURRENCY:=16}" "${API_KEY:=h200-bench-key-0001}"
REPO=$WH/repo
COLLECTIONS=/root/collections
COLL=$COLLECTIONS/ansible_collections/kunpeng/vllm
ANSVENV=/root/ansvenv
export ANSIBLE_COLLECTIONS_PATH=$COLLECTIONS ANSIBLE_PYTHON_INTERPRETER=$HOST_PYTHON PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 ANSIBLE_NOCOLOR=1 PATH=$ANSVENV/bin:$PATH
mkdir -p "$RESULTS"
SUMMARY=$RESULTS/summary.txt

say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$SUMMARY"; }
now() { date +%s.%N; }
since() { python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$1"; }
left() { echo $(( DEADLINE - $(date +%s) )); }
gpu_pids() { nvidia-smi --query-compute-apps=pid --format=csv,noheader; }
wait_gpu_free() { for _ in $(seq 1 60); do [ -z "$(gpu_pids)" ] && return 0; sleep 1; done; return 1; }
stop_group() {  # leader pid
  local _
  kill -TERM -- "-$1" 2>/dev/null
  for _ in $(seq 1 60); do kill -0 -- "-$1" 2>/dev/null || break; sleep 1; done
  wait_gpu_free || { for pid in $(gpu_pids); do kill -KILL "$pid"; done; wait_gpu_free; }
  kill -KILL -- "-$1" 2>/dev/null
  return 0
}
recap() { grep -A1 "PLAY RECAP" "$1" | tail -n 1 | sed 's/  */ /g'; }

# The vLLM flags of a variant, beside the rehearsal's --load-format dummy.
variant_flags() {
  case $1 in
    bf16) echo "" ;;
    fp8) echo "--quantization fp8" ;;
    kvfp8) echo "--kv-cache-dtype fp8" ;;
    *) echo "unknown variant $1" >&2; return 1 ;;
  esac
}
variant_args() {  # the same as the role's vllm_engine_args
  case $1 in
    bf16) echo '{"load_format": "dummy"}' ;;
    fp8) echo '{"load_format": "dummy", "quantization": "fp8"}' ;;
    kvfp8) echo '{"load_format": "dummy", "kv_cache_dtype": "fp8"}' ;;
  esac
}
variant_weight_dtype() { [ "$1" = fp8 ] && echo fp8 || echo auto; }

write_play() {  # variant
  local inst=dsv2-$1
  cat >"$RESULTS/deploy-$1.yml" <<YML
- name: Deploy DeepSeek-V2-Lite ($1) as a rehearsal from the offline wheelhouse, host torch, no systemd
  hosts: localhost
  connection: local
  gather_facts: true
  vars:
    vllm_backend: cuda
    vllm_version: "0.26.0"
    vllm_python: $HOST_PYTHON
    vllm_reuse_host_torch: true
    vllm_install_os_packages: false
    vllm_wheelhouse_src: $WH/wheels
    vllm_wheelhouse_requirements: requirements.txt
    vllm_pip_no_index: true
    vllm_service_manager: none
    vllm_model_source: local
    vllm_model_src: $MODEL
    vllm_model_name: $inst
    vllm_model_weight_dtype: $(variant_weight_dtype "$1")
    vllm_engine_args: $(variant_args "$1")
    vllm_api_key: $API_KEY
  roles:
    - role: kunpeng.vllm.vllm
YML
}

phase_setup() {
  local t; t=$(now)
  if compgen -G "$WH/part.*" >/dev/null; then
    (cd "$WH" && md5sum -c --quiet parts.md5) || { say "carried parts damaged or missing"; return 1; }
    cat "$WH"/part.* | tar -x -C "$WH" && rm -f "$WH"/part.*
  fi
  ls "$WH/wheels" | grep -c '\.whl$' | sed 's/^/wheels: /' | tee -a "$SUMMARY"
  mkdir -p "$COLLECTIONS/ansible_collections/kunpeng" && ln -sfn "$REPO" "$COLL"
  local site pyver
  site=$("$HOST_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  pyver=$("$HOST_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ ! -x "$ANSVENV/bin/ansible-playbook" ]; then
    "$HOST_PYTHON" -m venv "$ANSVENV" && echo "$site" >"$ANSVENV/lib/python$pyver/site-packages/zz-host.pth"
    "$ANSVENV/bin/pip" install -q --no-index --no-deps --no-cache-dir "$WH"/ans/*.whl \
      "$WH"/wheels/cryptography-*.whl "$WH"/wheels/cffi-*.whl "$WH"/wheels/pycparser-*.whl
  fi
  ansible-playbook --version | head -n 1 | tee -a "$SUMMARY"
  # What the base role makes; its package steps need a mirror this host lacks.
  id vllm >/dev/null 2>&1 || useradd --system --home-dir /var/cache/vllm --shell /usr/sbin/nologin vllm
  mkdir -p /opt/vllm /etc/vllm /var/cache/vllm "$MODEL" && chown vllm:vllm /var/cache/vllm \
    && chgrp vllm /etc/vllm && chmod 0750 /etc/vllm
  cp "$REPO/tests/unit/fixtures/models/deepseek-v2-lite.json" "$MODEL/config.json"
  "$HOST_PYTHON" "$REPO/scripts/bench/word_tokenizer.py" "$MODEL" | tee -a "$SUMMARY"
  chown -R vllm:vllm "$MODEL"
  phase_plays
  { nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
    "$HOST_PYTHON" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__)'
    nproc; uname -r; } >"$RESULTS/host.txt" 2>&1
  say "setup done in $(since "$t") s"
}

phase_plays() { local v; for v in bf16 fp8 kvfp8; do write_play "$v"; done; }

hand_installs() {  # the same wheels by hand, pip then uv, each into a fresh virtualenv
  local t site pyver rc
  site=$("$HOST_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  pyver=$("$HOST_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  t=$(now)
  { "$HOST_PYTHON" -m venv /tmp/hand && echo "$site" >"/tmp/hand/lib/python$pyver/site-packages/zz-host.pth" \
    && /tmp/hand/bin/pip install -q --no-index --no-deps --find-links "$WH/wheels" -r "$WH/wheels/requirements.txt"; } \
    >"$RESULTS/hand-install-pip.log" 2>&1
  rc=$?; say "hand install (pip) rc=$rc seconds=$(since "$t")"
  rm -rf /tmp/hand /tmp/uvbin
  "$HOST_PYTHON" -m pip install -q --no-index --no-deps --target /tmp/uvbin "$WH"/wheels/uv-*.whl >/dev/null 2>&1
  t=$(now)
  { "$HOST_PYTHON" -m venv /tmp/hand && echo "$site" >"/tmp/hand/lib/python$pyver/site-packages/zz-host.pth" \
    && /tmp/uvbin/bin/uv pip install --python /tmp/hand/bin/python --no-index --offline --no-config --no-deps \
      --compile-bytecode --find-links "$WH/wheels" -r "$WH/wheels/requirements.txt"; } >"$RESULTS/hand-install-uv.log" 2>&1
  rc=$?; say "hand install (uv --compile-bytecode) rc=$rc seconds=$(since "$t")"
  rm -rf /tmp/hand
}

phase_install() {
  local t rc i
  t=$(now)
  ansible-playbook -i localhost, "$RESULTS/deploy-bf16.yml" --tags vllm_install -v >"$RESULTS/role-install.log" 2>&1
  rc=$?; say "role install rc=$rc seconds=$(since "$t") $(recap "$RESULTS/role-install.log")"
  [ "$HAND" = 1 ] && hand_installs
  t=$(now)
  ansible-playbook -i localhost, "$RESULTS/deploy-bf16.yml" -v >"$RESULTS/role-full-bf16.log" 2>&1
  rc=$?; say "role full converge (bf16) rc=$rc seconds=$(since "$t") $(recap "$RESULTS/role-full-bf16.log")"
  for i in 1 2 3; do
    t=$(now)
    ansible-playbook -i localhost, "$RESULTS/deploy-bf16.yml" >"$RESULTS/role-rerun-bf16-$i.log" 2>&1
    rc=$?; say "role re-run $i (bf16) rc=$rc seconds=$(since "$t") $(recap "$RESULTS/role-rerun-bf16-$i.log")"
  done
  cp /etc/vllm/dsv2-bf16.yaml "$RESULTS/etc-vllm-dsv2-bf16.yaml.txt"
  cp /etc/vllm/dsv2-bf16.launch.sh "$RESULTS/dsv2-bf16.launch.sh.txt"
}

bench() {  # instance label run
  ansible-playbook -i localhost, -c local "$COLL/playbooks/benchmark.yml" -e ansible_become=false \
    -e benchmark_report_dir="$RESULTS/bench-$2" -e benchmark_num_prompts="$NUM_PROMPTS" \
    -e benchmark_max_concurrency="$CONCURRENCY" -e benchmark_instance="$1" >"$RESULTS/bench-$2-$3.log" 2>&1
  local rc=$?
  say "bench $2 run $3 rc=$rc $(python3 - "$RESULTS/bench-$2" <<'PY'
import glob, json, os, sys
files = sorted(glob.glob(os.path.join(sys.argv[1], "localhost-*.json")), key=os.path.getmtime)
if files:
    r = json.load(open(files[-1]))
    print("output_tok/s=%.1f ttft_p50_ms=%.1f tpot_p50_ms=%.2f completed=%s" % (
        r["output_throughput"], r["median_ttft_ms"], r["median_tpot_ms"], r["completed"]))
PY
)"
}

bench_runs() {  # instance label
  local i
  mkdir -p "$RESULTS/bench-$2"
  for i in $(seq 1 "$BENCH_RUNS"); do
    if [ "$(left)" -lt 60 ]; then say "bench $2 run $i skipped: $(left) s left before the deadline"; continue; fi
    bench "$1" "$2" "$i"
  done
}

ready() {  # url model log
  ansible localhost -i localhost, -c local -m kunpeng.vllm.vllm_ready \
    -a "url=$1 model=$2 api_key=$API_KEY timeout=$(( $(left) > 420 ? 400 : $(left) - 20 )) rehearsal=true" >"$3" 2>&1
}

kv_summary() {  # log label
  say "$2: $(grep -ho 'GPU KV cache size: [0-9,]* tokens' "$1" | head -n 1); $(grep -ho 'Using [A-Z_]* attention backend' "$1" | head -n 1); $(grep -ho 'Model loading took [0-9.]* GiB' "$1" | head -n 1)"
}

phase_serve() {  # variant
  local v=$1 inst=dsv2-$1 t rc leader flags
  flags=$(variant_flags "$v") || return 1
  wait_gpu_free
  if [ "${DEPLOYED:-1}" = 1 ]; then
  if [ "$v" != bf16 ]; then
    t=$(now)
    ansible-playbook -i localhost, "$RESULTS/deploy-$v.yml" -v >"$RESULTS/role-full-$v.log" 2>&1
    rc=$?; say "role converge ($v) rc=$rc seconds=$(since "$t") $(recap "$RESULTS/role-full-$v.log")"
    cp "/etc/vllm/$inst.yaml" "$RESULTS/etc-vllm-$inst.yaml.txt"
  fi
  # The launcher, as a container entrypoint would start it.
  t=$(now)
  setsid "/etc/vllm/$inst.launch.sh" >"$RESULTS/serve-$inst.log" 2>&1 </dev/null &
  leader=$!
  ready http://127.0.0.1:8000 "$inst" "$RESULTS/ready-$inst.log"
  rc=$?; say "vllm_ready $inst rc=$rc seconds_since_launch=$(since "$t")"
  kv_summary "$RESULTS/serve-$inst.log" "$inst"
  { nvidia-smi; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
    ps -eo pid,user,rss,args | grep -E "[v]llm serve|[E]ngineCore"; } >"$RESULTS/nvidia-smi-$inst.txt" 2>&1
  [ "$rc" = 0 ] && [ "$BENCH_RUNS" -gt 0 ] && bench_runs "$inst" "$inst"
  stop_group "$leader"
  fi
  [ "$DEFAULT" = 1 ] || { say "default vllm serve of $v skipped (DEFAULT=0)"; return 0; }
  if [ "$(left)" -lt 240 ]; then say "default vllm serve of $v skipped: $(left) s left"; return 0; fi
  # A default `vllm serve` with the same model flags.  It starts from a copy of the
  # deployed instance's compile caches (torch.compile, inductor, triton): that
  # saves start time only; the kernels served are compiled from the same code.
  rm -rf "/tmp/defcache-$inst" && cp -a "/var/cache/vllm/$inst" "/tmp/defcache-$inst"
  # The benchmark playbook reads an instance's engine (its own current-<instance> link), port,
  # served name and (no) API key from these.
  ln -sfn "$(readlink "/opt/vllm/current-$inst")" "/opt/vllm/current-$inst-default"
  printf 'port: 8001\nserved-model-name: %s\n' "$inst" >"/etc/vllm/$inst-default.yaml"
  printf '#!/bin/sh\nexec /opt/vllm/current-%s-default/bin/vllm serve %s --port 8001 --served-model-name %s\n' "$inst" "$MODEL" "$inst" \
    >"/etc/vllm/$inst-default.launch.sh"
  : >"/etc/vllm/$inst-default.env"
  t=$(now)
  # shellcheck disable=SC2086  # the flags are words on purpose
  (cd /tmp && VLLM_CACHE_ROOT=/tmp/defcache-$inst/vllm \
     TORCHINDUCTOR_CACHE_DIR=/tmp/defcache-$inst/inductor TRITON_CACHE_DIR=/tmp/defcache-$inst/triton \
     exec setsid /opt/vllm/current-$inst/bin/vllm serve "$MODEL" --port 8001 --served-model-name "$inst" \
       --load-format dummy $flags >"$RESULTS/default-serve-$inst.log" 2>&1 </dev/null) &
  leader=$!
  echo "VLLM_CACHE_ROOT=/tmp/defcache-$inst/vllm TORCHINDUCTOR_CACHE_DIR=/tmp/defcache-$inst/inductor TRITON_CACHE_DIR=/tmp/defcache-$inst/triton /opt/vllm/current-$inst/bin/vllm serve $MODEL --port 8001 --served-model-name $inst --load-format dummy $flags" \
    >"$RESULTS/default-serve-$inst.cmd"
  ready http://127.0.0.1:8001 "$inst" "$RESULTS/default-ready-$inst.log"
  rc=$?; say "vllm_ready default $inst rc=$rc seconds_since_launch=$(since "$t")"
  kv_summary "$RESULTS/default-serve-$inst.log" "default $inst"
  [ "$rc" = 0 ] && [ "$BENCH_RUNS" -gt 0 ] && bench_runs "$inst-default" "$inst-default"
  stop_group "$leader"
  return 0
}

case ${1:-} in
  setup) phase_setup || exit 1 ;;
  plays) phase_plays ;;
  install) phase_install ;;
  serve) phase_serve "${2:?variant: bf16, fp8 or kvfp8}" ;;
  pack) [ -n "${OUT:-}" ] && tar -czf "$OUT/${2:-results}.tgz" -C "$RESULTS" . ;;
  *) echo "usage: $0 setup | install | serve VARIANT | pack NAME" >&2; exit 2 ;;
esac
