# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Parse ``nvidia-smi`` output and ``/proc/driver/nvidia/version``.

The CSV query is the primary source (stable column order because we name the
columns).  ``nvidia-smi -q -x`` fills in what the query cannot give (CUDA
version, fabric state on NVSwitch systems); its DTD changes between driver
branches, so the XML is walked defensively: unknown elements are ignored and
missing ones give ``None``.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import csv
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional

from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.pci import normalize_bus_id

QUERY_FIELDS = (
    "index",
    "uuid",
    "name",
    "pci.bus_id",
    "memory.total",
    "memory.used",
    "driver_version",
    "compute_cap",
    "persistence_mode",
    "mig.mode.current",
)

QUERY_ARGS = ["--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits"]

_NOT_AVAILABLE = ("", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "[insufficient permissions]")


class NvidiaSmiParseError(ValueError):
    """The text is not the nvidia-smi output the parser expected."""


def _clean(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in _NOT_AVAILABLE else value


def _int(value: Optional[str]) -> Optional[int]:
    value = _clean(value)
    if value is None:
        return None
    match = re.match(r"^(\d+)", value)
    return int(match.group(1)) if match else None


def parse_query_gpu(text: str) -> List[Dict[str, Any]]:
    """Parse ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits``.

    Memory is reported in MiB.  A row with the wrong number of columns (an
    error message, a header, an older driver that rejected a field) makes the
    whole output invalid: partial GPU lists are worse than none.
    """
    gpus = []
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise NvidiaSmiParseError("empty output")
    for row in csv.reader(lines, skipinitialspace=True):
        if len(row) != len(QUERY_FIELDS):
            raise NvidiaSmiParseError(f"expected {len(QUERY_FIELDS)} columns, got {len(row)}: {','.join(row)!r}")
        values = dict(zip(QUERY_FIELDS, row))
        index = _int(values["index"])
        if index is None:
            raise NvidiaSmiParseError("GPU index is not a number: {!r}".format(values["index"]))
        gpus.append({
            "index": index,
            "uuid": _clean(values["uuid"]),
            "name": _clean(values["name"]),
            "bus_id": normalize_bus_id(_clean(values["pci.bus_id"])),
            "memory_total_mib": _int(values["memory.total"]),
            "memory_used_mib": _int(values["memory.used"]),
            "driver_version": _clean(values["driver_version"]),
            "compute_cap": _clean(values["compute_cap"]),
            "persistence_mode": _clean(values["persistence_mode"]),
            "mig_mode": _clean(values["mig.mode.current"]),
        })
    return gpus


def _local(tag: str) -> str:
    """Tag name without namespace, lower case, underscores only (``cliqueId`` -> ``cliqueid``)."""
    return tag.rsplit("}", 1)[-1].lower().replace("_", "")


def _child_text(element: Any, *names: str) -> Optional[str]:
    wanted = set(name.lower().replace("_", "") for name in names)
    for child in list(element):
        if _local(child.tag) in wanted:
            return _clean(child.text)
    return None


def _find(element: Any, name: str) -> Any:
    wanted = name.lower().replace("_", "")
    for child in list(element):
        if _local(child.tag) == wanted:
            return child
    return None


def _leaves(element: Any, prefix: str = "") -> Dict[str, str]:
    """Flatten an element into ``{"path/to/leaf": text}`` for fields we do not model."""
    result: Dict[str, str] = {}
    for child in list(element):
        key = prefix + child.tag.rsplit("}", 1)[-1]
        if len(child):
            result.update(_leaves(child, key + "/"))
        else:
            value = _clean(child.text)
            if value is not None:
                result[key] = value
    return result


def parse_query_xml(text: str) -> Dict[str, Any]:
    """Parse ``nvidia-smi -q -x``.

    Returns ``driver_version``, ``cuda_version``, ``attached_gpus`` and per GPU
    ``bus_id``, ``uuid``, ``product_name``, ``architecture``, ``addressing_mode``,
    ``fabric`` (``state``, ``status``, ``clique_id``, ``cluster_uuid``; empty when
    the driver has no fabric element or reports N/A) and ``nvlink`` (leaf
    values of any ``nvlink*`` element, whatever the DTD calls them).
    """
    try:
        root = ET.fromstring((text or "").strip())
    except ET.ParseError as exc:
        raise NvidiaSmiParseError(f"not XML: {exc}") from None
    if _local(root.tag) != "nvidiasmilog":
        raise NvidiaSmiParseError(f"root element is <{root.tag}>, expected <nvidia_smi_log>")
    gpus = []
    for gpu in list(root):
        if _local(gpu.tag) != "gpu":
            continue
        pci = _find(gpu, "pci")
        bus_id = gpu.get("id") or (_child_text(pci, "pci_bus_id") if pci is not None else None)
        fabric: Dict[str, Optional[str]] = {}
        fabric_el = _find(gpu, "fabric")
        if fabric_el is not None:
            fabric = {
                "state": _child_text(fabric_el, "state"),
                "status": _child_text(fabric_el, "status"),
                "clique_id": _child_text(fabric_el, "clique_id", "cliqueId"),
                "cluster_uuid": _child_text(fabric_el, "cluster_uuid", "clusterUuid"),
            }
            if not any(fabric.values()):
                fabric = {}
        nvlink: Dict[str, str] = {}
        for child in list(gpu):
            if _local(child.tag).startswith("nvlink"):
                nvlink.update(_leaves(child, child.tag.rsplit("}", 1)[-1] + "/"))
        memory = _find(gpu, "fb_memory_usage")
        gpus.append({
            "bus_id": normalize_bus_id(bus_id),
            "uuid": _child_text(gpu, "uuid"),
            "product_name": _child_text(gpu, "product_name"),
            "architecture": _child_text(gpu, "product_architecture"),
            "addressing_mode": _child_text(gpu, "addressing_mode"),
            "memory_total_mib": _int(_child_text(memory, "total")) if memory is not None else None,
            "fabric": fabric,
            "nvlink": nvlink,
        })
    return {
        "driver_version": _child_text(root, "driver_version"),
        "cuda_version": _child_text(root, "cuda_version"),
        "attached_gpus": _int(_child_text(root, "attached_gpus")),
        "gpus": gpus,
    }


_MODULE_VERSION = re.compile(r"Kernel Module\b.*?\s(\d+\.\d+(?:\.\d+)*)\b")


def parse_proc_version(text: Optional[str]) -> Dict[str, Any]:
    """Parse ``/proc/driver/nvidia/version``.

    ``NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.82.07 ...``
    is the open GPU kernel module, ``NVRM version: NVIDIA UNIX x86_64 Kernel
    Module  535.129.03 ...`` the proprietary one.  ``None`` (file absent) means
    no NVIDIA kernel module is loaded.
    """
    if not text:
        return {"loaded": False, "driver_version": None, "kernel_module": None, "banner": None}
    banner = None
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            banner = line[len("NVRM version:"):].strip()
            break
    if banner is None:
        raise NvidiaSmiParseError("no 'NVRM version:' line")
    match = _MODULE_VERSION.search(banner)
    return {
        "loaded": True,
        "driver_version": match.group(1) if match else None,
        "kernel_module": "open" if "open kernel module" in banner.lower() else "proprietary",
        "banner": banner,
    }


def _float(value: Optional[str]) -> Optional[float]:
    """``80.89 W``, ``38 C``, ``0 %`` -> the number in front; N/A -> None."""
    value = _clean(value)
    if value is None:
        return None
    match = re.match(r"^(-?\d+(?:\.\d+)?)", value)
    return float(match.group(1)) if match else None


def _path_text(element: Any, *path: str) -> Optional[str]:
    for name in path:
        if element is None:
            return None
        element = _find(element, name)
    return _clean(element.text) if element is not None else None


def _ecc_counts(gpu: Any) -> Dict[str, Dict[str, Optional[int]]]:
    """ECC error counts per scope (``volatile``, ``aggregate``) and kind.

    Hopper-era DTDs report ``sram_correctable`` / ``sram_uncorrectable_*`` /
    ``dram_correctable`` / ``dram_uncorrectable``; older ones (v11, e.g. the
    L40S capture) ``single_bit/total`` and ``double_bit/total``.  A scope the
    driver reports as N/A (ECC off, consumer cards) is left out.
    """
    ecc = _find(gpu, "ecc_errors")
    result: Dict[str, Dict[str, Optional[int]]] = {}
    if ecc is None:
        return result
    for scope in ("volatile", "aggregate"):
        element = _find(ecc, scope)
        if element is None:
            continue
        corrected = uncorrected = None
        for child in list(element):
            name = _local(child.tag)
            if name in ("singlebit", "doublebit"):
                count = _int(_child_text(child, "total"))
            else:
                count = _int(child.text)
            if count is None:
                continue
            if name == "singlebit" or (name.endswith("correctable") and "uncorrectable" not in name):
                corrected = (corrected or 0) + count
            elif name == "doublebit" or "uncorrectable" in name:
                uncorrected = (uncorrected or 0) + count
        if corrected is not None or uncorrected is not None:
            result[scope] = {"corrected": corrected, "uncorrected": uncorrected}
    return result


def parse_xml_readings(text: str) -> List[Dict[str, Any]]:
    """Per-GPU readings from ``nvidia-smi -q -x`` for monitoring.

    Returns, per GPU in output order: ``index`` (the minor number, as
    ``--query-gpu=index`` numbers it), ``bus_id``, ``uuid``, ``product_name``,
    ``memory_used_mib`` / ``memory_total_mib`` (framebuffer), ``utilization_percent``,
    ``temperature_c``, ``power_w`` (instant draw, else the average the newer
    DTDs add, else the v11 ``power_readings/power_draw``), ``ecc`` (see
    :func:`_ecc_counts`), ``remapped_row_failure`` / ``remapped_row_pending``
    (``Yes``/``No``/None) and ``recovery_action`` (``None`` is the driver's
    text for "nothing to do").  Values the driver reports as N/A are None.
    """
    try:
        root = ET.fromstring((text or "").strip())
    except ET.ParseError as exc:
        raise NvidiaSmiParseError(f"not XML: {exc}") from None
    if _local(root.tag) != "nvidiasmilog":
        raise NvidiaSmiParseError(f"root element is <{root.tag}>, expected <nvidia_smi_log>")
    readings = []
    for position, gpu in enumerate([element for element in root if _local(element.tag) == "gpu"]):
        power = None
        for path in (("gpu_power_readings", "instant_power_draw"), ("gpu_power_readings", "average_power_draw"),
                     ("gpu_power_readings", "power_draw"), ("power_readings", "power_draw")):
            power = _float(_path_text(gpu, *path))
            if power is not None:
                break
        minor = _int(_child_text(gpu, "minor_number"))
        readings.append({
            "index": minor if minor is not None else position,
            "bus_id": normalize_bus_id(gpu.get("id")),
            "uuid": _child_text(gpu, "uuid"),
            "product_name": _child_text(gpu, "product_name"),
            "memory_used_mib": _int(_path_text(gpu, "fb_memory_usage", "used")),
            "memory_total_mib": _int(_path_text(gpu, "fb_memory_usage", "total")),
            "utilization_percent": _float(_path_text(gpu, "utilization", "gpu_util")),
            "temperature_c": _float(_path_text(gpu, "temperature", "gpu_temp")),
            "power_w": power,
            "ecc": _ecc_counts(gpu),
            "remapped_row_failure": _path_text(gpu, "remapped_rows", "remapped_row_failure"),
            "remapped_row_pending": _path_text(gpu, "remapped_rows", "remapped_row_pending"),
            "recovery_action": _child_text(gpu, "gpu_recovery_action"),
        })
    return readings
