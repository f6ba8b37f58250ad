"""No plan and no misfit fix proposes Ray + pipeline stages over nodes + expert parallelism on Ascend (issue 36 point 8a).

vllm-ascend issue #3529 ("cannot start model with Multi-Node-Ray EP+PP2*TP8"; it starts once expert parallelism is
off) and #10910 ("Ray multi-node PP and DP fails but TP works"): pipeline stages over nodes need Ray there, and Ray
with expert parallelism through them fails.  The Ascend record says so (multinode_moe.pipeline_expert_parallel);
CUDA keeps expert parallelism.  Expert parallelism does not change the bytes per device, only the layout's text.
"""

import json
import os

import pytest
from conftest import FIXTURES

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity as cap


def v3(fmt):
    with open(os.path.join(FIXTURES, "models", "deepseek-v3.json")) as handle:
        spec = cap.model_from_config(json.load(handle))
    spec.update(weight_dtype=fmt, block_fp8=False)
    return spec


def plan(backend, series, mib, requested, nodes=2):
    engine = backends.backend(backend)
    options = {"min_model_len": 4096, "concurrent_sequences": 1, "smaller_formats": engine.smaller_formats,
               "multinode_moe": engine.multinode_moe}
    node_hw = {"devices_per_node": 8, "device_memory_mib": mib, "nodes": nodes, "memory_basis": engine.basis(series)}
    return cap.plan_accelerator(v3("bf16"), node_hw, requested, options)


@pytest.mark.parametrize("backend,series,mib,requested,ep,quantised_fix", [
    # DeepSeek-V3 bf16 on 2 x 8 Atlas A2 64 GB: a misfit; its best layout is TP8 x PP2 over the nodes (Ray), so
    # without EP, and the quantised fix is the planner's own data parallel layout (vllm-ascend's DeepSeek-R1 guide)
    ("ascend", "A2", 65536, {}, False,
     "quantised weights: w8a8 (626.77 GiB) fit at data_parallel_size 4, tensor_parallel_size 4 with expert parallelism"),
    # a requested TP8 x PP2 over the two nodes: expert parallelism left off unless the user asks for it
    ("ascend", "A2", 65536, {"tensor_parallel_size": 8, "pipeline_parallel_size": 2}, False,
     "quantised weights: w8a8 (626.77 GiB) fit at data_parallel_size 4, tensor_parallel_size 4 with expert parallelism"),
    # CUDA: vLLM's multi-node guide runs TP x PP over Ray with expert parallelism; no such rule
    ("cuda", None, 81559, {}, True,
     "quantised weights: fp8 (626.77 GiB) fit at tensor_parallel_size 8, pipeline_parallel_size 2"),
])
def test_no_ray_pipeline_expert_parallel_on_ascend(backend, series, mib, requested, ep, quantised_fix):
    result = plan(backend, series, mib, requested)
    args = result["engine_args"]
    assert result["fits"] is False
    assert (args["tensor_parallel_size"], args["pipeline_parallel_size"]) == (8, 2)
    assert args["enable_expert_parallel"] is ep
    assert result["fixes"][0] == quantised_fix
    if backend == "ascend":
        for fix in result["fixes"]:
            assert "pipeline_parallel_size" not in fix or "without expert parallelism" in fix, fix


def test_explicit_expert_parallel_request_is_kept():
    """The user's own enable_expert_parallel is the user's choice (vllm_cluster notes the upstream reports)."""
    result = plan("ascend", "A2", 65536, {"tensor_parallel_size": 8, "pipeline_parallel_size": 2, "enable_expert_parallel": True})
    assert result["engine_args"]["enable_expert_parallel"] is True
