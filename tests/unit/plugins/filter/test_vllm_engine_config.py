"""The vllm_engine_config filter: normalized dict or an AnsibleFilterError naming the fix."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_engine_config import FilterModule


@pytest.fixture
def engine_config():
    return FilterModule().filters()["vllm_engine_config"]


def test_registers_the_filter_name():
    assert list(FilterModule().filters()) == ["vllm_engine_config"]


def test_returns_dash_keys_sorted(engine_config):
    result = engine_config({"max_model_len": 4096, "enforce_eager": True, "gpu-memory-utilization": 0.85,
                            "kv_cache_dtype": None})
    assert result == {"enforce-eager": True, "gpu-memory-utilization": 0.85, "max-model-len": 4096}
    assert list(result) == sorted(result)


def test_empty_input(engine_config):
    assert engine_config({}) == {}
    assert engine_config(None) == {}


@pytest.mark.parametrize("key,needle", [
    ("device", "removed in vLLM 0.10; choose devices with CUDA_VISIBLE_DEVICES / ASCEND_RT_VISIBLE_DEVICES "
               "(vllm_visible_devices)"),
    ("swap_space", "has no effect in the V1 engine"),
    ("engine-use-ascend", "not a vLLM option; the installed vllm-ascend plugin selects the NPU platform itself"),
    ("launch_options", "not a vLLM API"),
    ("LaunchOptions", "not a vLLM API"),
    ("worker-use-ray", "use distributed-executor-backend: ray"),
    ("engine_use_ray", "use distributed-executor-backend: ray"),
    ("vllm-host-ip", "not the API bind address; use host"),
    ("vllm_port", "not the API port; use port"),
])
def test_removed_option_raises_with_its_message(engine_config, key, needle):
    with pytest.raises(AnsibleFilterError) as err:
        engine_config({key: "x", "port": 8000})
    message = str(err.value)
    assert "has 1 problem:" in message
    assert f"- {key}: " in message
    assert needle in message


def test_unknown_name_raises_with_suggestion(engine_config):
    with pytest.raises(AnsibleFilterError, match="did you mean max-num-seqs"):
        engine_config({"max_num_seq": 8})


def test_bad_types_raise(engine_config):
    with pytest.raises(AnsibleFilterError) as err:
        engine_config({"enforce_eager": "yes", "gpu_memory_utilization": 1.5, "max_num_seqs": "8"})
    message = str(err.value)
    assert "has 3 problems:" in message
    assert "enforce-eager is a flag" in message
    assert "gpu-memory-utilization is a fraction" in message
    assert "max-num-seqs must be an integer" in message
