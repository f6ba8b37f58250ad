"""Parameter counts, KV cache sizes and fit decisions against public model configs and real device sizes."""

import json
import os

import pytest
from conftest import FIXTURES

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity as cap
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError

OPTIONS = {"min_model_len": 4096, "concurrent_sequences": 1, "smaller_formats": ["fp8", "int4"]}
H200_MIB = 143771  # nvidia-smi on the real H200 (fixtures/nvidia/h200)
A100_80G_MIB = 81920
A2_64G_MIB = 65536
A2_32G_MIB = 32768  # 910B4, npu-smi HBM total


def config(name):
    with open(os.path.join(FIXTURES, "models", name + ".json")) as handle:
        return json.load(handle)


def model(name, fmt=None):
    spec = cap.model_from_config(config(name))
    if fmt:
        spec.update(weight_dtype=fmt, block_fp8=spec["block_fp8"] and fmt == "fp8")
    return spec


def hw(mib, per_node=8, nodes=1):
    return {"devices_per_node": per_node, "device_memory_mib": mib, "nodes": nodes}


def test_deepseek_v3_parameter_count():
    spec = model("deepseek-v3")
    assert spec["attention"] == "mla" and spec["moe"] and spec["experts"] == 256
    assert spec["params"]["total"] / 1e9 == pytest.approx(671, rel=0.01)
    assert spec["params"]["active"] / 1e9 == pytest.approx(37, rel=0.02)
    # the checkpoint's 685B = 671B + the MTP layer (+ its embedding/head copies, shared at run time)
    assert 11 < spec["params"]["mtp"] / 1e9 < 14
    assert spec["weight_dtype"] == "fp8" and spec["block_fp8"]


def test_deepseek_v2_lite_parameter_count():
    spec = model("deepseek-v2-lite")
    assert spec["params"]["total"] / 1e9 == pytest.approx(15.7, rel=0.01)
    assert spec["params"]["active"] / 1e9 == pytest.approx(2.4, rel=0.03)
    assert spec["weight_dtype"] == "bf16"


def test_qwen2_dense_parameter_count():
    spec = model("deepseek-r1-distill-qwen-7b")
    assert spec["attention"] == "gqa" and not spec["moe"]
    assert spec["params"]["total"] / 1e9 == pytest.approx(7.62, rel=0.01)


def test_smollm2_tied_embeddings_counted_once():
    spec = model("smollm2-135m")
    assert spec["params"]["lm_head"] == 0
    assert spec["params"]["total"] / 1e6 == pytest.approx(134.5, rel=0.01)


def test_kv_bytes_per_token():
    # MLA: (kv_lora_rank + qk_rope_head_dim) x layers x bytes
    assert cap.kv_bytes_per_token(model("deepseek-v3"), 2) == (512 + 64) * 61 * 2
    assert cap.kv_bytes_per_token(model("deepseek-v3"), 1) == (512 + 64) * 61
    assert cap.kv_bytes_per_token(model("deepseek-v2-lite"), 2) == 576 * 27 * 2
    # GQA: 2 x layers x kv_heads x head_dim x bytes
    assert cap.kv_bytes_per_token(model("deepseek-r1-distill-qwen-7b"), 2) == 2 * 28 * 4 * 128 * 2
    assert cap.kv_bytes_per_token(model("smollm2-135m"), 2) == 2 * 30 * 3 * 64 * 2


def test_weight_bytes_by_format():
    v3 = model("deepseek-v3")
    fp8 = cap.weight_bytes(v3)
    assert 620 * cap.GIB < fp8 < 635 * cap.GIB  # ~671 GB
    assert cap.weight_bytes(v3, "bf16") / fp8 == pytest.approx(2, rel=0.01)
    assert cap.weight_bytes(v3, "int4") / fp8 == pytest.approx(0.52, rel=0.03)
    qwen = model("deepseek-r1-distill-qwen-7b")
    assert cap.weight_bytes(qwen) == pytest.approx(7.62e9 * 2, rel=0.01)


@pytest.mark.parametrize("method,expected", [
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, ("fp8", True)),
    ({"quant_method": "fp8"}, ("fp8", False)),
    ({"quant_method": "awq", "bits": 4}, ("int4", False)),
    ({"quant_method": "gptq", "bits": 8}, ("int8", False)),
    ({"quant_method": "compressed-tensors",
      "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int"}, "input_activations": {"num_bits": 8}}}}, ("w8a8", False)),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}}, ("fp8", False)),
])
def test_weight_format_from_quantization_config(method, expected):
    fmt, block, dummy = cap.weight_format_from_config({"quantization_config": method})
    assert (fmt, block) == expected


def test_unknown_quantization_asks_for_a_declaration():
    with pytest.raises(PlanError, match="declare weight_dtype"):
        cap.weight_format_from_config({"quantization_config": {"quant_method": "hqq"}})


def test_deepseek_v3_fp8_fits_eight_h200_at_tp8():
    result = cap.plan_accelerator(model("deepseek-v3"), hw(H200_MIB), {}, OPTIONS)
    assert result["fits"]
    args = result["engine_args"]
    assert args["tensor_parallel_size"] == 8 and args["pipeline_parallel_size"] == 1
    assert args["enable_expert_parallel"] is True
    assert args["max_model_len"] == 163840  # capped by max_position_embeddings
    n = result["numbers"]
    assert n["available_gib"] == pytest.approx(143771 / 1024 * 0.9, abs=0.01)
    assert n["per_device_weights_gib"] == pytest.approx(79, abs=1)


def test_deepseek_v3_fp8_does_not_fit_one_a100_node_and_gets_one_host_fixes():
    result = cap.plan_accelerator(model("deepseek-v3"), hw(A100_80G_MIB), {}, OPTIONS)
    assert result["fits"] is False
    n = result["numbers"]
    assert n["available_gib"] == 72.0  # 80 GiB x 0.9; 8 x 72 = 576 GiB < 625 GiB of weights
    assert n["weights_gib"] > 8 * n["available_gib"]
    # serving from several nodes is not supported: every fix keeps the instance on one host
    assert result["fixes"] == [
        "quantised weights: int4 (324.56 GiB) fit at tensor_parallel_size 8",  # embeddings and head stay 16-bit
        "larger devices: 8 with at least 93 GiB each (tensor_parallel_size 8)",
        "more devices: a host with 16 such devices (tensor_parallel_size 16)",
    ]
    message = cap.misfit_message(model("deepseek-v3"), result, hw(A100_80G_MIB), on_host=False)
    assert "72.0 GiB available" in message and "Cheapest fix: quantised weights: int4" in message
    assert "nodes" not in message.split("Cheapest fix")[1]


def test_larger_devices_fix_would_fit():
    """The memory the fix names is enough: the same layout fits on devices of that size."""
    result = cap.plan_accelerator(model("deepseek-v3"), hw(A100_80G_MIB), {}, OPTIONS)
    gib = int(result["fixes"][1].split("at least ")[1].split(" GiB")[0])
    assert cap.plan_accelerator(model("deepseek-v3"), hw(gib * 1024), {}, OPTIONS)["fits"] is True
    assert cap.plan_accelerator(model("deepseek-v3"), hw((gib - 1) * 1024), {}, OPTIONS)["fits"] is False


def test_deepseek_v3_fp8_on_two_a100_nodes_runs_pipeline_two():
    result = cap.plan_accelerator(model("deepseek-v3"), hw(A100_80G_MIB, nodes=2), {}, OPTIONS)
    assert result["fits"] and result["nodes_needed"] == 2
    assert result["engine_args"]["tensor_parallel_size"] == 8
    assert result["engine_args"]["pipeline_parallel_size"] == 2


def test_r1_w8a8_on_two_atlas_a2_64g_nodes():
    r1 = model("deepseek-v3", "w8a8")
    result = cap.plan_accelerator(r1, hw(A2_64G_MIB, nodes=2), {}, OPTIONS)
    assert result["fits"]
    assert (result["engine_args"]["tensor_parallel_size"], result["engine_args"]["pipeline_parallel_size"]) == (8, 2)
    # the layout of vllm-ascend's guide: data parallel 4 x tensor parallel 4 with expert parallelism
    guide = cap.plan_accelerator(r1, hw(A2_64G_MIB, nodes=2), {"data_parallel_size": 4, "tensor_parallel_size": 4}, OPTIONS)
    assert guide["fits"] and guide["engine_args"]["enable_expert_parallel"] is True
    assert guide["engine_args"]["data_parallel_size"] == 4
    # without expert parallelism vLLM tensor-shards every expert over TP x DP: the same bytes per device
    no_ep = cap.plan_accelerator(r1, hw(A2_64G_MIB, nodes=2),
                                 {"data_parallel_size": 4, "tensor_parallel_size": 4, "enable_expert_parallel": False}, OPTIONS)
    assert no_ep["fits"] and no_ep["engine_args"]["enable_expert_parallel"] is False
    assert no_ep["numbers"]["per_device_weights_gib"] == guide["numbers"]["per_device_weights_gib"]


@pytest.mark.parametrize("tp,dp", [(1, 2), (2, 2), (4, 4), (8, 1)])
def test_routed_experts_spread_over_tp_x_dp_with_or_without_expert_parallelism(tp, dp):
    """vllm/model_executor/layers/fused_moe/config.py: FusedMoEParallelConfig.make flattens TP x DP for the experts."""
    r1 = model("deepseek-v3", "w8a8")
    with_ep = cap.per_device_weight_bytes(r1, "w8a8", tp, 1, dp, True)
    without = cap.per_device_weight_bytes(r1, "w8a8", tp, 1, dp, False)
    assert with_ep == without
    experts = r1["params"]["experts"]
    assert cap.per_device_weight_bytes(r1, "w8a8", tp, 1, dp * 2, False) == pytest.approx(without - experts / (tp * dp * 2))


def test_r1_w8a8_on_one_910b4_node_does_not_fit():
    result = cap.plan_accelerator(model("deepseek-v3", "w8a8"), hw(A2_32G_MIB), {}, dict(OPTIONS, smaller_formats=["w8a8", "w4a8"]))
    assert result["fits"] is False
    assert result["numbers"]["available_gib"] == pytest.approx(28.8)
    assert result["fixes"] == ["larger devices: 8 with at least 93 GiB each (tensor_parallel_size 8)"]
    # w4a8 still needs ~322 GiB > 8 x 28.8 GiB, and 16 such NPUs (461 GiB) hold no 625 GiB of w8a8 weights


def test_r1_distill_qwen_7b_on_one_h200():
    result = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(H200_MIB, per_node=1), {}, OPTIONS)
    assert result["fits"]
    assert result["engine_args"]["tensor_parallel_size"] == 1
    assert result["engine_args"]["max_model_len"] == 131072
    assert result["numbers"]["kv_budget_gib"] > 100


def test_long_context_on_a_small_card_is_capped_by_the_kv_budget():
    # 7B bf16 on one 24 GiB card: ~14.2 GiB weights, ~6.3 GiB left for KV at 56 KiB per token
    result = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(24576, per_node=1), {}, OPTIONS)
    assert result["fits"]
    limit = result["engine_args"]["max_model_len"]
    assert 4096 < limit < 131072 and limit % 16 == 0
    too_long = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(24576, per_node=1), {"max_model_len": 131072}, OPTIONS)
    assert not too_long["fits"]
    assert too_long["fixes"][0] == f"a shorter context: max_model_len {limit} fits at tensor_parallel_size 1"


def test_concurrency_divides_the_context():
    one = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(24576, per_node=1), {}, OPTIONS)
    four = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(24576, per_node=1), {}, dict(OPTIONS, concurrent_sequences=4))
    assert four["engine_args"]["max_model_len"] == pytest.approx(one["engine_args"]["max_model_len"] / 4, abs=16)


def test_fp8_kv_cache_doubles_the_context():
    bf16 = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(20480, per_node=1), {}, OPTIONS)
    fp8 = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(20480, per_node=1), {"kv_cache_dtype": "fp8"}, OPTIONS)
    assert fp8["engine_args"]["kv_cache_dtype"] == "fp8"
    assert bf16["engine_args"]["max_model_len"] < 65536  # the KV budget, not the model, limits bf16
    # twice the tokens, each figure rounded down to 16-token blocks
    assert fp8["engine_args"]["max_model_len"] == pytest.approx(min(131072, 2 * bf16["engine_args"]["max_model_len"]), abs=16)


def test_smallest_tensor_parallel_size_is_searched():
    # 15.7B bf16 (29 GiB) on 8 x 24 GiB cards: TP1 cannot hold it, TP2 can
    result = cap.plan_accelerator(model("deepseek-v2-lite"), hw(24576), {}, OPTIONS)
    assert result["fits"] and result["engine_args"]["tensor_parallel_size"] == 2


def test_valid_tensor_parallel_sizes():
    assert cap.valid_tensor_parallel(model("deepseek-r1-distill-qwen-7b"), 8) == [1, 2, 4]  # 28 heads
    assert cap.valid_tensor_parallel(model("deepseek-v3"), 16) == [1, 2, 4, 8, 16]
    assert cap.valid_tensor_parallel(model("smollm2-135m"), 8) == [1]  # 9 heads
    assert cap.valid_tensor_parallel(model("deepseek-v3"), 6) == [1, 2]


@pytest.mark.parametrize("requested,message", [
    ({"tensor_parallel_size": 3}, "tensor_parallel_size 3 does not divide the model's 28 attention heads; use one of 1, 2, 4"),
    ({"tensor_parallel_size": 4, "pipeline_parallel_size": 4}, "tensor 4 x pipeline 4 x data 1 parallel needs 16 devices, 8 available"),
    ({"pipeline_parallel_size": 40}, "pipeline_parallel_size 40 exceeds the model's 28 layers"),
    ({"max_model_len": 200000}, "max_model_len 200000 exceeds the model's max_position_embeddings 131072"),
])
def test_impossible_requests_fail(requested, message):
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(H200_MIB), requested, OPTIONS)


def test_tensor_parallel_larger_than_all_devices_fails():
    with pytest.raises(PlanError, match=r"tensor_parallel_size 16 exceeds the 8 devices \(1 node\(s\) x 8\)"):
        cap.plan_accelerator(model("deepseek-v3"), hw(H200_MIB), {"tensor_parallel_size": 16}, OPTIONS)


def test_requested_layout_is_kept():
    result = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(H200_MIB), {"tensor_parallel_size": 2}, OPTIONS)
    assert result["fits"] and result["engine_args"]["tensor_parallel_size"] == 2


def test_smollm2_on_the_cpu_backend():
    result = cap.plan_cpu(model("smollm2-135m"), {"host_memory_mib": 16000, "nodes": 1}, {},
                          dict(OPTIONS, kv_cache_space_gib=4))
    assert result["fits"]
    assert result["engine_args"] == {"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "max_model_len": 8192}
    assert result["numbers"]["kv_budget_gib"] == 4.0


def test_cpu_host_too_small():
    result = cap.plan_cpu(model("deepseek-r1-distill-qwen-7b"), {"host_memory_mib": 16000, "nodes": 1}, {},
                          dict(OPTIONS, kv_cache_space_gib=4))
    assert not result["fits"]
    assert result["fixes"][0].startswith("a host with at least 22 GiB")
    with pytest.raises(PlanError, match="tensor_parallel_size 1"):
        cap.plan_cpu(model("smollm2-135m"), {"host_memory_mib": 16000, "nodes": 1}, {"tensor_parallel_size": 2}, OPTIONS)


def test_declared_size_without_config_checks_weights_only():
    spec = cap.model_from_declared(70, "bf16")
    result = cap.plan_accelerator(spec, hw(H200_MIB), {}, OPTIONS)
    assert result["fits"] and result["engine_args"]["tensor_parallel_size"] == 2
    assert "max_model_len" not in result["engine_args"]
    assert result["numbers"]["kv_bytes_per_token"] is None


def _kv_choices_of_0_32():
    with open(os.path.join(FIXTURES, "vllm", "kv-cache-dtype-0.32.0.txt")) as handle:
        return [line.strip() for line in handle if line.strip() and not line.startswith("#")]


def test_kv_cache_dtypes_are_exactly_the_choices_of_vllm_0_32():
    assert list(cap.KV_DTYPES) == _kv_choices_of_0_32()


@pytest.mark.parametrize("choice", _kv_choices_of_0_32())
def test_every_kv_cache_dtype_choice_is_planned(choice):
    result = cap.plan_accelerator(model("deepseek-r1-distill-qwen-7b"), hw(H200_MIB, per_node=1), {"kv_cache_dtype": choice}, OPTIONS)
    assert result["fits"] is True
    assert result["engine_args"].get("kv_cache_dtype", "auto") == choice


@pytest.mark.parametrize("name,fix", [
    ("bf16", "use bfloat16"), ("fp16", "use float16"), ("half", "use float16"),
    ("int8", "use one of auto, float16, bfloat16, fp8,"), ("FP8", "use one of auto"),
])
def test_kv_cache_dtype_vllm_refuses_is_refused(name, fix):
    for plan in (lambda: cap.plan_accelerator(model("smollm2-135m"), hw(H200_MIB, per_node=1), {"kv_cache_dtype": name}, OPTIONS),
                 lambda: cap.plan_cpu(model("smollm2-135m"), {"host_memory_mib": 16000, "nodes": 1}, {"kv_cache_dtype": name}, OPTIONS)):
        with pytest.raises(PlanError) as info:
            plan()
        assert str(info.value).startswith(f"kv_cache_dtype {name} is not a choice of vLLM's --kv-cache-dtype")
        assert fix in str(info.value)


# --- issue 25: first-generation Qwen, architectures not modelled, 16-bit parts of quantized checkpoints, pipeline stages

# Qwen/Qwen2.5-32B-Instruct-AWQ config.json (public values): Qwen2 with 4-bit AWQ linear layers.
QWEN25_32B_AWQ = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120, "intermediate_size": 27648,
    "num_attention_heads": 40, "num_hidden_layers": 64, "num_key_value_heads": 8, "vocab_size": 152064,
    "max_position_embeddings": 32768, "tie_word_embeddings": False, "torch_dtype": "float16",
    "quantization_config": {"bits": 4, "group_size": 128, "quant_method": "awq", "version": "gemm", "zero_point": True},
}
L40S_MIB = 46068  # nvidia-smi -q on an L40S (fixtures/nvidia/nvidia-smi-q-x-v11-l40s.xml)


@pytest.mark.parametrize("name, params_b", [
    # vllm/model_executor/models/qwen.py: QWenMLP(hidden_size, intermediate_size // 2), c_attn with bias;
    # Qwen-7B's model card: 7.7B parameters
    ("qwen-7b", 7.72),
    ("deepseek-r1-distill-qwen-7b", 7.62),
    ("deepseek-v2-lite", 15.71),
    ("smollm2-135m", 0.13),
])
def test_parameter_count_by_architecture(name, params_b):
    assert model(name)["params"]["total"] / 1e9 == pytest.approx(params_b, abs=0.01)


def test_qwen_7b_fits_a_24_gib_gpu():
    """Counted as 12.05 B parameters (24 GB of bf16) it was refused; at 7.72 B (14.4 GiB) it fits with a 4096 context."""
    result = cap.plan_accelerator(model("qwen-7b"), hw(24576, per_node=1), {"max_model_len": 4096}, OPTIONS)
    assert result["fits"] and result["engine_args"]["tensor_parallel_size"] == 1
    assert result["numbers"]["weights_gib"] == pytest.approx(14.38, abs=0.05)


@pytest.mark.parametrize("model_type, architecture", [
    ("gemma2", "Gemma2ForCausalLM"),
    ("phi3", "Phi3ForCausalLM"),
    ("gpt_oss", "GptOssForCausalLM"),
    (None, None),
])
def test_architectures_not_modelled_ask_for_params_b(model_type, architecture):
    other = dict(config("smollm2-135m"), model_type=model_type, architectures=[architecture] if architecture else [])
    with pytest.raises(PlanError, match="not an architecture the planner models.*declare params_b and weight_dtype"):
        cap.model_from_config(other)


@pytest.mark.parametrize("fmt", ["int4", "fp8", "w8a8", "int8", "w4a8", "bf16"])
def test_embeddings_and_head_stay_16_bit_in_quantized_checkpoints(fmt):
    """AWQ/GPTQ/FP8 quantize LinearBase layers only (get_quant_method in vllm/model_executor/layers/quantization/
    awq.py, gptq.py, fp8.py): VocabParallelEmbedding and ParallelLMHead keep 16 bits."""
    spec = cap.model_from_config(QWEN25_32B_AWQ)
    p = spec["params"]
    linear = (p["sharded"] + p["replicated"] + p["experts"]) * cap.bytes_per_param(fmt)
    assert cap.weight_bytes(spec, fmt) == pytest.approx(linear + (p["embed"] + p["lm_head"] + p["small"]) * 2)


def test_qwen25_32b_awq_on_an_l40s_counts_its_16_bit_parts():
    spec = cap.model_from_config(QWEN25_32B_AWQ)
    assert spec["weight_dtype"] == "int4"
    p = spec["params"]
    # what counting them at the 4-bit width left out: 2.16 GiB
    assert (p["embed"] + p["lm_head"] + p["small"]) * (2 - cap.WEIGHT_FORMATS["int4"]) / cap.GIB == pytest.approx(2.16, abs=0.01)
    result = cap.plan_accelerator(spec, hw(L40S_MIB, per_node=1), {}, OPTIONS)
    assert result["numbers"]["weights_gib"] == pytest.approx(17.87, abs=0.01)
    # the KV budget, and with it max_model_len, is what is left after those weights
    n = result["numbers"]
    assert n["available_gib"] - n["per_device_weights_gib"] - n["margin_gib"] == pytest.approx(n["kv_budget_gib"], abs=0.02)


def test_gptq_checkpoint_with_a_quantized_lm_head():
    """GPTQConfig.lm_head_quantized (vllm/model_executor/layers/quantization/gptq.py): "lm_head": true."""
    plain = cap.model_from_config(dict(QWEN25_32B_AWQ, quantization_config={"quant_method": "gptq", "bits": 4}))
    head = cap.model_from_config(dict(QWEN25_32B_AWQ, quantization_config={"quant_method": "gptq", "bits": 4, "lm_head": True}))
    saved = plain["params"]["lm_head"] * (2 - cap.WEIGHT_FORMATS["int4"])
    assert cap.weight_bytes(plain) - cap.weight_bytes(head) == pytest.approx(saved)


@pytest.mark.parametrize("layers, pp, parts", [
    # vllm/distributed/utils.py get_pp_indices: even split, the remainder one each to partitions[-2], [-3], ...
    (61, 2, [31, 30]),
    (61, 4, [15, 15, 16, 15]),
    (30, 4, [7, 8, 8, 7]),
    (27, 3, [9, 9, 9]),
    (5, 3, [2, 2, 1]),
    (28, 1, [28]),
])
def test_pipeline_partition_is_vllms(layers, pp, parts):
    assert cap.pipeline_partition(layers, pp) == parts


def test_deepseek_v3_pipeline_stage_is_the_heaviest_not_the_average():
    """TP8 x PP2: stage 1 holds 30 MoE layers and the LM head, stage 0 31 layers of which 3 dense plus the
    embedding.  The last stage is 0.59 GiB heavier than half the layers plus one end (the former rule)."""
    v3 = model("deepseek-v3")
    stages = cap._stages(v3, 2)
    first, last = (cap.stage_weight_bytes(v3, "fp8", 8, 1, stage, 2) for stage in stages)
    assert last > first
    assert cap.per_device_weight_bytes(v3, "fp8", 8, 2, 1, True) == last
    p = v3["params"]
    per = cap.bytes_per_param("fp8", True)
    average = ((p["sharded"] / 8 + p["experts"] / 8 + p["replicated"]) * per + p["small"] * 2) * 31 / 61 + p["embed"] * 2 / 8
    assert (last - average) / cap.GIB == pytest.approx(0.59, abs=0.01)
    result = cap.plan_accelerator(v3, hw(A100_80G_MIB, nodes=2), {}, OPTIONS)
    assert result["numbers"]["per_device_weights_gib"] == pytest.approx(last / cap.GIB, abs=0.01)


def test_pipeline_kv_is_sized_on_the_tightest_stage():
    qwen = model("deepseek-r1-distill-qwen-7b")  # 28 layers: PP3 -> 10, 9, 9 (Qwen2 with untied head)
    assert cap.pipeline_partition(28, 3) == [9, 10, 9]
    layout = cap.evaluate(qwen, hw(24576, per_node=1), "bf16", 1, 3, 1, False, kv_bytes=2, need_len=4096,
                          sequences=1, utilization=0.9)
    assert layout["kv_token"] == 2 * 10 * 4 * 128 * 2


@pytest.mark.parametrize("tp, pp, dp, groups", [(1, 1, 1, 0), (2, 1, 1, 1), (8, 2, 1, 2), (4, 1, 4, 2), (8, 2, 2, 3)])
def test_margin_adds_an_nccl_allowance_per_parallel_group(tp, pp, dp, groups):
    """Not measured (one GPU): 0.5 GiB per tensor / pipeline / data parallel group of more than one rank."""
    parts = cap.overhead(model("deepseek-r1-distill-qwen-7b"), hw(H200_MIB), tp, pp, dp, 0.9)
    assert parts["nccl"] == groups * cap.NCCL_BYTES_PER_GROUP


@pytest.mark.parametrize("mib, tokens, seqs", [(H200_MIB, 8192, 1024), (24576, 2048, 256)])
def test_margin_follows_vllms_batch_defaults(mib, tokens, seqs):
    """EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py): 8192 / 1024 on devices of 70 GiB or more."""
    qwen = model("deepseek-r1-distill-qwen-7b")
    parts = cap.overhead(qwen, hw(mib), 1, 1, 1, 0.9)
    forward = tokens * 2 * (qwen["mlp_width"] + cap.HIDDEN_BUFFERS * qwen["hidden"])
    assert parts["activation"] == forward + seqs * qwen["vocab"] * 4 * cap.SAMPLER_COPIES
    explicit = cap.overhead(qwen, hw(mib), 1, 1, 1, 0.9, {"max_num_batched_tokens": 512, "max_num_seqs": 16})
    assert explicit["activation"] < parts["activation"]


@pytest.mark.parametrize("name, tp, workspace", [
    # top_k x (3 x moe_intermediate + hidden) elements a token: Qwen3-30B-A3B 8 x (3 x 768 + 2048)
    ("qwen3-30b-a3b", 1, 8 * (3 * 768 + 2048)),
    ("qwen3-30b-a3b", 4, 8 * (3 * 768 + 2048)),
    # DeepSeek-V2-Lite: 6 x (3 x 1408 + 2048)
    ("deepseek-v2-lite", 1, 6 * (3 * 1408 + 2048)),
    ("deepseek-r1-distill-qwen-7b", 1, 0),
])
def test_margin_counts_the_moe_parts_only_for_routed_experts(name, tp, workspace):
    """The MoE log (Qwen3-30B-A3B on the H200): CUDA graph estimate plus the routed workspace counted again."""
    parts = cap.overhead(model(name), hw(H200_MIB), tp, 1, 1, 0.9)
    if not workspace:
        assert "moe_workspace" not in parts and "cuda_graphs" not in parts
        return
    assert model(name)["moe_workspace"] == workspace
    assert parts["moe_workspace"] == 8192 * 2 * cap.MOE_WORKSPACE_EXTRA * workspace / tp
    assert parts["cuda_graphs"] == cap.MOE_CUDA_GRAPH_BYTES
