# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The ``cuda`` backend: vLLM on NVIDIA GPUs, the nvidia role's driver."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import version_tuple
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.device import Device
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity, compat_matrix
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError

# The image label naming the oldest NVIDIA driver the image's CUDA runs on (plan/container.py).
LABEL_CUDA_DRIVER_MIN = "io.kunpeng.vllm.cuda-driver-min"

# Extended resource and node labels of NVIDIA's k8s-device-plugin (https://github.com/NVIDIA/k8s-device-plugin,
# README "Running GPU Jobs"), also what the GPU Operator deploys; nvidia.com/gpu.present=true is set by NVIDIA's GPU
# feature discovery (part of k8s-device-plugin and the GPU Operator).
K8S_RESOURCE = "nvidia.com/gpu"
K8S_NODE_LABELS = {"nvidia.com/gpu.present": "true"}


class Cuda(Device):
    name = "cuda"
    rank = 1
    record: Dict[str, Any] = {
        "label": "NVIDIA GPU",
        "hardware": {"pci_count": "nvidia_count", "section": "nvidia", "devices": "gpus", "device": "NVIDIA GPU",
                     "tool": "nvidia-smi",
                     # NVIDIA's vendor id; display (0x0300) and 3D (0x0302) controllers are GPUs, the
                     # audio and USB functions of consumer cards are not.
                     "pci": {"vendor": "0x10de", "classes": ("0x0300", "0x0302"), "device_ids": None}},
        "visible": {"section": "nvidia", "devices": "gpus", "id_keys": ("index", "uuid"), "variable": "CUDA_VISIBLE_DEVICES"},
        "driver": {"role": "kunpeng.vllm.nvidia", "fact": "kunpeng_nvidia", "reboot_variable": "nvidia_reboot",
                   "reboot_what": "the new NVIDIA driver", "env_file_key": "env_file", "group_key": None},
        "engine_dists": {"wheel": ("vllm",), "source": ("vllm",)},
        "engine_dist": {"wheel": "vllm", "source": "vllm"},
        "target_device": "cuda",
        # The control nodes by path, the per-GPU and UVM nodes by their driver's device class.
        "device_nodes": ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                         "char-nvidia-frontend", "char-nvidia-uvm", "char-nvidia-caps"],
        "service_environment": {},
        # DCGM exporter, default port 9400 (NVIDIA's dcgm-exporter README).
        "exporter": {"name": "dcgm-exporter", "variable": "monitoring_dcgm_exporter_package", "job": "dcgm", "port": 9400},
        "smaller_formats": ["fp8", "int4"],
        # vLLM with its CUDA torch and the nvidia-* wheels: about 9-10 GB installed on x86_64.
        "venv_gib": 12,
        # vLLM pins no Ray release; this is the one on PyPI the units are rendered for.
        "ray_version": "2.60.0",
        # vLLM's multi-node guide runs a replica larger than a node as tensor x pipeline parallel over Ray.
        "multinode_moe": None,
        # podman: the CDI spec nvidia-container-toolkit generates (nvidia-ctk cdi generate, or its
        # nvidia-cdi-refresh service from 1.18.0) names one device per GPU, nvidia.com/gpu=<index>, and
        # brings the driver's device nodes and libraries itself (docs.nvidia.com/datacenter/cloud-native/
        # container-toolkit/latest/cdi-support.html).  docker: --gpus "device=<i,j>" through the NVIDIA
        # runtime (docs.docker.com/engine/containers/resource_constraints/#gpu).  No mounts of our own.
        "container": {
            "per_device": {"podman": {"flag": "--device", "value": "nvidia.com/gpu={index}"},
                           "docker": {"flag": "--gpus", "joined": "\"device={ids}\""}},
            "devices": [],
            "mounts": [],
            # The toolkit's device nodes are world-accessible (0666): no group to join.
            "group_add": None,
        },
        "version_variable": "vllm_version",
        # An optional torch step first (see compat_matrix.CUDA_ROWS), then vLLM: the engine is the last step.
        "source_engine_step": -1,
        "install_hooks_after": [],
        "build_toolchain": None,
        "rdma": True,
        "cache_env": {},
        "runtime_env": {},
    }

    # What torch sees is nvidia-smi's capacity less the driver's reservation, which the margin counts
    # (capacity.CUDA_RESERVED_FRACTION).  Measured: on an H200 with vLLM 0.26 the plan's KV cache lands within
    # 3 % of the figure vLLM logs and never above it (tests/unit/fixtures/nvidia/h200/kv), so no extra margin.
    memory_basis: Dict[Optional[str], Dict[str, Any]] = {
        None: dict(capacity.PROBED_BASIS, source="nvidia-smi's capacity; measured on an H200 against vLLM's own KV figure"),
    }

    def series(self, facts: Dict[str, Any]) -> Optional[str]:
        return None

    def select(self, params: Dict[str, Any], facts: Dict[str, Any], caps: List[str],
               notes: List[str]) -> Tuple[Dict[str, Any], Dict[str, Any], Optional[Dict[str, Any]]]:
        driver = (facts.get("nvidia") or {}).get("driver_version")
        row = compat_matrix.select_cuda(params["vllm_version"], driver, params["python_version"], caps, params["distribution"])
        least = compat_matrix.min_compute_capability(row)
        if not facts:
            notes.append(f"No probe facts: driver and GPU not checked; vLLM {row['vllm']} (CUDA {row['cuda']}) needs driver "
                         f"{row['driver_min']} or later and GPU compute capability {least} or later.")
        elif not driver:
            notes.append(f"No NVIDIA driver found; vLLM {row['vllm']} (CUDA {row['cuda']}) needs driver {row['driver_min']} or later "
                         f"and GPU compute capability {least} or later (not checked before the driver runs).")
        requirements = {"python": row["python_range"], "nvidia_driver_min": row["driver_min"], "cuda": row["cuda"],
                        "compute_capability_min": least}
        return row, requirements, None

    def engine_version(self, row: Dict[str, Any]) -> str:
        return row["vllm"]

    def install_steps(self, row: Dict[str, Any], architecture: Optional[str] = None,
                      series: Optional[str] = None) -> List[Dict[str, Any]]:
        # A CUDA torch that PyPI lacks for this architecture comes from PyTorch's index first (see CUDA_ROWS).
        stack = (row.get("torch_stack_arch") or {}).get(architecture or "")
        torch = [compat_matrix.step("torch", list(stack), row, architecture)] if stack else []
        return torch + [compat_matrix.step("vllm", [f"vllm=={row['vllm']}"], row, architecture, env={"VLLM_TARGET_DEVICE": "cuda"})]

    def packages(self, row: Dict[str, Any], series: Optional[str] = None) -> List[str]:
        return [f"vllm=={row['vllm']}"]

    def wheelhouse_row(self, vllm_version: str, python_version: str) -> Dict[str, Any]:
        return compat_matrix.select_cuda(vllm_version=vllm_version, python_version=python_version)

    def fp8_mode(self, weight_dtype: Optional[str], caps: List[str]) -> str:
        """native / weight_only / none / unknown, from the lowest compute capability of the node."""
        if weight_dtype != "fp8":
            return "none"
        if not caps:
            return "unknown"
        lowest = min(compat_matrix.version_key(cap) for cap in caps)
        if lowest >= compat_matrix.version_key("8.9"):
            return "native"
        if lowest >= compat_matrix.version_key("8.0"):
            return "weight_only"
        lowest_cap = min(caps, key=compat_matrix.version_key)
        raise CompatError(f"FP8 weights need compute capability 8.0 or later (8.9 for native FP8); this GPU has {lowest_cap}. "
                          "Use BF16 or 4-bit (AWQ/GPTQ) weights")

    def engine_args(self, model: Optional[Dict[str, Any]], result: Optional[Dict[str, Any]],
                    engine_args: Dict[str, Any], hw: Dict[str, Any], notes: List[str]) -> Dict[str, Any]:
        if model and model.get("online_quantization"):
            engine_args["quantization"] = "fp8"
        return engine_args

    def check_request(self, arch: str, request: Dict[str, Any], has_torch_source: bool) -> None:
        return None

    def container_problems(self, labels: Dict[str, str], host: Dict[str, Any]) -> List[str]:
        need = labels.get(LABEL_CUDA_DRIVER_MIN)
        if not need:
            return []
        have = (((host.get("accelerators") or {}).get(self.hardware["section"])) or {}).get("driver_version") or ""
        if not have:
            return [f"the image needs NVIDIA driver {need} or later ({LABEL_CUDA_DRIVER_MIN}); the host reports none"]
        if version_tuple(have) < version_tuple(need):
            return [f"the image needs NVIDIA driver {need} or later ({LABEL_CUDA_DRIVER_MIN}); the host has {have}"]
        return []

    def network_env(self, interface: str, address: str) -> Dict[str, str]:
        return {"NCCL_SOCKET_IFNAME": interface}

    def ray_resources(self, count: int) -> List[str]:
        return [f"--num-gpus={count}"]

    def ray_env(self) -> Dict[str, str]:
        return {}

    def k8s_resource(self, plan: Dict[str, Any], overrides: Dict[str, str]) -> Tuple[Optional[str], Dict[str, str]]:
        return dict({self.name: K8S_RESOURCE}, **(overrides or {}))[self.name], dict(K8S_NODE_LABELS)
