"""The memory basis: the device total each backend's engine multiplies by gpu_memory_utilization.

vLLM and vllm-ascend budget ``total x gpu_memory_utilization`` where the total is what torch (torch_npu) reports
(``requested_memory`` in vllm/v1/worker/gpu_worker.py and vllm_ascend/worker/worker.py), not the vendor tool's
capacity.  No plan may set max_model_len above what that budget gives; where the basis was not measured on a host of
this project the plan keeps a margin instead of planning to the exact limit.
"""


import pytest
from conftest import model_spec

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity as cap

MIB = 2 ** 20
ASCEND = backends.backend("ascend")
CUDA = backends.backend("cuda")
OPTIONS = {"min_model_len": 4096, "concurrent_sequences": 1, "smaller_formats": ["w8a8", "w4a8"]}


model = model_spec


def hw(mib, basis, per_node=8, nodes=1):
    return {"devices_per_node": per_node, "device_memory_mib": mib, "nodes": nodes, "memory_basis": basis}


@pytest.mark.parametrize("backend,series,probed_mib,engine_bytes,measured", [
    # vllm-ascend issues #3843 and #4404: "total memory: 65452113920" on a 64 GB Atlas A2 (npu-smi 65,536 MB)
    ("ascend", "A2", 65536, 65452113920, False),
    # no upstream log for a 32 GB A2 (910B4): the 64 GB A2's 3,115.6 MiB kept back whole, not halved
    ("ascend", "A2", 32768, (32768 - (65536 - 65452113920 / MIB)) * MIB, False),
    # no upstream log for A3: 64 GB per chip like the A2, so the A2's figure
    ("ascend", "A3", 65536, 65452113920, False),
    # vllm-ascend issues #14274 (npu-smi 44,278 MB on a 310P3) and #14004 (torch_npu total 43.24 GiB): the same figure
    ("ascend", "300I Duo", 44280, 44280 * MIB, False),
    # an unknown Atlas series takes the A2's reservation
    ("ascend", None, 65536, 65452113920, False),
    # CUDA: nvidia-smi's capacity; the driver's reservation is in the margin; measured on the H200 (KV replay test)
    ("cuda", None, 143771, 143771 * MIB, True),
])
def test_engine_total_per_series(backend, series, probed_mib, engine_bytes, measured):
    basis = backends.backend(backend).basis(series)
    assert cap.engine_memory_bytes({"device_memory_mib": probed_mib, "memory_basis": basis}) == pytest.approx(engine_bytes, abs=1)
    assert basis["measured"] is measured
    assert (basis["safety_fraction"] > 0) is not measured  # an unmeasured basis always keeps a margin


def _engine_limit(spec, layout_hw, tp, pp, dp):
    """max_model_len the engine's own budget gives: torch's total x 0.9, less weights and the margin without the
    plan's safety share (what the engine subtracts), in 16-token blocks."""
    exact = dict(layout_hw, memory_basis=dict(layout_hw["memory_basis"], safety_fraction=0.0))
    layout = cap.evaluate(spec, exact, spec["weight_dtype"], tp, pp, dp, True, kv_bytes=2, need_len=4096, sequences=1,
                          utilization=0.9)
    return layout["max_len"]


@pytest.mark.parametrize("series,mib,nodes,name,fmt,layout,most", [
    # issue 36: 2 x A2 DeepSeek-R1 W8A8 in vllm-ascend's tutorial layout (DP4 x TP4, EP) was planned at 163,840 tokens
    # where about 133.6 k fit (docs/source/tutorials/models/DeepSeek-R1.md "Multi-Node Data Parallel Deployment")
    ("A2", 65536, 2, "deepseek-v3", "w8a8", {"data_parallel_size": 4, "tensor_parallel_size": 4}, 133600),
    ("A3", 65536, 1, "deepseek-v3", "w8a8", {"data_parallel_size": 4, "tensor_parallel_size": 4}, 163840),
    ("A2", 32768, 1, "qwen2.5-32b-instruct", None, {"tensor_parallel_size": 4}, 32768),
    ("300I Duo", 44280, 1, "qwen2.5-32b-instruct", None, {"tensor_parallel_size": 4}, 32768),
])
def test_ascend_plan_stays_below_the_engine_budget(series, mib, nodes, name, fmt, layout, most):
    spec = model(name, fmt)
    per_node = 16 if series == "A3" else 8
    node_hw = hw(mib, ASCEND.basis(series), per_node=per_node, nodes=nodes)
    result = cap.plan_accelerator(spec, node_hw, layout, OPTIONS)
    assert result["fits"]
    args = result["engine_args"]
    planned = args["max_model_len"]
    limit = _engine_limit(spec, node_hw, args["tensor_parallel_size"], args["pipeline_parallel_size"],
                          args.get("data_parallel_size", 1))
    assert planned <= most
    # KV-bound: strictly below the exact limit the engine's budget gives (the stated margin), never above it
    assert planned < limit or planned == spec["max_position_embeddings"]
    assert planned <= limit
    numbers = result["numbers"]
    assert numbers["memory_basis_gib"] == round(cap.engine_memory_bytes(node_hw) / cap.GIB, 2)
    assert "not measured here" in numbers["memory_basis"]


def test_r1_w8a8_two_a2_nodes_was_planned_to_the_model_limit_on_npu_smi_capacity():
    """The case of issue 36 as it was: npu-smi's capacity as the basis put max_model_len at the model's 163,840."""
    spec = model("deepseek-v3", "w8a8")
    layout = {"data_parallel_size": 4, "tensor_parallel_size": 4}
    before = cap.plan_accelerator(spec, {"devices_per_node": 8, "device_memory_mib": 65536, "nodes": 2}, layout, OPTIONS)
    now = cap.plan_accelerator(spec, hw(65536, ASCEND.basis("A2"), nodes=2), layout, OPTIONS)
    assert before["engine_args"]["max_model_len"] == 163840
    assert now["engine_args"]["max_model_len"] < 133600


@pytest.mark.parametrize("series,mib,params_b", [
    # 28B bf16 (52.2 GiB): loads within 0.9 x npu-smi's 64 GiB, not within 0.9 x torch_npu's 60.96 GiB
    ("A2", 65536, 28),
    ("A3", 65536, 28),
    # 14B bf16 (26.1 GiB) on a 32 GB A2: 0.9 x 32 GiB = 28.8 GiB, 0.9 x 28.96 GiB = 26.06 GiB
    ("A2", 32768, 14),
])
def test_bf16_model_that_cannot_load_on_one_npu_is_a_misfit(series, mib, params_b):
    spec = cap.model_from_declared(params_b, "bf16")
    probed = cap.plan_accelerator(spec, {"devices_per_node": 1, "device_memory_mib": mib, "nodes": 1}, {}, OPTIONS)
    engine = cap.plan_accelerator(spec, hw(mib, ASCEND.basis(series), per_node=1), {}, OPTIONS)
    assert probed["fits"] is True  # what npu-smi's capacity claimed
    assert engine["fits"] is False


def test_cuda_basis_is_the_probed_capacity_unchanged():
    """The H200 replay (tests/unit/plugins/modules/test_vllm_plan_h200_kv.py) holds the CUDA basis to vLLM's KV figure."""
    spec = model("deepseek-r1-distill-qwen-7b")
    plain = cap.plan_accelerator(spec, {"devices_per_node": 1, "device_memory_mib": 143771, "nodes": 1}, {}, OPTIONS)
    cuda = cap.plan_accelerator(spec, hw(143771, CUDA.basis(None), per_node=1), {}, OPTIONS)
    assert cuda["numbers"]["kv_budget_gib"] == plain["numbers"]["kv_budget_gib"]
    assert cuda["numbers"]["memory_basis_gib"] == round(143771 / 1024, 2)
    assert "measured on an H200" in cuda["numbers"]["memory_basis"]


def test_v3_bf16_on_four_a2_nodes_stays_below_the_engine_budget():
    """Issue 36: 4 x A2 DeepSeek-V3 bf16 was planned about 60 % over what fits (111,696 tokens on npu-smi's capacity).

    The planner's own layout search (vllm-ascend's DeepSeek guides: data parallel with expert parallelism)."""
    spec = model("deepseek-v3", "bf16")
    options = dict(OPTIONS, multinode_moe=ASCEND.multinode_moe)
    node_hw = hw(65536, ASCEND.basis("A2"), nodes=4)
    result = cap.plan_accelerator(spec, node_hw, {}, options)
    args = result["engine_args"]
    assert result["fits"] and (args["tensor_parallel_size"], args["data_parallel_size"]) == (4, 8)
    limit = _engine_limit(spec, node_hw, 4, 1, 8)
    assert args["max_model_len"] < limit < 111696 / 1.5
