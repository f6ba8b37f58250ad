"""plan/service.py: the service entry of the plan, per backend, from the registry record and real probe facts."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "modules"))

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

import plan_hosts  # noqa: E402
import vllm_plans  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cpu_runtime  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.service import ServiceError, service_spec  # noqa: E402

CUDA_NODES = ["/dev/nvidiactl rw", "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw", "/dev/nvidia-modeset rw",
              "char-nvidia-frontend rw", "char-nvidia-uvm rw", "char-nvidia-caps rw"]
ASCEND_FALLBACK = ["/dev/davinci_manager rw", "/dev/devmm_svm rw", "/dev/hisi_hdc rw", "char-davinci rw"]


def runtime(host, bind, kv):
    """kunpeng.vllm.cpu_runtime's result on the replayed host."""
    return cpu_runtime.cpu_environment(plan_hosts.facts(host)["cpu"], {}, bind, kv)


# backend, replayed host, visible devices, (bind, kv) of cpu_runtime or None, driver facts -> expected entry
CASES = [
    ("cpu", "cpu-x86", "", ("0-3", 2), {},
     {"device_allow": [], "supplementary_groups": [], "environment_files": [],
      "environment": {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": "0-3"}}),
    # No device selection on the CPU: vllm_visible_devices is ignored there (the plan notes it).
    ("cpu", "cpu-x86", "0,1", ("0-1|2-3", 4), {"kunpeng_nvidia": {"env_file": "/etc/vllm/nvidia.env"}},
     {"device_allow": [], "supplementary_groups": [], "environment_files": [],
      "environment": {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "4", "VLLM_CPU_OMP_THREADS_BIND": "0-1|2-3"}}),
    ("cuda", "hgx-h100", "", None, {},
     {"device_allow": CUDA_NODES, "supplementary_groups": [], "environment": {}, "environment_files": []}),
    # Another driver's fact is not this backend's.
    ("cuda", "hgx-h100", "0,1", None, {"kunpeng_ascend": {"env_file": "/etc/vllm/ascend.env", "device_group": "HwHiAiUser"}},
     {"device_allow": CUDA_NODES, "supplementary_groups": [], "environment": {"CUDA_VISIBLE_DEVICES": "0,1"},
      "environment_files": []}),
    # Without the ascend role's report: the shared nodes and every davinci node by its driver's class.
    ("ascend", "atlas-800i-a2", "0", None, {},
     {"device_allow": ASCEND_FALLBACK, "supplementary_groups": [], "environment": {"ASCEND_RT_VISIBLE_DEVICES": "0"},
      "environment_files": []}),
]


@pytest.mark.parametrize("backend, host, visible, cpu, driver_facts, expected", CASES)
def test_service_entry(backend, host, visible, cpu, driver_facts, expected):
    settings = runtime(host, *cpu) if cpu else None
    assert service_spec(backends.get(backend), plan_hosts.facts(host), visible, settings, driver_facts) == expected


@pytest.mark.parametrize("name", backends.NAMES)
def test_every_record_gives_an_entry(name):
    # the backend's replayed host (tests/unit/vllm_plans.py), so a new backend needs no entry here
    host = vllm_plans.HOSTS[name][0]
    entry = service_spec(backends.get(name), plan_hosts.facts(host), "", runtime("cpu-x86", "auto", 0), {})
    assert set(entry) == {"device_allow", "supplementary_groups", "environment", "environment_files"}
    # PrivateDevices only for a backend without device nodes.
    assert bool(entry["device_allow"]) == bool(backends.field(name, "device_nodes"))


def test_the_cpu_engine_needs_its_runtime_settings():
    with pytest.raises(ServiceError, match="cpu_runtime"):
        service_spec(backends.get("cpu"), plan_hosts.facts("cpu-x86"), "", None, {})


@pytest.mark.parametrize("visible", ["0'; id; '", "0\nLD_PRELOAD=/tmp/x.so"])
def test_a_value_that_would_break_out_is_refused(visible):
    with pytest.raises(ServiceError, match="CUDA_VISIBLE_DEVICES"):
        service_spec(backends.get("cuda"), plan_hosts.facts("hgx-h100"), visible, None, {})


DP_ENV = {"HCCL_BUFFSIZE": "200", "OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "1",
          "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}


# vllm-ascend docs/source/tutorials/models/DeepSeek-R1.md, "Single-Node Online Deployment" on one Atlas 800 A3:
# dp4 x tp4 with --enable-expert-parallel, and the same exports as the multi-node data-parallel deployment.
@pytest.mark.parametrize("backend, engine_args, expected", [
    ("ascend", {"data_parallel_size": 4, "tensor_parallel_size": 4, "enable_expert_parallel": True}, DP_ENV),
    ("ascend", {"data_parallel_size": 1, "tensor_parallel_size": 8, "enable_expert_parallel": True}, {}),
    ("ascend", {"tensor_parallel_size": 16}, {}),
    ("ascend", {"data_parallel_size": 2, "tensor_parallel_size": 4, "enable_expert_parallel": False}, {}),
    ("cuda", {"data_parallel_size": 4, "tensor_parallel_size": 2, "enable_expert_parallel": True}, {}),
    ("cpu", {}, {}),
])
def test_a_single_host_data_parallel_layout_gets_the_tutorials_environment(backend, engine_args, expected):
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.service import layout_environment
    assert layout_environment(backends.get(backend), engine_args) == expected


def test_one_a3_host_serving_deepseek_r1_w8a8_exports_it():
    """Through the real planner on the replayed Atlas 800I A3 host: dp4 x tp4 + EP, and the service carries the env."""
    import json
    with open(os.path.join(plan_hosts.FIXTURES, "models", "deepseek-v3.json")) as handle:
        config = json.load(handle)
    plan = plan_hosts.role_plan("atlas-800i-a3-cann9.1", plan_args={"model_config": config, "weight_dtype": "w8a8"},
                                install_method="container")
    args = plan["engine_args"]
    assert (args["data_parallel_size"], args["tensor_parallel_size"], args["enable_expert_parallel"]) == (4, 4, True)
    assert DP_ENV.items() <= plan["service"]["environment"].items()
