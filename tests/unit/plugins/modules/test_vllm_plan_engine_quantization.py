"""Issue 36 point 1: ``vllm_engine_args: {quantization: fp8}`` is what the engine loads, so the plan sizes FP8.

vLLM's ``--quantization fp8`` quantizes a 16-bit checkpoint to FP8 while loading it; with the default
``vllm_model_weight_dtype: auto`` the plan used to size the checkpoint's bf16 (a Llama-3.1-70B-shaped model on one
H200 refused at 131.42 GiB of weights where vLLM loads about 68 GiB).  Upstream: vLLM's docs/features/quantization/fp8.md
("Online Dynamic Quantization": ``--quantization fp8`` on a BF16/FP16 checkpoint) and
vllm/model_executor/layers/quantization/fp8.py (Fp8Config quantizes the linear weights to FP8 while loading them).
"""

import pytest
from test_vllm_plan import fails, h200, model, ok

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import deployment
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError


@pytest.mark.parametrize("declared, quantization, expected", [
    ("auto", None, "auto"),
    ("auto", "fp8", "fp8"),
    ("auto", "FP8", "fp8"),
    ("fp8", "fp8", "fp8"),
    ("fp8", None, "fp8"),
    ("bf16", None, "bf16"),
    # methods that name the checkpoint's own quantization leave the format to config.json / the declaration
    ("auto", "ascend", "auto"),
    ("w8a8", "ascend", "w8a8"),
    ("auto", "awq", "auto"),
    ("int4", "gptq", "int4"),
])
def test_effective_weight_dtype(declared, quantization, expected):
    assert deployment.effective_weight_dtype(declared, quantization) == expected


@pytest.mark.parametrize("declared", ["bf16", "fp16", "int4", "w8a8", "fp32"])
def test_a_declared_format_that_contradicts_the_engine_is_refused(declared):
    with pytest.raises(PlanError) as error:
        deployment.effective_weight_dtype(declared, "fp8")
    assert "vllm_engine_args.quantization" in str(error.value) and "vllm_model_weight_dtype" in str(error.value)


def llama_70b():
    """Llama-3.1-70B's shapes on the 8B's config.json."""
    return dict(model("llama-3.1-8b"), hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                num_attention_heads=64, num_key_value_heads=8)


@pytest.mark.parametrize("config, quantization, low, high", [
    # vLLM loads ~68 GiB for the 70B with --quantization fp8 (the embeddings and LM head stay 16-bit)
    (llama_70b(), "fp8", 65, 70),
    (llama_70b(), None, 130, 133),
    # DeepSeek-V2-Lite: vLLM logged 15.22 GiB of weights with --quantization fp8 on the H200
    (model("deepseek-v2-lite"), "fp8", 14.5, 16.5),
    (model("deepseek-v2-lite"), None, 28, 30),
])
def test_engine_quantization_sizes_the_weights(config, quantization, low, high):
    engine_args = {"quantization": quantization} if quantization else {}
    result = ok({"accelerators": h200(1), "model_config": config, "requested_engine_args": engine_args,
                 "fail_on_misfit": False})
    assert low <= result["numbers"]["weights_gib"] <= high, result["numbers"]
    if quantization:
        assert result["fits"] is True and result["model"]["weight_dtype"] == "fp8"


def test_params_b_with_engine_quantization_needs_no_weight_dtype():
    result = ok({"accelerators": h200(1), "params_b": 70, "requested_engine_args": {"quantization": "fp8"}})
    assert result["model"]["weight_dtype"] == "fp8" and result["fits"] is True


def test_contradiction_fails_the_module():
    msg = fails({"accelerators": h200(1), "model_config": llama_70b(), "weight_dtype": "bf16",
                 "requested_engine_args": {"quantization": "fp8"}})["msg"]
    assert "vllm_model_weight_dtype is bf16" in msg
