"""Ascend mixture-of-experts plans search data parallel x tensor parallel (+ expert parallel) layouts as vllm-ascend's
tutorials run them, on one large host as well as over nodes (issue 36, done-when 3).

vllm-project/vllm-ascend docs/source/tutorials/models/DeepSeek-R1.md (validated on v0.13.0):
* "Single-Node Online Deployment": DeepSeek-R1-W8A8 on one Atlas 800 A3 (64G x 16) runs ``--data-parallel-size 4
  --tensor-parallel-size 4 --enable-expert-parallel``, "we recommend using dp4tp4 instead of dp2tp8";
* "Multi-Node Data Parallel Deployment": on two Atlas 800 A2 (64G x 8) the same dp4 x tp4, two ranks per node.
DeepSeek-V3.1.md runs the same two layouts.  Qwen3-235B-A22B.md's single-node deployment keeps one tensor-parallel 8
replica on an 8-NPU A2 host (``--tensor-parallel-size 8 --data-parallel-size 1 --enable-expert-parallel``), and its
"Multi-node Deployment with MP" runs one tensor-parallel 8 replica per node.
"""


import pytest
from conftest import model_spec

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import ascend as ascend_backend
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity as cap

ASCEND = backends.backend("ascend")
OPTIONS = {"min_model_len": 4096, "concurrent_sequences": 1, "smaller_formats": ASCEND.smaller_formats,
           "multinode_moe": ASCEND.multinode_moe}


model = model_spec


def plan(spec, series, per_node, nodes, requested=None):
    hw = {"devices_per_node": per_node, "device_memory_mib": 65536, "nodes": nodes, "memory_basis": ASCEND.basis(series)}
    return cap.plan_accelerator(spec, hw, requested or {}, OPTIONS), hw


@pytest.mark.parametrize("name,fmt,series,per_node,nodes,layout", [
    # DeepSeek-R1.md "Single-Node Online Deployment": one A3 (16 x 64 GB), dp4 x tp4 with EP (was tensor parallel 16)
    ("deepseek-v3", "w8a8", "A3", 16, 1, (4, 4, True)),
    # DeepSeek-R1.md "Multi-Node Data Parallel Deployment": two A2 (8 x 64 GB), dp4 x tp4 with EP
    ("deepseek-v3", "w8a8", "A2", 8, 2, (4, 4, True)),
    # a model that fits fewer NPUs than the A3 host keeps the smallest tensor-parallel size: no replicas
    ("qwen3-30b-a3b", None, "A3", 16, 1, (2, 1, True)),
    ("deepseek-v2-lite", None, "A3", 16, 1, (1, 1, False)),
    # an 8-NPU A2 host whose model needs all 8 keeps one tensor-parallel 8 replica with EP (Qwen3-235B-A22B.md single
    # node), not dp2 x tp4
    ("deepseek-v3", "w4a8", "A2", 8, 1, (8, 1, True)),
])
def test_moe_layouts_follow_the_tutorials(name, fmt, series, per_node, nodes, layout):
    result, dummy = plan(model(name, fmt), series, per_node, nodes)
    args = result["engine_args"]
    assert result["fits"] is True
    assert (args["tensor_parallel_size"], args.get("data_parallel_size", 1), args["enable_expert_parallel"]) == layout
    assert args["pipeline_parallel_size"] == 1


def test_one_a3_host_gets_more_kv_as_replicas_than_as_tensor_parallel_16():
    """The issue's number: tensor parallel 16 held about a third of the KV capacity dp4 x tp4 holds."""
    spec = model("deepseek-v3", "w8a8")
    replicas, hw = plan(spec, "A3", 16, 1)
    tp16, dummy = plan(spec, "A3", 16, 1, {"tensor_parallel_size": 16})
    assert tp16["fits"] and replicas["fits"]
    # every replica has its own KV cache: the layout's total is dp x the per-replica limit
    total = replicas["engine_args"]["data_parallel_size"] * replicas["numbers"]["max_model_len_limit"]
    assert total > 2 * tp16["numbers"]["max_model_len_limit"]


def test_a_requested_layout_is_kept_on_a3():
    result, dummy = plan(model("deepseek-v3", "w8a8"), "A3", 16, 1, {"tensor_parallel_size": 8, "data_parallel_size": 2})
    assert (result["engine_args"]["tensor_parallel_size"], result["engine_args"]["data_parallel_size"]) == (8, 2)


@pytest.mark.parametrize("nodes,per_node,tp,dp,names", [
    (1, 16, 4, 4, ("DeepSeek-R1.md", "Single-Node Online Deployment", "Atlas 800 A3")),
    (2, 8, 4, 4, ("DeepSeek-R1.md", "Multi-Node Data Parallel Deployment", "--data-parallel-size-local 2")),
    (2, 8, 8, 2, ("Qwen3-235B-A22B.md", "Multi-node Deployment with MP")),
    # no tutorial runs dp8 x tp4 over two A3 nodes: the plan says it extends their rule
    (2, 16, 4, 8, ("no vllm-ascend tutorial runs this exact layout", "DeepSeek-R1.md")),
])
def test_layout_tutorial_names_the_tutorial(nodes, per_node, tp, dp, names):
    text = ascend_backend.layout_tutorial(nodes, per_node, tp, dp)
    assert all(name in text for name in names), text


@pytest.mark.parametrize("series,per_node,nodes,where,tutorial", [
    ("A3", 16, 1, "on one host of 16 NPUs", "Single-Node Online Deployment"),
    ("A2", 8, 2, "over 2 nodes", "Multi-Node Data Parallel Deployment"),
])
def test_the_plan_notes_which_tutorial_it_follows(series, per_node, nodes, where, tutorial):
    spec = model("deepseek-v3", "w8a8")
    result, hw = plan(spec, series, per_node, nodes)
    notes = []
    ASCEND.engine_args(spec, result, dict(result["engine_args"]), hw, notes)
    line = next(note for note in notes if note.startswith("Data parallel 4 x tensor parallel 4"))
    assert where in line and tutorial in line, line
