# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Find accelerators on the PCI bus from sysfs, without any vendor driver.

The PCI view is the ground truth the driver tools are checked against: a
host whose ``npu-smi`` lists 6 NPUs while sysfs shows 8 Huawei d802 functions
has a broken chip or driver, and a host with NVIDIA functions but no
``nvidia-smi`` needs a driver install rather than a CPU fallback.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import os
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import chips

HUAWEI_VENDOR = chips.HUAWEI_VENDOR
NVIDIA_VENDOR = "0x10de"

# device id -> (chip, product family), from the one chip table (chips.py).
ASCEND_DEVICES = {row.device_id: (row.chip, row.product) for row in chips.CHIPS}

# PCI class code (base class + subclass) of NVSwitch; the backends' device classes are their records'.
CLASS_BRIDGE_OTHER = "0x0680"  # NVSwitch presents itself as "other bridge"

PCI_ATTRIBUTES = ("vendor", "device", "subsystem_vendor", "subsystem_device", "class", "numa_node")


def _norm_hex(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    value = value.strip().lower()
    if not value:
        return None
    if not value.startswith("0x"):
        value = "0x" + value
    return value


def _numa(value: Optional[str]) -> Optional[int]:
    try:
        node = int((value or "").strip())
    except ValueError:
        return None
    return node if node >= 0 else None


def read_pci_devices(sysfs_root: str) -> List[Dict[str, Optional[str]]]:
    """Read the raw attribute files of every function under ``<sysfs_root>/bus/pci/devices``.

    Returns one dict per function with ``bus_id`` plus the attribute names of
    :data:`PCI_ATTRIBUTES` (``None`` where a file is missing or unreadable).
    A missing directory (containers, non-Linux) gives an empty list.
    """
    base = os.path.join(sysfs_root, "bus", "pci", "devices")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    devices = []
    for name in names:
        entry: Dict[str, Optional[str]] = {"bus_id": name}
        for attr in PCI_ATTRIBUTES:
            try:
                with open(os.path.join(base, name, attr)) as handle:
                    entry[attr] = handle.read().strip()
            except (OSError, UnicodeDecodeError):
                entry[attr] = None
        devices.append(entry)
    return devices


Rules = List[Tuple[str, str, Dict[str, Any]]]


def device_rules(records: Dict[str, Dict[str, Any]]) -> Rules:
    """``(list name, count key, pci rule)`` of every backend record that shows its device on the PCI bus.

    ``records`` is the backend registry's ``BACKENDS``; the rules are their ``hardware.pci`` (backends/base.py
    ``FIELDS``), so a new backend's functions are counted without an edit here.  The caller hands the
    records in because this module is also installed beside the metrics collector, which has no registry.
    """
    rules = []
    for record in records.values():
        hardware = record.get("hardware")
        if hardware and hardware.get("pci"):
            rules.append((hardware["section"], hardware["pci_count"], hardware["pci"]))
    return rules


def _matches(rule: Dict[str, Any], vendor: Optional[str], device: Optional[str], pci_class: Optional[str]) -> bool:
    if vendor != _norm_hex(rule["vendor"]):
        return False
    if rule.get("device_ids") is not None and device not in {_norm_hex(d) for d in rule["device_ids"]}:
        return False
    if rule.get("classes") is not None and (not pci_class or pci_class[:6] not in {_norm_hex(c) for c in rule["classes"]}):
        return False
    return True


def classify_pci_devices(raw_devices: List[Dict[str, Optional[str]]], rules: Rules) -> Dict[str, Any]:
    """Pick every backend's devices and the NVSwitch bridges out of ``raw_devices``.

    A function counts for a backend when it matches the record's ``hardware.pci`` rule (vendor, and where
    given the class-code prefixes and device ids): Huawei functions only with a known Ascend chip's device
    id (vendor 0x19e5 also covers the Kunpeng SoC's own NICs, SAS and RoCE functions), NVIDIA functions as
    GPUs for class 0x0300xx / 0x0302xx.  Each backend's list is named after its probe section, its length
    after its ``pci_count``.  Ascend functions also name their chip, and NVIDIA 0x0680xx functions are
    NVSwitch bridges.
    """
    found: Dict[str, List[Dict[str, Any]]] = {section: [] for section, _count, _rule in rules}
    nvswitch: List[Dict[str, Any]] = []
    for raw in raw_devices:
        vendor = _norm_hex(raw.get("vendor"))
        device = _norm_hex(raw.get("device"))
        pci_class = _norm_hex(raw.get("class"))
        entry: Dict[str, Any] = {
            "bus_id": (raw.get("bus_id") or "").lower(),
            "vendor_id": vendor,
            "device_id": device,
            "subsystem_vendor_id": _norm_hex(raw.get("subsystem_vendor")),
            "subsystem_device_id": _norm_hex(raw.get("subsystem_device")),
            "class": pci_class,
            "numa_node": _numa(raw.get("numa_node")),
        }
        if vendor == HUAWEI_VENDOR and device in ASCEND_DEVICES:
            entry["chip"], entry["product"] = ASCEND_DEVICES[device]
        section = next((section for section, _count, rule in rules if _matches(rule, vendor, device, pci_class)), None)
        if section is not None:
            found[section].append(entry)
        elif vendor == NVIDIA_VENDOR and pci_class and pci_class[:6] == CLASS_BRIDGE_OTHER:
            nvswitch.append(entry)
    result: Dict[str, Any] = {}
    for section, count, _rule in rules:
        result[section] = found[section]
        result[count] = len(found[section])
    result["ascend_chips"] = sorted(set(d["chip"] for d in result.get("ascend", []) if "chip" in d))
    result["nvswitch"] = nvswitch
    result["nvswitch_count"] = len(nvswitch)
    result["scanned"] = len(raw_devices)
    return result


def probe_pci(sysfs_root: str, rules: Rules) -> Dict[str, Any]:
    """Convenience wrapper: read sysfs and classify by ``rules`` (:func:`device_rules`) in one go."""
    return classify_pci_devices(read_pci_devices(sysfs_root), rules)


def normalize_bus_id(bus_id: Optional[str]) -> Optional[str]:
    """Bring ``00000000:18:00.0`` (nvidia-smi) and ``0000:18:00.0`` (sysfs) to one form.

    The PCI domain is kept as four hex digits, everything lower case, so ids
    from different tools compare equal.
    """
    if not bus_id:
        return None
    value = bus_id.strip().lower()
    parts = value.split(":")
    if len(parts) == 3:
        domain = parts[0][-4:].rjust(4, "0")
        return f"{domain}:{parts[1]}:{parts[2]}"
    if len(parts) == 2:
        return f"0000:{parts[0]}:{parts[1]}"
    return value
