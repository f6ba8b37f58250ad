# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Turn the PCI, Ascend, NVIDIA and CPU probes into one decision and a problem list.

The backend follows the hardware, not the driver state: a host with Atlas
A2 chips on the PCI bus but no working ``npu-smi`` is an ``ascend`` host whose
driver is not ready (``driver_ready: false`` plus a problem), so the layer
that installs the Ascend driver runs instead of a silent CPU fallback.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from collections import Counter
from typing import Any, Dict, List, Optional

BACKEND_ASCEND = "ascend"
BACKEND_CUDA = "cuda"
BACKEND_CPU = "cpu"

# The registry's ranks of the two backends with rules of their own here (backends/ascend.py, cuda.py; a test
# compares them).
BUILTIN_RANKS = {BACKEND_ASCEND: 2, BACKEND_CUDA: 1}

FABRIC_READY_STATES = ("completed",)


def _visible_count(devices: List[Dict[str, Any]]) -> int:
    """Devices the tool sees, counted the way PCI counts them (one per bus id when known)."""
    bus_ids = [d.get("bus_id") for d in devices]
    if devices and all(bus_ids):
        return len(set(bus_ids))
    return len(devices)


def _most_common_name(devices: List[Dict[str, Any]]) -> Optional[str]:
    names = [d.get("name") for d in devices if d.get("name")]
    if not names:
        return None
    return Counter(names).most_common(1)[0][0]


def _ascend_problems(pci: Dict[str, Any], ascend: Dict[str, Any]) -> List[str]:
    problems = [f"npu-smi: {finding}" for finding in ascend.get("findings", [])]
    pci_count = pci.get("ascend_count", 0)
    devices = ascend.get("devices", [])
    chips = ", ".join(pci.get("ascend_chips", [])) or "Ascend"
    if pci_count and not ascend.get("tool"):
        problems.append(f"PCI shows {pci_count} {chips} device(s) but npu-smi was not found: driver tool missing")
    elif pci_count and ascend.get("tool") and _visible_count(devices) < pci_count:
        problems.append(f"PCI shows {pci_count} {chips} device(s) but npu-smi reports only {_visible_count(devices)}")
    for device in devices:
        health = device.get("health")
        if health and health.upper() != "OK":
            detail = ""
            if device.get("error_code"):
                detail = " (error code {})".format(device["error_code"])
            problems.append("Ascend NPU {} chip {} ({}) health is {}{}".format(
                device.get("npu_id"), device.get("chip_id"), device.get("bus_id") or "bus id unknown", health, detail))
    return problems


def _nvidia_problems(pci: Dict[str, Any], nvidia: Dict[str, Any]) -> List[str]:
    problems = [f"nvidia-smi: {finding}" for finding in nvidia.get("findings", [])]
    pci_count = pci.get("nvidia_count", 0)
    gpus = nvidia.get("gpus", [])
    if pci_count and not nvidia.get("tool"):
        problems.append(f"PCI shows {pci_count} NVIDIA GPU(s) but nvidia-smi was not found: driver tool missing")
    elif pci_count and nvidia.get("tool") and _visible_count(gpus) < pci_count:
        problems.append(f"PCI shows {pci_count} NVIDIA GPU(s) but nvidia-smi reports only {_visible_count(gpus)}")
    if pci_count and not nvidia.get("kernel_module_loaded"):
        problems.append(f"PCI shows {pci_count} NVIDIA GPU(s) but no NVIDIA kernel module is loaded (/proc/driver/nvidia/version absent)")
    if nvidia.get("fabric_manager_required") and gpus:
        for gpu in gpus:
            state = (gpu.get("fabric") or {}).get("state")
            if state and state.lower() not in FABRIC_READY_STATES:
                problems.append("NVSwitch system: GPU {} fabric state is {} (is nvidia-fabricmanager running?)".format(gpu.get("index"), state))
    return problems


def _other_problems(hardware: Dict[str, Any], pci: Dict[str, Any], section: Dict[str, Any]) -> List[str]:
    """The findings of a backend this module has no rules of its own for, from its record's ``hardware``."""
    tool, device = hardware["tool"], hardware["device"]
    problems = [f"{tool}: {finding}" for finding in section.get("findings", [])]
    pci_count = pci.get(hardware["pci_count"], 0)
    devices = section.get(hardware["devices"], [])
    if pci_count and not section.get("tool"):
        problems.append(f"PCI shows {pci_count} {device}(s) but {tool} was not found: driver tool missing")
    elif pci_count and section.get("tool") and _visible_count(devices) < pci_count:
        problems.append(f"PCI shows {pci_count} {device}(s) but {tool} reports only {_visible_count(devices)}")
    return problems


def summarize(pci: Dict[str, Any], ascend: Dict[str, Any], nvidia: Dict[str, Any], cpu: Dict[str, Any],
              others: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Build the ``summary`` fact: backend, its reason, device counts, memory and problems.

    ``others`` are the device backends beyond Ascend and NVIDIA, each ``{"name", "rank", "hardware", "section"}``
    (the registry's rank and record ``hardware``, and the probe section the facts module gathered): their
    findings follow the record, and where several are present the highest ``rank`` is chosen (Ascend's is 2,
    NVIDIA's 1, as in the registry), so a new backend needs no rule here.
    """
    problems = _ascend_problems(pci, ascend) + _nvidia_problems(pci, nvidia)
    npu_devices = ascend.get("devices", [])
    gpu_devices = nvidia.get("gpus", [])
    has_ascend = bool(npu_devices) or pci.get("ascend_count", 0) > 0
    has_nvidia = bool(gpu_devices) or pci.get("nvidia_count", 0) > 0

    if has_ascend and has_nvidia:
        problems.append("both Ascend and NVIDIA accelerators are present; backend 'ascend' was chosen")

    present = []
    for other in others or []:
        hardware, section = other["hardware"], other["section"] or {}
        problems += _other_problems(hardware, pci, section)
        if section.get(hardware["devices"]) or pci.get(hardware["pci_count"], 0) > 0:
            present.append(other)
    chosen = max(present, key=lambda other: other["rank"], default=None)
    builtin_rank = (BUILTIN_RANKS[BACKEND_ASCEND] if has_ascend else BUILTIN_RANKS[BACKEND_CUDA] if has_nvidia else -1)
    if chosen is not None and chosen["rank"] < builtin_rank:
        chosen = None
    if present and (has_ascend or has_nvidia or len(present) > 1):
        names = [other["name"] for other in present] + ([BACKEND_ASCEND] if has_ascend else []) + ([BACKEND_CUDA] if has_nvidia else [])
        winner = chosen["name"] if chosen is not None else (BACKEND_ASCEND if has_ascend else BACKEND_CUDA)
        problems.append(f"accelerators of several backends are present ({', '.join(sorted(names))}); backend '{winner}' was chosen")

    devices: List[Dict[str, Any]] = []
    if chosen is not None:
        hardware, section = chosen["hardware"], chosen["section"] or {}
        backend = chosen["name"]
        devices = section.get(hardware["devices"], [])
        pci_count = pci.get(hardware["pci_count"], 0)
        if devices:
            reason = f"{hardware['tool']} reports {len(devices)} {hardware['device']}(s) ({_most_common_name(devices) or 'unknown model'})"
        else:
            reason = f"PCI shows {pci_count} {hardware['device']}(s); {hardware['tool']} gives no devices, so the driver is not ready"
    elif has_ascend:
        backend = BACKEND_ASCEND
        devices = npu_devices
        if npu_devices:
            reason = f"npu-smi reports {len(npu_devices)} Ascend chip(s) ({_most_common_name(npu_devices) or 'unknown model'})"
        else:
            reason = (f"PCI shows {pci.get('ascend_count', 0)} {', '.join(pci.get('ascend_chips', [])) or 'Ascend'} device(s); "
                      "npu-smi gives no devices, so the driver is not ready")
        pci_count = pci.get("ascend_count", 0)
    elif has_nvidia:
        backend = BACKEND_CUDA
        devices = gpu_devices
        if gpu_devices:
            reason = f"nvidia-smi reports {len(gpu_devices)} GPU(s) ({_most_common_name(gpu_devices) or 'unknown model'})"
        else:
            reason = f"PCI shows {pci.get('nvidia_count', 0)} NVIDIA GPU(s); nvidia-smi gives no devices, so the driver is not ready"
        pci_count = pci.get("nvidia_count", 0)
    else:
        backend = BACKEND_CPU
        pci_count = 0
        reason = "no Ascend NPU or NVIDIA GPU on the PCI bus or through driver tools; CPU: {} ({})".format(
            cpu.get("model_name") or "unknown model", cpu.get("architecture") or "unknown architecture")

    memory = [d.get("device_memory_mib") if "device_memory_mib" in d else d.get("memory_total_mib") for d in devices]
    memory_known = [int(m) for m in memory if m]
    return {
        "backend": backend,
        "backend_reason": reason,
        "driver_ready": backend != BACKEND_CPU and bool(devices),
        "device_name": _most_common_name(devices),
        "device_count": len(devices) if devices else pci_count,
        "device_memory_mib": memory_known,
        "min_device_memory_mib": min(memory_known) if memory_known else None,
        "total_memory_mib": sum(memory_known),
        "host_memory_mib": cpu.get("memory_mib"),
        "problems": problems,
    }
