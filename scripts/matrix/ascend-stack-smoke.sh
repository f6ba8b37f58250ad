#!/usr/bin/env bash
# Install one Ascend row's Python stack (vLLM, its requirements, torch, torch-npu,
# vllm-ascend; no CANN) into a venv in the arm64 test image, with the role's own
# install steps (the ascend backend's install_steps), and record how far
# `import vllm_ascend` gets without the NPU runtime.  Slow: pip and Python run
# under qemu.
#   scripts/matrix/ascend-stack-smoke.sh [VLLM_ASCEND_VERSION]   (default 0.18.0: Debian 12 has Python 3.11)
# Env: IMAGE (kvllm/debian12:arm64), CA_BUNDLE (host CA file mounted for pip, when set
# or when /etc/ssl/certs/ca-certificates.crt exists), VENV (collection venv).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
version=${1:-0.18.0}
image=${IMAGE:-kvllm/debian12:arm64}
venv=${VENV:-$root/.venv}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
logdir=$root/.build/logs
mkdir -p "$logdir"
log=$logdir/ascend-stack-$version-arm64.log
steps=$logdir/ascend-stack-$version-steps.sh

# The role's steps for the row on aarch64, as pip command lines.
PYTHONPATH=$root/.build/collections "$venv/bin/python" - "$version" > "$steps" <<'PY'
import shlex, sys
from ansible_collections.kunpeng.vllm.plugins.module_utils import backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix as cm
row = cm.select_ascend(vllm_ascend_version=sys.argv[1])
for step in backends.backend("ascend").install_steps(row, "aarch64"):
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in step["env"].items())
    args = " ".join(shlex.quote(a) for a in step["pip_args"] + step["packages"])
    print(f"echo '=== step {step['name']}'; {env} /venv/bin/pip install -q {args}")
PY

# The image has no ensurepip: the venv gets pip from a wheel fetched here.
pipdir=$root/.build/pip-wheel
[ -n "$(ls "$pipdir"/pip-*.whl 2>/dev/null)" ] || "$venv/bin/python" -m pip download -q --no-deps pip -d "$pipdir"

mounts=(-v "$steps:/steps.sh:ro" -v "$pipdir:/pipwheel:ro")
if [ -f "$ca" ]; then
  mounts+=(-v "$ca:/etc/ssl/certs/host-ca.crt:ro" -e PIP_CERT=/etc/ssl/certs/host-ca.crt -e SSL_CERT_FILE=/etc/ssl/certs/host-ca.crt)
fi

start=$(date +%s)
docker run --rm --platform linux/arm64 --entrypoint /bin/bash "${mounts[@]}" "$image" -c '
  set -u
  python3 -m venv --without-pip /venv && wheel=$(ls /pipwheel/pip-*.whl | head -1) &&
    /venv/bin/python "$wheel/pip" install -q --no-index "$wheel"
  bash -e /steps.sh || echo "=== install failed (exit $?)"
  echo "=== installed"; /venv/bin/pip list 2>/dev/null | grep -iE "^(vllm|vllm-ascend|torch|torch-npu|triton-ascend|numpy|opencv-python-headless) "
  echo "=== pip check"; /venv/bin/pip check 2>&1 | head -20
  for module in torch torch_npu vllm vllm_ascend; do
    echo "=== import $module"
    /venv/bin/python -c "import $module; print(\"$module\", getattr($module, \"__version__\", \"?\"), \"imported\")" 2>&1 | tail -6
  done
' 2>&1 | tee "$log"
echo "=== $(($(date +%s) - start)) s; log $log"
