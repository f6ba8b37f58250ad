# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""What the vLLM service of a backend needs from the host: devices, groups, environment.

``service_spec`` is the plan's ``service`` entry (kunpeng_vllm_plan.service):
the unit template and the launcher only render it, they hold no per-backend
knowledge.  The per-backend facts (device nodes, visible-devices variable,
driver role fact) come from the backend's record.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import ascend_plan

# Values land in a systemd EnvironmentFile and a POSIX sh script, single-quoted.
_SAFE_VALUE = re.compile(r"^[^'\x00-\x1f\x7f]*$")

# Per-backend service facts, until the backend registry carries them.
#   visible_devices_env: the variable that limits the devices an instance sees ('' for none)
#   device_nodes: the DeviceAllow entries when the driver role reported none
#   driver_fact: the fact the backend's driver role sets (env_file, device_nodes, device_group)
#   probe_device_nodes: derive the device nodes from the probe when the driver role reported none
#   cpu_runtime: the service runs the CPU kernels (VLLM_TARGET_DEVICE=cpu and the OMP/KV settings)
RECORDS: Dict[str, Dict[str, Any]] = {
    "cpu": {"name": "cpu", "visible_devices_env": "", "device_nodes": [], "driver_fact": "",
            "probe_device_nodes": False, "cpu_runtime": True},
    "cuda": {"name": "cuda", "visible_devices_env": "CUDA_VISIBLE_DEVICES",
             "device_nodes": ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                              "char-nvidia-frontend", "char-nvidia-uvm", "char-nvidia-caps"],
             "driver_fact": "kunpeng_nvidia", "probe_device_nodes": False, "cpu_runtime": False},
    # /dev/davinci<N> per chip, /dev/davinci_manager, /dev/devmm_svm and /dev/hisi_hdc (the device list Huawei's
    # container guides pass to a workload); without a probe that finds the chips: every davinci node by major.
    "ascend": {"name": "ascend", "visible_devices_env": "ASCEND_RT_VISIBLE_DEVICES",
               "device_nodes": ascend_plan.DRIVER_DEVICE_NODES + ["char-davinci"],
               "driver_fact": "kunpeng_ascend", "probe_device_nodes": True, "cpu_runtime": False},
}


class ServiceError(ValueError):
    """A value the service environment cannot carry."""


def _probed_nodes(accelerators: Mapping[str, Any]) -> List[str]:
    """The Ascend nodes the probe's chips give (what kunpeng.vllm.ascend would report), or [] without chips."""
    ascend = accelerators.get("ascend") or {}
    pci = accelerators.get("pci") or {}
    nodes = ascend_plan.device_nodes(ascend, int(pci.get("ascend_count") or 0))
    return nodes if len(nodes) > len(ascend_plan.DRIVER_DEVICE_NODES) else []


def _device_allow(record: Mapping[str, Any], accelerators: Mapping[str, Any], driver: Mapping[str, Any]) -> List[str]:
    if not record["device_nodes"]:
        return []
    nodes = list(driver.get("device_nodes") or [])
    if not nodes and record["probe_device_nodes"]:
        nodes = _probed_nodes(accelerators)
    return [f"{node} rw" for node in nodes or record["device_nodes"]]


def _environment(record: Mapping[str, Any], visible_devices: str, cpu_runtime: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    env: Dict[str, str] = {}
    if record["cpu_runtime"]:
        if not cpu_runtime:
            raise ServiceError(f"the {record['name']} backend needs the CPU runtime settings (kunpeng.vllm.cpu_runtime)")
        env.update(VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE=str(cpu_runtime["kvcache_space_gib"]),
                   VLLM_CPU_OMP_THREADS_BIND=str(cpu_runtime["omp_threads_bind"]))
    if record["visible_devices_env"] and str(visible_devices or ""):
        env[record["visible_devices_env"]] = str(visible_devices)
    bad = sorted(key for key, value in env.items() if not _SAFE_VALUE.match(value))
    if bad:
        raise ServiceError(f"{', '.join(bad)}: a quote or control character cannot go in the service environment")
    return env


def service_spec(backend_record: Mapping[str, Any], accelerators: Optional[Mapping[str, Any]], visible_devices: str,
                 cpu_runtime: Optional[Mapping[str, Any]], driver_facts: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The service entry of the plan for ``backend_record``.

    ``driver_facts`` maps fact names (kunpeng_nvidia, kunpeng_ascend) to the facts the driver roles set, those
    present; ``cpu_runtime`` is kunpeng.vllm.cpu_runtime's result (cpu backend).  Returns ``device_allow``
    (DeviceAllow entries; empty: PrivateDevices=yes), ``supplementary_groups``, ``environment`` and
    ``environment_files`` (the driver's, loaded after the user's).
    """
    fact_name = backend_record["driver_fact"]
    driver = ((driver_facts or {}).get(fact_name) or {}) if fact_name else {}
    group = str(driver.get("device_group") or "")
    env_file = str(driver.get("env_file") or "")
    return {
        "device_allow": _device_allow(backend_record, accelerators or {}, driver),
        "supplementary_groups": [group] if group else [],
        "environment": _environment(backend_record, visible_devices, cpu_runtime),
        "environment_files": [env_file] if env_file else [],
    }
