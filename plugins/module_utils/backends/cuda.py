# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The ``cuda`` backend: vLLM on NVIDIA GPUs, the nvidia role's driver."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import os
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import version_tuple
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.device import Device
from ansible_collections.kunpeng.vllm.plugins.module_utils.fact_fields import DICT, PCI_FUNCTION, _bool, _dicts, _f, _int, _nstr, _str, _strs
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity, compat_matrix
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import nvidia_smi
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.kv_files import read_text

# The image label naming the oldest NVIDIA driver the image's CUDA runs on (plan/container.py).
LABEL_CUDA_DRIVER_MIN = "io.kunpeng.vllm.cuda-driver-min"

# Extended resource and node labels of NVIDIA's k8s-device-plugin (https://github.com/NVIDIA/k8s-device-plugin,
# README "Running GPU Jobs"), also what the GPU Operator deploys; nvidia.com/gpu.present=true is set by NVIDIA's GPU
# feature discovery (part of k8s-device-plugin and the GPU Operator).
K8S_RESOURCE = "nvidia.com/gpu"
K8S_NODE_LABELS = {"nvidia.com/gpu.present": "true"}


def probe_nvidia(runner: Any, params: Dict[str, Any], pci: Dict[str, Any]) -> Dict[str, Any]:
    findings: List[str] = []
    proc: Dict[str, Any] = {"loaded": False, "driver_version": None, "kernel_module": None, "banner": None}
    proc_path = os.path.join(params["procfs_root"], "driver", "nvidia", "version")
    try:
        proc = nvidia_smi.parse_proc_version(read_text(proc_path))
    except ValueError as exc:
        proc["loaded"] = True
        findings.append(f"{proc_path} could not be parsed: {exc}")
        runner.warn(findings[-1])
    tool = runner.find_tool("nvidia-smi")
    gpus: List[Dict[str, Any]] = []
    xml = None
    if tool:
        gpus = runner.query(tool, nvidia_smi.QUERY_ARGS, nvidia_smi.parse_query_gpu, findings) or []
        xml = runner.query(tool, ["-q", "-x"], nvidia_smi.parse_query_xml, findings)
    xml_gpus = dict((gpu["bus_id"], gpu) for gpu in (xml or {}).get("gpus", []))
    for gpu in gpus:
        extra = xml_gpus.get(gpu["bus_id"], {})
        gpu["device_memory_mib"] = gpu["memory_total_mib"]
        gpu["architecture"] = extra.get("architecture")
        gpu["addressing_mode"] = extra.get("addressing_mode")
        gpu["fabric"] = extra.get("fabric", {})
        gpu["nvlink"] = extra.get("nvlink", {})
    driver = (gpus[0]["driver_version"] if gpus else None) or (xml or {}).get("driver_version") or proc["driver_version"]
    return {
        "tool": tool,
        "driver_version": driver,
        "cuda_version": (xml or {}).get("cuda_version"),
        "kernel_module": proc["kernel_module"],
        "kernel_module_loaded": proc["loaded"],
        "kernel_module_banner": proc["banner"],
        "gpus": gpus,
        "nvswitch_count": pci["nvswitch_count"],
        "fabric_manager_required": pci["nvswitch_count"] > 0,
        "findings": findings,
    }


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

    # kunpeng_accelerators: the keys of the probe section (hardware.section), and what the PCI section adds to
    # the functions and count pci.py lists for every device backend.
    probe_keys = {
        "tool": _nstr(),
        "driver_version": _nstr(),
        "cuda_version": _nstr(),
        "kernel_module": _nstr(),
        "kernel_module_loaded": _bool(),
        "kernel_module_banner": _nstr(),
        "gpus": _dicts({
            "index": _int(),
            "uuid": _nstr(),
            "name": _nstr(),
            "bus_id": _nstr(),
            "memory_total_mib": _int(nullable=True),
            "memory_used_mib": _int(nullable=True),
            "device_memory_mib": _int(nullable=True),
            "driver_version": _nstr(),
            "compute_cap": _nstr(),
            "persistence_mode": _nstr(),
            "mig_mode": _nstr(),
            "architecture": _nstr(),
            "addressing_mode": _nstr(),
            "fabric": _f(DICT, keys={
                "state": _str(optional=True),
                "status": _str(optional=True),
                "clique_id": _str(optional=True),
                "cluster_uuid": _str(optional=True),
            }),
            "nvlink": _f(DICT, open_keys=True),
        }),
        "nvswitch_count": _int(),
        "fabric_manager_required": _bool(),
        "findings": _strs(),
    }
    pci_keys = {"nvswitch": _dicts(PCI_FUNCTION), "nvswitch_count": _int()}
    # The driver role's report fact (driver.fact): its keys and where it is set.
    driver_keys = {
        "driver_version": _nstr(),
        "kernel_module": _nstr(),
        "adopted": _bool(),
        "env_file": _str(),
        "cuda_home": _str(),
        "action": _str(),
        "source": _str(),
        "gpu_count": _int(),
        "reboot_pending": _bool(),
        "services_managed": _bool(),
    }
    driver_fact_from = "plugins/modules/nvidia_plan.py"
    # The driver role's value rules (plugins/module_utils/plan/input_check.py names them), one per variable of its
    # meta/argument_specs.yml: None where argument validation is enough.
    driver_rules = {
        "nvidia_driver_min_version": ("version",),
        "nvidia_driver_replace": None,
        "nvidia_driver_source": None,
        "nvidia_driver_branch": ("regex", r"^[0-9]{3}(-open|-server|-server-open)?$", "a driver branch such as 580"),
        "nvidia_kernel_module": None,
        "nvidia_cuda_repo_base_url": ("url",),
        "nvidia_cuda_repo_trusted": None,
        "nvidia_runfile_src": ("download_src",),
        "nvidia_runfile_sha256": ("sha256",),
        "nvidia_cuda_toolkit_version": ("version",),
        "nvidia_persistenced": None,
        "nvidia_reboot": None,
        "nvidia_reboot_timeout": ("int_range", 60, 86400),
        "nvidia_manage_env_file": None,
        "nvidia_env_file": ("path",),
        "nvidia_cuda_home": ("path",),
        "nvidia_probe_options": ("dict_of_text",),
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

    def probe(self, runner: Any, params: Dict[str, Any], arch: Optional[str], pci: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        return probe_nvidia(runner, params, pci)
