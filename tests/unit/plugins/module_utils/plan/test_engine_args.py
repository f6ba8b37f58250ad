"""Engine-argument validation: names, retired options, value shapes."""

import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import engine_args as ea
from conftest import FIXTURES


def _vllm_options():
    with open(os.path.join(FIXTURES, "vllm", "serve-options-0.32.0.txt")) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def test_every_known_option_exists_in_vllm():
    missing = sorted(set(ea.KNOWN_OPTIONS) - _vllm_options())
    assert missing == []


@pytest.mark.parametrize("name", ["device", "swap-space", "disable-log-requests", "task", "max-seq-len-to-capture"])
def test_retired_options_are_gone_from_vllm(name):
    assert name not in _vllm_options()


def test_facts_section_6_flags_are_known():
    for name in ("host", "port", "api-key", "served-model-name", "trust-remote-code", "dtype", "max-model-len",
                 "gpu-memory-utilization", "max-num-seqs", "max-num-batched-tokens", "quantization",
                 "kv-cache-dtype", "enforce-eager", "tensor-parallel-size", "pipeline-parallel-size",
                 "data-parallel-size", "enable-expert-parallel", "distributed-executor-backend",
                 "reasoning-parser", "enable-prefix-caching"):
        assert name in ea.KNOWN_OPTIONS


@pytest.mark.parametrize("key,expected", [
    ("max_model_len", "max-model-len"),
    ("max-model-len", "max-model-len"),
    ("--max-model-len", "max-model-len"),
    ("LaunchOptions", "launch-options"),
    ("engine_use_ascend", "engine-use-ascend"),
    ("VLLM_HOST_IP", "vllm-host-ip"),
])
def test_canonical_name(key, expected):
    assert ea.canonical_name(key) == expected


def test_normalizes_names_sorts_and_drops_nulls():
    normalized, problems = ea.normalize_engine_args({
        "tensor_parallel_size": 2,
        "max-model-len": "32k",
        "enforce_eager": True,
        "quantization": None,
        "served_model_name": ["smollm2", "default"],
        "compilation_config": {"level": 0},
    })
    assert problems == []
    assert list(normalized) == ["compilation-config", "enforce-eager", "max-model-len",
                                "served-model-name", "tensor-parallel-size"]
    assert normalized["tensor-parallel-size"] == 2


def test_empty_and_none_are_fine():
    assert ea.normalize_engine_args(None) == ({}, [])
    assert ea.normalize_engine_args({}) == ({}, [])


def test_not_a_mapping():
    dummy, problems = ea.normalize_engine_args(["max-model-len", 4096])
    assert "must be a mapping" in problems[0]


@pytest.mark.parametrize("key,needle", [
    ("device", "CUDA_VISIBLE_DEVICES / ASCEND_RT_VISIBLE_DEVICES (vllm_visible_devices)"),
    ("swap_space", "has no effect in the V1 engine"),
    ("engine_use_ascend", "vllm-ascend plugin selects the NPU platform itself"),
    ("launch-options", "not a vLLM API"),
    ("LaunchOptions", "not a vLLM API"),
    ("worker_use_ray", "distributed-executor-backend: ray"),
    ("engine-use-ray", "distributed-executor-backend: ray"),
    ("vllm_host_ip", "use host"),
    ("VLLM_PORT", "use port"),
    ("disable-log-requests", "enable-log-requests"),
    ("task", "runner"),
    ("max_seq_len_to_capture", "max-cudagraph-capture-size"),
    ("tp", "tensor-parallel-size"),
])
def test_retired_option_names_its_replacement(key, needle):
    normalized, problems = ea.normalize_engine_args({key: 1, "max-model-len": 4096})
    assert len(problems) == 1
    assert problems[0].startswith(key + ":")
    assert needle in problems[0]
    assert key not in normalized and ea.canonical_name(key) not in normalized


def test_unknown_option_suggests_close_names():
    dummy, problems = ea.normalize_engine_args({"gpu_memory_utilisation": 0.9})
    assert problems == ["gpu-memory-utilisation is not a known vLLM serve option; did you mean gpu-memory-utilization?"]


def test_unknown_option_without_close_match():
    dummy, problems = ea.normalize_engine_args({"frobnicate": 1})
    assert "frobnicate is not a known vLLM serve option" in problems[0]
    assert "vllm serve --help" in problems[0]


def test_duplicate_spellings_fail():
    dummy, problems = ea.normalize_engine_args({"max_model_len": 4096, "max-model-len": 2048})
    assert problems == ["max-model-len is given twice (as 'max_model_len' and 'max-model-len'); keep one"]


def test_all_problems_reported_at_once():
    dummy, problems = ea.normalize_engine_args({"device": "npu", "enforce_eager": "yes", "port": 0})
    assert len(problems) == 3


@pytest.mark.parametrize("key,value", [
    ("enforce-eager", True), ("enforce-eager", False),
    ("max-model-len", 4096), ("max-model-len", "32k"), ("max-model-len", "1K"), ("max-model-len", "auto"),
    ("max-model-len", -1),
    ("max-num-batched-tokens", "8k"),
    ("gpu-memory-utilization", 1), ("gpu-memory-utilization", 0.5),
    ("port", 8000), ("port", 65535),
    ("dtype", "bfloat16"),
    ("distributed-executor-backend", "ray"),
    ("api-key", "secret"), ("api-key", ["a", "b"]),
    ("cpu-offload-gb", 0), ("cpu-offload-gb", 2.5),
    ("speculative-config", {"method": "ngram", "num_speculative_tokens": 3}),
    ("speculative-config", '{"method": "ngram"}'),
    ("data-parallel-start-rank", 0),
])
def test_accepted_values(key, value):
    assert ea.normalize_engine_args({key: value})[1] == []


@pytest.mark.parametrize("key,value,needle", [
    ("enforce-eager", "true", "is a flag and takes true or false, not 'true' (str)"),
    ("enforce-eager", 1, "is a flag"),
    ("enable-prefix-caching", "yes", "is a flag"),
    ("trust-remote-code", None, None),
    ("max-model-len", "4096 tokens", "must be an integer or a count"),
    ("max-model-len", 4096.0, "must be an integer or a count"),
    ("max-model-len", True, "must be an integer or a count"),
    ("max-model-len", -2, "at least -1"),
    ("max-num-seqs", "256", "must be an integer"),
    ("max-num-seqs", 0, "at least 1"),
    ("tensor-parallel-size", 0, "at least 1"),
    ("block-size", 16.0, "must be an integer"),
    ("gpu-memory-utilization", 0, "0 < value <= 1"),
    ("gpu-memory-utilization", 1.2, "0 < value <= 1"),
    ("gpu-memory-utilization", 90, "0 < value <= 1"),
    ("gpu-memory-utilization", "0.9", "0 < value <= 1"),
    ("gpu-memory-utilization", True, "0 < value <= 1"),
    ("port", 0, "TCP port"),
    ("port", 70000, "TCP port"),
    ("port", "8000", "TCP port"),
    ("dtype", "bf16", "must be one of auto, half, float16, bfloat16, float, float32"),
    ("distributed-executor-backend", "hccl", "must be one of"),
    ("host", "", "non-empty string"),
    ("host", 127, "non-empty string"),
    ("served-model-name", [], "string or a list"),
    ("served-model-name", {"a": 1}, "string or a list"),
    ("speculative-config", ["ngram"], "mapping"),
    ("cpu-offload-gb", -1, "number >= 0"),
])
def test_rejected_values(key, value, needle):
    normalized, problems = ea.normalize_engine_args({key: value})
    if needle is None:  # null: dropped, not an error
        assert problems == [] and normalized == {}
        return
    assert len(problems) == 1
    assert needle in problems[0]
    assert problems[0].startswith(key)


def test_tool_choice_needs_a_parser():
    dummy, problems = ea.normalize_engine_args({"enable-auto-tool-choice": True})
    assert problems == ["enable-auto-tool-choice needs tool-call-parser: vLLM refuses auto tool choice without a parser"]
    assert ea.normalize_engine_args({"enable-auto-tool-choice": True, "tool-call-parser": "hermes"})[1] == []
    assert ea.normalize_engine_args({"enable-auto-tool-choice": False})[1] == []


def test_log_outputs_needs_log_requests():
    dummy, problems = ea.normalize_engine_args({"enable-log-outputs": True})
    assert "needs enable-log-requests" in problems[0]


def test_every_table_entry_has_a_checkable_kind():
    for name in ea.KNOWN_OPTIONS:
        ea.check_value(name, "x")  # raises ValueError on an unknown kind
