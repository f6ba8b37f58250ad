"""The CPU plan's served dtype, per CPU ISA and model (plugins/module_utils/plan/cpu_runtime.py serve_dtype).

Each row plans a replayed CPU-only host (its real /proc/cpuinfo through kunpeng.vllm.accelerator_facts) with a
real model config through kunpeng.vllm.vllm_plan, as the vllm role does.  The small model (SmolLM2-135M, the
demo's) is float32 on every CPU: its greedy answer in bfloat16 depends on the CPU's kernels (AMX vs AVX512-BF16),
so the readiness check's "Paris" must not.  Larger models get bfloat16 where the CPU computes it natively and
float32 where it does not.
"""

import json
import os

import plan_hosts
import pytest
from conftest import FIXTURES
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cpu_runtime
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan

GIB = 1024 ** 3


def model_config(name):
    with open(os.path.join(FIXTURES, "models", name + ".json")) as handle:
        return json.load(handle)


def plan(host, model, requested=None, memory_mib=64 * 1024):
    args = {"accelerators": plan_hosts.facts(host), "backend": "auto", "python_version": "3.11",
            "model_config": model_config(model), "kv_cache_space_gib": 1,
            "requested_engine_args": dict({"max_model_len": 2048}, **(requested or {}))}
    args["host_memory_mib"] = memory_mib
    failed, result = run_main(vllm_plan.main, args)
    assert not failed, result.get("msg")
    assert result["backend"] == "cpu"
    return result


# host, native bf16 per the probe
HOSTS = [
    ("cpu-x86-amx", True),
    ("cpu-x86-avx512bf16", True),
    ("cpu-x86-epyc-avx2", False),
    ("cpu-x86", False),
    ("cpu-kunpeng920", False),
    ("cpu-neoverse-v1", True),
]


@pytest.mark.parametrize("host, bf16", HOSTS)
def test_the_probe_reports_native_bf16(host, bf16):
    assert plan_hosts.facts(host)["cpu"]["features"]["bf16"] is bf16


@pytest.mark.parametrize("host, bf16", HOSTS)
def test_the_small_demo_model_is_float32_on_every_cpu(host, bf16):
    result = plan(host, "smollm2-135m")
    assert result["engine_args"]["dtype"] == "float32"
    assert any("float32" in note and "0.13B" in note for note in result["notes"])


@pytest.mark.parametrize("host, bf16", HOSTS)
def test_a_larger_model_follows_the_cpus_bf16(host, bf16):
    result = plan(host, "llama-3.1-8b", memory_mib=256 * 1024)
    assert result["engine_args"]["dtype"] == ("bfloat16" if bf16 else "float32")
    # float32 holds every weight in 4 bytes: twice the checkpoint's bf16
    numbers = result["numbers"]
    assert numbers["weight_dtype"] == ("bf16" if bf16 else "fp32")
    assert numbers["weights_gib"] == pytest.approx(14.96 if bf16 else 2 * 14.96, rel=0.02)


@pytest.mark.parametrize("requested", ["bfloat16", "float32", "float16", "auto"])
def test_a_dtype_the_user_sets_is_kept(requested):
    result = plan("cpu-x86-amx", "smollm2-135m", {"dtype": requested})
    assert result["engine_args"]["dtype"] == requested
    assert not any(note.startswith("Served in") for note in result["notes"])


def test_the_kv_cache_follows_the_served_dtype():
    """float32 KV elements are 4 bytes: half the tokens of bfloat16 in the same space."""
    small = plan("cpu-x86-amx", "smollm2-135m")["numbers"]["kv_bytes_per_token"]
    forced = plan("cpu-x86-amx", "smollm2-135m", {"dtype": "bfloat16"})["numbers"]["kv_bytes_per_token"]
    assert small == 2 * forced


# serve_dtype alone: cpu facts (features only), model params, requested -> dtype
@pytest.mark.parametrize("features, params, requested, expected", [
    ({"bf16": True}, 135e6, {}, "float32"),
    ({"bf16": False}, 135e6, {}, "float32"),
    ({"bf16": True}, 0.99e9, {}, "float32"),
    ({"bf16": True}, 1e9, {}, "bfloat16"),
    ({"bf16": False}, 8e9, {}, "float32"),
    ({"bf16": True}, 8e9, {"dtype": "float"}, "float32"),
    ({"bf16": False}, 8e9, {"dtype": "half"}, "float16"),
    ({"bf16": False}, 8e9, {"dtype": "auto"}, None),
    (None, 8e9, {}, None),
    (None, None, {}, None),
    ({"bf16": True}, None, {}, "bfloat16"),
    ({"bf16": False}, None, {}, "float32"),
])
def test_serve_dtype_table(features, params, requested, expected):
    cpu_facts = {"features": features} if features is not None else None
    model = {"params": {"total": params}} if params else None
    dtype, reason = cpu_runtime.serve_dtype(cpu_facts, model, requested)
    assert dtype == expected and reason
