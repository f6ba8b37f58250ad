#!/usr/bin/env bash
# Benchmark, not a test.  The vllm role's offline install against the same
# install by hand (issue 26, "install as fast as by hand"): one wheelhouse,
# one interpreter, in one run, one path after the other, each into a fresh
# virtualenv on this machine (no container):
#  hand-pip   python -m venv; pip install --no-index --find-links WH -r requirements.txt
#  hand-uv    python -m venv; uv pip install --no-index --find-links WH --compile-bytecode -r ...
#             (uv writes .pyc files only when asked; pip always does)
#  role-uv    the role's task files (scripts/bench/offline-install.yml): the
#             wheelhouse pushed as one archive and unpacked into a fresh node
#             folder, then uv as kunpeng.vllm.vllm_install_steps chose it
#  role-rerun the same play again on that node (nothing to copy or install)
#  role-pip   the role's task files with vllm_installer: pip
# Before the runs the controller packs the wheelhouse once (row "pack"); the
# role rows use that cached archive, as every node after the first does.
# The bench wheelhouse is WHEELHOUSE's files (links) plus a uv wheel for this
# machine (taken from WHEELHOUSE, UV_WHEEL, or downloaded once with pip) and a
# requirements.txt naming every wheel but uv (the shape kunpeng.vllm.wheelhouse
# writes; the role installs it with --no-deps).  uv gets a fresh cache per run.
# After each install the sorted `pip freeze` of the virtualenv is hashed: the
# paths must agree.
#
# Usage: WHEELHOUSE=.cache/wheelhouse/cpu-x86_64-full PYTHON=/usr/bin/python3.11 RUNS=1 \
#          bash scripts/bench/offline-install.sh
# Out:   .build/bench/results.jsonl (row "offline-install") and a table on stdout.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
wheelhouse=$(readlink -f "${WHEELHOUSE:?WHEELHOUSE=<a folder of wheels>}")
python=${PYTHON:-python3}
work=$out/offline-install
wh=$work/wheelhouse
# The collection as this checkout (a worktree has no .build/collections of its own).
mkdir -p "$out/collections/ansible_collections/kunpeng"
ln -sfn "$bench_root" "$out/collections/ansible_collections/kunpeng/vllm"
export ANSIBLE_COLLECTIONS_PATH=$out/collections PIP_DISABLE_PIP_VERSION_CHECK=1

log "bench wheelhouse $wh from $wheelhouse"
rm -rf "$work" && mkdir -p "$wh" "$work/runs"
for f in "$wheelhouse"/*.whl; do ln -s "$(readlink -f "$f")" "$wh/"; done
if ! compgen -G "$wh/uv-*.whl" >/dev/null; then
  if [ -n "${UV_WHEEL:-}" ]; then
    ln -s "$(readlink -f "$UV_WHEEL")" "$wh/"
  else
    uv_version=$(uv --version | awk '{print $2}')
    python -m pip download -q --no-deps --only-binary=:all: --platform "manylinux_2_17_$(uname -m)" \
      --dest "$out/uv-wheel" "uv==$uv_version"
    ln -s "$(readlink -f "$out"/uv-wheel/uv-"$uv_version"-*.whl)" "$wh/"
  fi
fi
# The uv binary of that wheel (hand-uv), the role's plan, the requirements.
PYTHONPATH=$out/collections python - "$wh" "$work" "$python" <<'PY'
import json, os, platform, sys
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import wheelhouse_archive as wa
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import deployment
wh, work, python = sys.argv[1:4]
names = sorted(os.listdir(wh))
pins = []
for name in names:
    dist, version = name.split("-")[:2]
    if dist != "uv":
        pins.append(f"{dist.replace('_', '-')}=={version}")
pins = list(dict.fromkeys(pins))  # one pin for wheels of one release with several platform tags
with open(os.path.join(wh, "requirements.txt"), "w") as handle:
    handle.write("\n".join(pins) + "\n")
glibc = tuple(int(p) for p in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2])
wa.extract_uv(os.path.join(wh, wa.uv_wheel_for(names, platform.machine(), glibc)), os.path.join(work, "uvbin"))
node = os.path.join(work, "runs", "NODE")
request = {"install_dir": node, "pip_timeout": 120, "pip_no_index": True, "pip_index_url": "",
           "pip_extra_index_urls": [], "pip_find_links": [], "wheelhouse_src": wh,
           "wheelhouse_requirements": "requirements.txt", "install_method": "wheel", "extra_packages": []}
plan = {"venv": os.path.join(node, "venv"), "wheelhouse_dir": deployment.wheelhouse_dir(request),
        "pip_args": deployment.pip_args(request), "role_steps": deployment.role_steps("cpu", [], request)}
with open(os.path.join(work, "plan.json"), "w") as handle:
    json.dump(plan, handle)
print(f"{len(pins)} wheels to install")
PY
uv=$work/uvbin/uv
log "$(find -L "$wh" -name '*.whl' | wc -l) wheels, $(du -shL "$wh" | cut -f1), $($python --version), $($uv --version)"

freeze() { "$1/bin/python" -m pip freeze --all --exclude pip --exclude setuptools | sort | sha256sum | cut -c1-12; }

t0=$(now)
pack=$(PYTHONPATH=$out/collections python - "$wh" "$work/cache" <<'PY'
import json, sys
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import wheelhouse_archive as wa
print(json.dumps(wa.pack(sys.argv[1], sys.argv[2])))
PY
)
record offline-install pack 1 "$(since "$t0")" "archive_mib=$(python -c "import json,sys; print(json.loads(sys.argv[1])['bytes'] >> 20)" "$pack")"

role() {  # NODE INSTALLER LOG: the role's task files; prints changed=
  local plan=$work/runs/$1.plan.json
  sed "s|$work/runs/NODE|$work/runs/$1|g" "$work/plan.json" >"$plan"
  UV_CACHE_DIR=$work/runs/$1.uv-cache ansible-playbook scripts/bench/offline-install.yml \
    -e "bench_plan=$plan bench_node_dir=$work/runs/$1 vllm_wheelhouse_src=$wh vllm_python=$python" \
    -e "vllm_installer=$2 vllm_wheelhouse_cache_dir=$work/cache" >"$3" 2>&1 || { tail -n 30 "$3" >&2; return 1; }
  awk '/PLAY RECAP/{r=1} r && /changed=/{for(i=1;i<=NF;i++) if($i ~ /^changed=/){split($i,a,"="); s+=a[2]}} END{print s+0}' "$3"
}

for run in $(seq 1 "$runs"); do
  dir=$work/runs/r$run && mkdir -p "$dir"

  t0=$(now)
  $python -m venv "$dir/hand-pip"
  "$dir/hand-pip/bin/pip" install -q --no-index --find-links "$wh" -r "$wh/requirements.txt"
  record offline-install hand-pip "$run" "$(since "$t0")" "freeze=\"$(freeze "$dir/hand-pip")\""
  rm -rf "$dir/hand-pip"

  t0=$(now)
  $python -m venv "$dir/hand-uv"
  UV_CACHE_DIR=$dir/hand-uv.cache "$uv" pip install -q --python "$dir/hand-uv/bin/python" --no-index \
    --find-links "$wh" --compile-bytecode -r "$wh/requirements.txt"
  record offline-install hand-uv "$run" "$(since "$t0")" "freeze=\"$(freeze "$dir/hand-uv")\""
  rm -rf "$dir/hand-uv" "$dir/hand-uv.cache"

  t0=$(now)
  changed=$(role "r$run-uv" uv "$dir/role-uv.log")
  record offline-install role-uv "$run" "$(since "$t0")" "changed=$changed" \
    "freeze=\"$(freeze "$work/runs/r$run-uv/venv")\""
  t0=$(now)
  changed=$(role "r$run-uv" uv "$dir/role-rerun.log")
  record offline-install role-rerun "$run" "$(since "$t0")" "changed=$changed"
  rm -rf "$work/runs/r$run-uv" "$work/runs/r$run-uv.uv-cache"

  t0=$(now)
  changed=$(role "r$run-pip" pip "$dir/role-pip.log")
  record offline-install role-pip "$run" "$(since "$t0")" "changed=$changed" \
    "freeze=\"$(freeze "$work/runs/r$run-pip/venv")\""
  rm -rf "$work/runs/r$run-pip" "$work/runs/r$run-pip.uv-cache"
done

python - "$results" "$bench_id" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
rows = [r for r in rows if r["bench_id"] == sys.argv[2] and r["row"] == "offline-install"]
order = ["pack", "hand-pip", "hand-uv", "role-uv", "role-rerun", "role-pip"]
base = statistics.median([r["seconds"] for r in rows if r["path"] == "hand-pip"] or [0]) or None
print("| Path | Runs (s) | Median (s) | vs hand pip | changed | freeze | load avg |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for path in order:
    got = [r for r in rows if r["path"] == path]
    if not got:
        continue
    secs = [r["seconds"] for r in got]
    med = statistics.median(secs)
    ratio = f"{med / base:.2f}x" if base and path != "pack" else "-"
    changed = ", ".join(str(r["changed"]) for r in got if "changed" in r) or "-"
    freeze = ", ".join(sorted({r["freeze"] for r in got if "freeze" in r})) or "-"
    load = ", ".join(f"{r['load1']:.1f}" for r in got)
    print(f"| {path} | {', '.join(f'{s:.1f}' for s in secs)} | {med:.1f} | {ratio} | {changed} | {freeze} | {load} |")
PY
