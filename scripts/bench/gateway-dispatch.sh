#!/usr/bin/env bash
# Issue 39: a mixed workload (short chat turns, long generations) through the
# gateway, hybrid dispatch against round-robin over the same two engines, in
# one run.  docs/benchmarks/2026-12-06-gateway-hybrid-dispatch.md is its report.
#
#   bash scripts/bench/gateway-dispatch.sh
#
# It takes the Molecule lock (MOLECULE_LOCK, default /tmp/molecule.lock) for
# the whole run, converges the gateway scenario with the extra vars of
# gateway-dispatch-vars.yml (two arms on one HAProxy: model smollm2 over a
# round-robin pool of both servers, smollm2-hybrid over the cpu and
# accelerator pools), runs scripts/bench/mixed_load.py against the gateway
# container, prints the table and destroys the scenario (KEEP=1 leaves it up).
# ROUNDS (2), SHORT (30), LONG (10), SHORT_TOKENS (16), LONG_TOKENS (256),
# CONCURRENCY (4) and SEED (39) shape the workload.  Results: one JSON line per
# pass in .build/bench/results.jsonl, one per request in
# .build/bench/gateway-dispatch-<bench id>.jsonl.
set -euo pipefail
# shellcheck source=scripts/bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export HOME=${BENCH_HOME:-$bench_root/.build/home}
mkdir -p "$HOME"

exec 9>>"${MOLECULE_LOCK:-/tmp/molecule.lock}"
log "waiting for the Molecule lock"
flock 9
t0=$(now)
finish() {
  if [ "${KEEP:-0}" != 1 ]; then
    log "destroying the gateway scenario"
    molecule destroy -s gateway >"$out/gateway-dispatch-destroy.log" 2>&1 || log "destroy failed, see $out/gateway-dispatch-destroy.log"
  fi
  cleanup_containers
}
trap finish EXIT

log "converging the gateway scenario (log: $out/gateway-dispatch-converge.log)"
if ! molecule converge -s gateway -- -e @"$bench_root/scripts/bench/gateway-dispatch-vars.yml" \
    >"$out/gateway-dispatch-converge.log" 2>&1; then
  tail -n 40 "$out/gateway-dispatch-converge.log" >&2
  exit 1
fi
log "converged in $(since "$t0") s"

docker exec kv-gateway-vllm-a /opt/vllm/current-smollm2/bin/python -c 'import vllm; print("vllm", vllm.__version__)' \
  >"$out/gateway-dispatch-versions.txt" 2>/dev/null || true
docker exec kv-gateway-vllm-a /opt/vllm/current-smollm2/bin/python -c "import torch; print(\"torch\", torch.__version__)" \
  >>"$out/gateway-dispatch-versions.txt" 2>/dev/null || true
docker exec kv-gateway-gw haproxy -v 2>/dev/null | head -n 1 >>"$out/gateway-dispatch-versions.txt" || true

t1=$(now)
python scripts/bench/mixed_load.py --gateway kv-gateway-gw --key demo-key-change-me \
  --rounds "${ROUNDS:-2}" --short "${SHORT:-30}" --long "${LONG:-10}" \
  --short-tokens "${SHORT_TOKENS:-16}" --long-tokens "${LONG_TOKENS:-256}" \
  --concurrency "${CONCURRENCY:-4}" --seed "${SEED:-39}" \
  --bench-id "$bench_id" --results "$results" --raw "$out/gateway-dispatch-$bench_id.jsonl"
log "load: $(since "$t1") s; total so far $(since "$t0") s"
python3 scripts/bench/summarize.py "$results" --bench-id "$bench_id"
