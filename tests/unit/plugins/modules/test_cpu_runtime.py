"""The CPU backend's thread binding and KV-cache size, derived from the real probe on committed host fixtures."""

import os

import fakes
import pytest
from conftest import FIXTURES

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cpu_runtime

HOSTS = {
    # 2 logical CPUs, one NUMA node (0-1), 15.6 GiB: the test machine's shape.
    "plain-x86": (os.path.join(FIXTURES, "sysfs", "plain-x86"), "x86-avx2", "x86_64"),
    # Kunpeng 920, four NUMA nodes of 48 CPUs, 1510 GiB.
    "kunpeng-a2": (os.path.join(FIXTURES, "sysfs", "atlas-800i-a2"), "kunpeng920", "aarch64"),
    # No NUMA information in sysfs: every CPU of cpuinfo is one node.
    "no-sysfs": (None, "neoverse-v1", "aarch64"),
}
# Captured hosts (fixtures/nvidia): h200 has 16 CPUs on one node and 126 GiB;
# hgx-h100 two nodes (0-1, 2-3) and 2016 GiB.
CAPTURED = ("h200", "hgx-h100")
_PROBED = {}


def probed_cpu(tmp_path_factory, host):
    if host not in _PROBED:
        tmp = str(tmp_path_factory.mktemp(host))
        if host in CAPTURED:
            args = fakes.nvidia_host(tmp, os.path.join(FIXTURES, "nvidia", host))
        else:
            sysfs, cpu, arch = HOSTS[host]
            args = fakes.host_args(tmp, sysfs, cpu, arch)
        result, _warnings = fakes.run_module(args)
        _PROBED[host] = fakes.facts_of(result)["cpu"]
    return _PROBED[host]


def test_probe_reports_the_cpus_of_each_numa_node(tmp_path_factory):
    assert probed_cpu(tmp_path_factory, "kunpeng-a2")["numa_cpus"] == ["0-47", "48-95", "96-143", "144-191"]
    assert probed_cpu(tmp_path_factory, "plain-x86")["numa_cpus"] == ["0-1"]
    assert probed_cpu(tmp_path_factory, "no-sysfs")["numa_cpus"] == []


@pytest.mark.parametrize("host, engine_args, bind, expected", [
    # One engine on 2 CPUs: CPU 0 computes, CPU 1 stays with the API server and the OS.
    ("plain-x86", {}, "auto", "0"),
    # The gateway scenario's two engines on one 2-CPU host, pinned by the user: kept.
    ("plain-x86", {}, "0", "0"),
    ("plain-x86", {}, "1", "1"),
    ("plain-x86", {}, "nobind", "nobind"),
    # One rank on one NUMA node (memory locality), its last CPU left free.
    ("kunpeng-a2", {}, "auto", "0-46"),
    ("kunpeng-a2", {"tensor_parallel_size": 2}, "auto", "0-46|48-94"),
    ("kunpeng-a2", {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}, "auto",
     "0-46|48-94|96-142|144-190"),
    # Two ranks per node split the node.
    ("kunpeng-a2", {"tensor_parallel_size": 8}, "auto",
     "0-22|24-46|48-70|72-94|96-118|120-142|144-166|168-190"),
    # Six ranks do not divide over four nodes: vLLM's own binding.
    ("kunpeng-a2", {"tensor_parallel_size": 6}, "auto", "auto"),
    ("kunpeng-a2", {}, "0-31|32-63", "0-31|32-63"),
    ("no-sysfs", {}, "auto", "0"),
    ("h200", {}, "auto", "0-14"),
    ("hgx-h100", {}, "auto", "0"),
    ("hgx-h100", {"tensor_parallel_size": 2}, "auto", "0|2"),
])
def test_omp_threads_bind(tmp_path_factory, host, engine_args, bind, expected):
    env = cpu_runtime.cpu_environment(probed_cpu(tmp_path_factory, host), engine_args, bind=bind)
    assert env["omp_threads_bind"] == expected, env["omp_threads_bind_reason"]


@pytest.mark.parametrize("host, engine_args, requested, expected", [
    # A quarter of 15.6 GiB.
    ("plain-x86", {}, 0, 3),
    ("plain-x86", {}, 1, 1),
    ("plain-x86", {"tensor_parallel_size": 2}, 0, 1),
    # At least 1 GiB (the Kunpeng fixture has 1.5 GiB).
    ("kunpeng-a2", {}, 0, 1),
    ("kunpeng-a2", {}, 16, 16),
    ("h200", {}, 0, 31),
    ("h200", {"tensor_parallel_size": 2}, 0, 15),
    # A quarter of 2016 GiB over one rank fits half a node (504 GiB); over two ranks each takes 252.
    ("hgx-h100", {}, 0, 503),
    ("hgx-h100", {"tensor_parallel_size": 2}, 0, 251),
])
def test_kvcache_space(tmp_path_factory, host, engine_args, requested, expected):
    env = cpu_runtime.cpu_environment(probed_cpu(tmp_path_factory, host), engine_args, kv_gib=requested)
    assert env["kvcache_space_gib"] == expected, env["kvcache_space_reason"]


def test_no_memory_size_keeps_vllms_default(tmp_path_factory):
    cpu = dict(probed_cpu(tmp_path_factory, "plain-x86"), memory_mib=None)
    assert cpu_runtime.kv_space_gib(cpu, 1) == (cpu_runtime.VLLM_DEFAULT_KV_GIB, "the probe read no memory size: "
                                                "vLLM's default")


@pytest.mark.parametrize("text, cpus, back", [
    ("0-3,8", [0, 1, 2, 3, 8], "0-3,8"),
    ("0-23,48-71\n", list(range(24)) + list(range(48, 72)), "0-23,48-71"),
    ("", [], ""),
    ("garbage", [], ""),
])
def test_cpulist_round_trip(text, cpus, back):
    assert cpu_runtime.parse_cpulist(text) == cpus
    assert cpu_runtime.format_cpulist(cpus) == back
