"""Atlas 300I Duo (310P): the attention masks as wide as the context are counted in the memory plan (issue 36 point 8b).

vllm-project/vllm-ascend vllm_ascend/_310p/attention/attention_mask.py: AttentionMaskBuilder310 takes max_model_len as
its max_seqlen and builds a max_seqlen x max_seqlen float16 causal mask, and another for chunked prefill (SplitFuse);
only where torch-npu has the compressed-mask kernels (is_compressed_mask_supported: _npu_flash_attention_v3 and
_npu_paged_attention_splitfuse_v2) are they a fixed 2048 x 2048.  The plan cannot know the node's torch-npu, so it
counts 2 x 2 bytes per max_model_len squared on the 300I Duo and nothing on the other series.
"""

import pytest
from conftest import model_spec

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity as cap

ASCEND = backends.backend("ascend")
GIB = 2 ** 30
OPTIONS = {"min_model_len": 4096, "concurrent_sequences": 1, "smaller_formats": ASCEND.smaller_formats,
           "multinode_moe": ASCEND.multinode_moe}
# npu-smi's DDR capacity of one 310P3 chip (vllm-ascend issue #14274)
DUO_MIB = 44278


def duo(basis=None, per_node=2):
    return {"devices_per_node": per_node, "device_memory_mib": DUO_MIB, "nodes": 1,
            "memory_basis": basis or ASCEND.basis("300I Duo")}


@pytest.mark.parametrize("series,square", [("300I Duo", 4), ("A2", 0), ("A3", 0), (None, 0)])
def test_the_mask_is_a_300i_duo_attribute(series, square):
    assert ASCEND.basis(series)["square_mask_bytes"] == square
    assert backends.backend("cuda").basis(None)["square_mask_bytes"] == 0


@pytest.mark.parametrize("budget,per_token,square,length", [
    # 4 x 1024^2 + 1000 x 1024 bytes hold exactly 1024 tokens; one byte less holds 1023
    (4 * 1024 ** 2 + 1000 * 1024, 1000, 4, 1024),
    (4 * 1024 ** 2 + 1000 * 1024 - 1, 1000, 4, 1023),
    # no mask: the budget over the bytes per token
    (1000 * 1024, 1000, 0, 1024),
    # masks alone: 4 x L^2 = 4 GiB at L = 32768
    (4 * GIB, 0.0001, 4, 32767),
])
def test_longest_context(budget, per_token, square, length):
    assert cap._longest_context(budget, per_token, square) == length


@pytest.mark.parametrize("name,without,with_masks", [
    # DeepSeek-R1-Distill-Qwen-7B fp16 on one 310P3 chip: the 131,072 the model allows needs 2 x 32 GiB of masks
    ("deepseek-r1-distill-qwen-7b", 131072, 71296),
    ("llama-3.1-8b", 131072, 62304),
    # Qwen2.5-32B fp16 over both chips of the card
    ("qwen2.5-32b-instruct", 32768, 26832),
])
def test_300i_duo_max_model_len_leaves_room_for_the_masks(name, without, with_masks):
    spec = model_spec(name, "fp16")
    plain = cap.plan_accelerator(spec, duo(dict(ASCEND.basis("300I Duo"), square_mask_bytes=0)), {}, OPTIONS)
    result = cap.plan_accelerator(spec, duo(), {}, OPTIONS)
    assert plain["engine_args"]["max_model_len"] == without
    length = result["engine_args"]["max_model_len"]
    assert length == with_masks
    numbers = result["numbers"]
    # KV cache and both masks at the planned length fit what is left of the budget; one block more does not
    per_token = numbers["kv_bytes_per_token_per_device"]
    budget = numbers["kv_budget_gib"] * GIB
    assert per_token * length + 4 * length ** 2 <= budget + 0.01 * GIB
    assert per_token * (length + 2 * cap.BLOCK) + 4 * (length + 2 * cap.BLOCK) ** 2 > budget - 0.01 * GIB
    assert "attention masks" in numbers["memory_basis"] and "attention_mask.py" in numbers["memory_basis"]


def test_a_requested_length_whose_masks_do_not_fit_is_a_misfit():
    spec = model_spec("deepseek-r1-distill-qwen-7b", "fp16")
    result = cap.plan_accelerator(spec, duo(per_node=1), {"max_model_len": 131072}, OPTIONS)
    assert result["fits"] is False
    assert result["fixes"][0].startswith("a shorter context: max_model_len 71296")


def test_other_series_do_not_mention_masks():
    spec = model_spec("deepseek-r1-distill-qwen-7b", "bf16")
    hw = {"devices_per_node": 1, "device_memory_mib": 65536, "nodes": 1, "memory_basis": ASCEND.basis("A2")}
    assert "attention masks" not in cap.plan_accelerator(spec, hw, {}, OPTIONS)["numbers"]["memory_basis"]
