"""A model given by params_b (no config.json, no layer count) gets pipeline stages across nodes (issue 36 point 6).

vLLM's distributed serving guide serves a model larger than one node as tensor parallel within a node and pipeline
parallel across nodes: 16 GPUs in 2 nodes as tensor parallel 8 x pipeline parallel 2 (docs.vllm.ai, "Distributed
Inference and Serving", "How to decide the distributed inference strategy").  Without a layer count the planner assumes the layers allow one
stage per node and says so in the plan's notes.
"""

import pytest
from test_vllm_plan import fails, ok

import plan_hosts


@pytest.mark.parametrize("params_b,dtype,nodes,layout", [
    # Llama-3.1-405B-sized bf16 (754 GiB) on 2 x 8 H100 80 GB: TP8 x PP2, as vLLM's guide runs it
    (405, "bf16", 2, (8, 2)),
    # the same in fp8 (377 GiB) fits one node: no stages
    (405, "fp8", 1, (8, 1)),
    # 4 nodes are not all needed: the smallest number of stages that fits
    (405, "bf16", 4, (8, 2)),
])
def test_params_b_model_gets_pipeline_stages_across_nodes(params_b, dtype, nodes, layout):
    result = ok({"accelerators": plan_hosts.facts("hgx-h100"), "params_b": params_b, "weight_dtype": dtype, "nodes": nodes})
    args = result["engine_args"]
    assert result["fits"] is True
    assert (args["tensor_parallel_size"], args["pipeline_parallel_size"]) == layout
    assumed = [note for note in result["notes"] if "known by params_b only" in note]
    assert bool(assumed) is (layout[1] > 1)


def test_params_b_model_too_large_for_one_node_is_not_sent_to_a_sixteen_device_host_when_two_nodes_hold_it():
    one = fails({"accelerators": plan_hosts.facts("hgx-h100"), "params_b": 405, "weight_dtype": "bf16"})
    assert "does not fit 1 node(s)" in one["msg"]
    two = ok({"accelerators": plan_hosts.facts("hgx-h100"), "params_b": 405, "weight_dtype": "bf16", "nodes": 2})
    assert two["fits"] is True and two["misfit"] is None and not two["fixes"]
