#!/usr/bin/env bash
# Benchmark, not a test: on one NVIDIA host with no network and no systemd
# (the H200 host of tests/unit/fixtures/nvidia/h200), in one run:
#  (4) install time: the vllm role from the offline wheelhouse (cuda backend,
#      host torch reused) against a hand-run `pip install --no-index
#      --no-deps --find-links` of the same wheelhouse;
#  (1) the role's no-systemd launcher started as a supervisor would, then
#      kunpeng.vllm.vllm_ready against it and nvidia-smi while it serves;
#  (3) playbooks/benchmark.yml against the deployed engine, then against a
#      default `vllm serve` of the same model on the same GPU;
#  (2) vLLM's logged KV-cache size with random weights of the real shapes
#      (--load-format dummy --skip-tokenizer-init) for the model configs the
#      planner tests use.
# Inputs on the host: the collection (ANSIBLE_COLLECTIONS_PATH), ansible-core,
# the wheelhouse of playbooks/wheelhouse.yml in $WHEELHOUSE and the converted
# SmolLM2 checkpoint (scripts/convert_gguf.py) in $MODEL.  Logs: $RESULTS.
# Processes started here are stopped by their process id (the engine core by
# the id nvidia-smi lists for it).
set -uo pipefail

: "${WHEELHOUSE:?folder built by playbooks/wheelhouse.yml}" "${MODEL:=/srv/models/smollm2}"
: "${RESULTS:=/tmp/gpu-offline}" "${HOST_PYTHON:=/opt/torch/.venv/bin/python3}"
COLL=${ANSIBLE_COLLECTIONS_PATH%%:*}/ansible_collections/kunpeng/vllm
export ANSIBLE_PYTHON_INTERPRETER=$HOST_PYTHON HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p "$RESULTS"
site=$("$HOST_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
pyver=$("$HOST_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
elapsed() { python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$1"; }
gpu_pids() { nvidia-smi --query-compute-apps=pid --format=csv,noheader; }
stop_gpu_processes() { for pid in $(gpu_pids); do kill -TERM "$pid"; done; sleep 8; for pid in $(gpu_pids); do kill -KILL "$pid"; done; }

# What the base role makes; its package steps need a mirror this host lacks.
id vllm >/dev/null 2>&1 || useradd --system --home-dir /var/cache/vllm --shell /usr/sbin/nologin vllm
mkdir -p /opt/vllm /etc/vllm /var/cache/vllm && chown vllm:vllm /var/cache/vllm && chgrp vllm /etc/vllm && chmod 0750 /etc/vllm
chown -R vllm:vllm "$MODEL"
play=$RESULTS/deploy.yml
cat >"$play" <<YML
- name: Deploy SmolLM2 from the offline wheelhouse, host torch, no systemd
  hosts: localhost
  connection: local
  gather_facts: true
  vars:
    vllm_backend: cuda
    vllm_version: "0.26.0"
    vllm_python: $HOST_PYTHON
    vllm_reuse_host_torch: true
    vllm_install_os_packages: false
    vllm_wheelhouse_src: $WHEELHOUSE
    vllm_wheelhouse_requirements: requirements.txt
    vllm_pip_no_index: true
    vllm_service_manager: none
    vllm_model_source: local
    vllm_model_src: $MODEL
    vllm_model_name: smollm2
    vllm_api_key: h200-bench-key-0001
  roles:
    - role: kunpeng.vllm.vllm
YML

# (4) install time
t=$(date +%s.%N)
ansible-playbook -i localhost, "$play" --tags vllm_install >"$RESULTS/role-install.log" 2>&1
echo "role install rc=$? seconds=$(elapsed "$t")" | tee -a "$RESULTS/role-install.log"
t=$(date +%s.%N)
{ "$HOST_PYTHON" -m venv /tmp/hand && echo "$site" >"/tmp/hand/lib/python$pyver/site-packages/zz-host.pth" \
  && /tmp/hand/bin/pip install -q --no-index --no-deps --find-links "$WHEELHOUSE" -r "$WHEELHOUSE/requirements.txt"; } \
  >"$RESULTS/hand-install.log" 2>&1
echo "hand install rc=$? seconds=$(elapsed "$t")" | tee -a "$RESULTS/hand-install.log"
rm -rf /tmp/hand
ansible-playbook -i localhost, "$play" -v >"$RESULTS/role-full.log" 2>&1
echo "role full run rc=$?" | tee -a "$RESULTS/role-full.log"

# (1) the launcher, as a container entrypoint would start it
t=$(date +%s)
setsid /etc/vllm/smollm2.launch.sh >"$RESULTS/deployed-serve.log" 2>&1 </dev/null &
ansible localhost -i localhost, -c local -m kunpeng.vllm.vllm_ready \
  -a "url=http://127.0.0.1:8000 model=smollm2 api_key=h200-bench-key-0001 timeout=400" >"$RESULTS/vllm-ready.log" 2>&1
echo "vllm_ready rc=$? seconds_since_launch=$(( $(date +%s) - t ))" >>"$RESULTS/vllm-ready.log"
{ nvidia-smi; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  ps -eo pid,user,rss,args | grep -E "[v]llm serve|[E]ngineCore"; } >"$RESULTS/nvidia-smi-serving.txt" 2>&1

# (3) throughput: deployed, then a default `vllm serve` of the same model
bench() {
  ansible-playbook -i localhost, -c local "$COLL/playbooks/benchmark.yml" -e ansible_become=false \
    -e benchmark_report_dir="$RESULTS" -e benchmark_num_prompts=200 -e benchmark_max_concurrency=16 \
    -e benchmark_instance="$1" >"$RESULTS/bench-$2.log" 2>&1
}
bench smollm2 deployed
stop_gpu_processes
# The benchmark playbook reads an instance's port and served name from these.
printf 'port: 8001\nserved-model-name: smollm2\n' >/etc/vllm/smollm2-default.yaml
printf '#!/bin/sh\nexec /opt/vllm/current/bin/vllm serve %s --port 8001 --served-model-name smollm2\n' "$MODEL" \
  >/etc/vllm/smollm2-default.launch.sh
: >/etc/vllm/smollm2-default.env
cd /tmp && setsid /opt/vllm/current/bin/vllm serve "$MODEL" --port 8001 --served-model-name smollm2 \
  >"$RESULTS/default-serve.log" 2>&1 </dev/null &
server=$!; cd - >/dev/null
ansible localhost -i localhost, -c local -m kunpeng.vllm.vllm_ready \
  -a "url=http://127.0.0.1:8001 model=smollm2 timeout=300" >"$RESULTS/default-ready.log" 2>&1
bench smollm2-default default
stop_gpu_processes; kill -TERM "$server" 2>/dev/null

# (2) logged KV-cache size on the planner's model configs, random weights
for m in deepseek-r1-distill-qwen-7b deepseek-v2-lite; do
  d=/tmp/dummy/$m && mkdir -p "$d" && cp "$COLL/tests/unit/fixtures/models/$m.json" "$d/config.json"
  cd /tmp && setsid /opt/vllm/current/bin/vllm serve "$d" --load-format dummy --skip-tokenizer-init \
     --gpu-memory-utilization 0.9 --port 8002 >"$RESULTS/dummy-$m.log" 2>&1 </dev/null &
  server=$!; cd - >/dev/null
  for _ in $(seq 1 300); do grep -q "GPU KV cache size" "$RESULTS/dummy-$m.log" && break; sleep 1; done
  # The engine core holds the GPU memory and outlives its API server: stop both.
  stop_gpu_processes; kill -TERM "$server" 2>/dev/null
done
grep -h "GPU KV cache size" "$RESULTS"/*serve*.log "$RESULTS"/dummy-*.log
