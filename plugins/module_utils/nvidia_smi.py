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

from ansible_collections.kunpeng.vllm.plugins.module_utils.pci import normalize_bus_id

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
