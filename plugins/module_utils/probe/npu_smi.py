# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Parse the output of Huawei's ``npu-smi`` tool.

Two families of output exist.  The key-value forms (``info -l``, ``info -m``,
``info -t board|health|usages``) are stable across driver releases and are
preferred.  The main ``npu-smi info`` table changes with the product line
(Atlas A2 ``Chip`` rows, A3 ``Chip  Phy-ID`` rows with two chips per NPU,
310P ``Chip    Device`` rows without an HBM column) and is used as fallback
and for what only it shows: power, temperature and the process list.

Every parser raises :class:`NpuSmiParseError` when the text does not look like
the expected output at all, so the caller can report garbage instead of
silently returning an empty device list.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Optional, Tuple

_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
_SPLIT_COLUMNS = re.compile(r"\s{2,}")


class NpuSmiParseError(ValueError):
    """The text is not the npu-smi output the parser expected."""


def _int(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def _float(value: Optional[str]) -> Optional[float]:
    """Numbers in npu-smi cells; ``NA``, ``-`` and ``N/A`` mean "not reported"."""
    if value is None:
        return None
    try:
        return float(value.strip())
    except ValueError:
        return None


def _number(value: Optional[str]) -> Any:
    number = _float(value)
    if number is None:
        return None
    return int(number) if number.is_integer() and "." not in (value or "") else number


# --------------------------------------------------------------------------
# key-value forms
# --------------------------------------------------------------------------

def parse_colon_pairs(text: str) -> List[Tuple[str, str]]:
    """Return ``(key, value)`` for every ``Key   : Value`` line, in order."""
    pairs = []
    for raw in (text or "").splitlines():
        if ":" not in raw:
            continue
        key, value = raw.split(":", 1)
        key = key.strip()
        if key:
            pairs.append((key, value.strip()))
    return pairs


def parse_kv_record(text: str) -> Dict[str, str]:
    """One ``Key : Value`` record as a dict (``-t board``, ``-t health``, ``-t usages``)."""
    pairs = parse_colon_pairs(text)
    if not pairs:
        raise NpuSmiParseError("no 'Key : Value' lines found")
    return dict(pairs)


def parse_info_list(text: str) -> Dict[str, Any]:
    """Parse ``npu-smi info -l``: total count plus NPU id and chip count per NPU."""
    total = None
    npus: List[Dict[str, Any]] = []
    for key, value in parse_colon_pairs(text):
        lowered = key.lower()
        if lowered == "total count":
            total = _int(value)
        elif lowered == "npu id":
            npu_id = _int(value)
            if npu_id is None:
                raise NpuSmiParseError(f"NPU ID is not a number: {value!r}")
            npus.append({"npu_id": npu_id, "chip_count": None})
        elif lowered == "chip count" and npus:
            npus[-1]["chip_count"] = _int(value)
    if total is None and not npus:
        raise NpuSmiParseError("neither 'Total Count' nor 'NPU ID' found")
    return {"total_count": total if total is not None else len(npus), "npus": npus}


_MAPPING_COLUMNS = {
    "npu id": "npu_id",
    "chip id": "chip_id",
    "chip logic id": "logic_id",
    "chip phy-id": "phy_id",
    "chip name": "name",
}


def parse_info_mapping(text: str) -> List[Dict[str, Any]]:
    """Parse ``npu-smi info -m`` into one entry per compute chip.

    Columns are found by their header names (newer drivers add ``Chip Phy-ID``
    or ``Slot ID``).  ``Mcu`` pseudo-chips have no logic id (``-``) and are
    returned with ``compute: False`` so callers can drop them.
    """
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    header_index = None
    for index, line in enumerate(lines):
        if line.lower().startswith("npu id") and "chip" in line.lower():
            header_index = index
            break
    if header_index is None:
        raise NpuSmiParseError("no 'NPU ID  Chip ID ...' header found")
    columns = [_MAPPING_COLUMNS.get(name.lower(), name.lower()) for name in _SPLIT_COLUMNS.split(lines[header_index])]
    chips = []
    for line in lines[header_index + 1:]:
        cells = _SPLIT_COLUMNS.split(line)
        if len(cells) < 3 or _int(cells[0]) is None:
            continue
        row = dict(zip(columns, cells))
        logic = row.get("logic_id")
        name = row.get("name") or ""
        chips.append({
            "npu_id": _int(row.get("npu_id")),
            "chip_id": _int(row.get("chip_id")),
            "logic_id": _int(logic),
            "phy_id": _int(row.get("phy_id")),
            "name": name,
            "compute": _int(logic) is not None and name.lower() != "mcu",
        })
    if not chips:
        raise NpuSmiParseError("mapping header found but no chip rows")
    return chips


def parse_board(text: str) -> Dict[str, Any]:
    """Parse ``npu-smi info -t board -i N`` into the fields the facts need."""
    record = parse_kv_record(text)
    lowered = dict((key.lower(), value) for key, value in record.items())
    if "npu id" not in lowered and "pcie bus info" not in lowered and "software version" not in lowered:
        raise NpuSmiParseError("board output has none of 'NPU ID', 'PCIe Bus Info', 'Software Version'")
    device_id = lowered.get("pci device id")
    return {
        "npu_id": _int(lowered.get("npu id")),
        "product_name": lowered.get("product name"),
        "software_version": lowered.get("software version"),
        "firmware_version": lowered.get("firmware version"),
        "compatibility": lowered.get("compatibility"),
        "bus_id": (lowered.get("pcie bus info") or "").lower() or None,
        "vendor_id": (lowered.get("pci vendor id") or "").lower() or None,
        "device_id": device_id.lower() if device_id else None,
        "chip_count": _int(lowered.get("chip count")),
    }


def parse_health(text: str) -> Dict[str, Optional[str]]:
    """Parse ``npu-smi info -t health -i N -c C`` (``Health Status``, ``Error Code``)."""
    record = parse_kv_record(text)
    lowered = dict((key.lower(), value) for key, value in record.items())
    health = lowered.get("health status", lowered.get("health"))
    if health is None:
        raise NpuSmiParseError("no 'Health Status' line")
    error_code = lowered.get("error code")
    error_info = lowered.get("error information")
    return {
        "health": health,
        "error_code": None if error_code in (None, "", "NA") else error_code,
        "error_information": None if error_info in (None, "", "NA") else error_info,
    }


_USAGE_KEYS = {
    "hbm capacity(mb)": "hbm_capacity_mib",
    "hbm usage rate(%)": "hbm_usage_percent",
    "ddr capacity(mb)": "ddr_capacity_mib",
    "ddr usage rate(%)": "ddr_usage_percent",
    "memory capacity(mb)": "ddr_capacity_mib",
    "memory usage rate(%)": "ddr_usage_percent",
    "aicore usage rate(%)": "aicore_usage_percent",
    "aivector usage rate(%)": "aivector_usage_percent",
    "aicpu usage rate(%)": "aicpu_usage_percent",
    "npu utilization(%)": "npu_utilization_percent",
}


def parse_usages(text: str) -> Dict[str, Any]:
    """Parse ``npu-smi info -t usages -i N -c C``; only the capacity / rate keys are kept.

    310P cards report ``DDR`` (or ``Memory``) capacity and no HBM; A2/A3 report
    HBM and usually a zero DDR capacity.
    """
    record = parse_kv_record(text)
    result: Dict[str, Any] = {}
    for key, value in record.items():
        target = _USAGE_KEYS.get(key.lower())
        if target and target not in result:
            result[target] = _number(value)
    if not result:
        raise NpuSmiParseError("no capacity or usage-rate keys found")
    return result


# --------------------------------------------------------------------------
# main table
# --------------------------------------------------------------------------

def _cells(line: str) -> List[str]:
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|"):
        stripped = stripped[:-1]
    return [cell.strip() for cell in stripped.split("|")]


def _first_row(cells: List[str], layout_has_hbm: bool) -> Optional[Dict[str, Any]]:
    """``| 0     910B4 | OK | 87.2   33   0 / 0 |`` -> NPU id, name, health, power, temp."""
    head = cells[0].split(None, 1)
    npu_id = _int(head[0]) if head else None
    if npu_id is None or len(cells) < 3:
        return None
    metrics = cells[2].split()
    hugepages = _PAIR.search(cells[2])
    return {
        "npu_id": npu_id,
        "name": head[1].strip() if len(head) > 1 else "",
        "health": cells[1] or None,
        "power_w": _float(metrics[0]) if metrics else None,
        "temp_c": _number(metrics[1]) if len(metrics) > 1 else None,
        "hugepages_used": int(hugepages.group(1)) if hugepages else None,
        "hugepages_total": int(hugepages.group(2)) if hugepages else None,
    }


def _second_row(cells: List[str], layout_has_hbm: bool) -> Optional[Dict[str, Any]]:
    """``| 0  [phy] | 0000:C1:00.0 | 0   0 / 0   2654 / 32768 |`` -> chip, bus id, usage."""
    if len(cells) < 3 or not _BUS_ID.match(cells[1]):
        return None
    ids = cells[0].split()
    chip_id = _int(ids[0]) if ids else None
    if chip_id is None:
        return None
    pairs = _PAIR.findall(cells[2])
    aicore = cells[2].split()[0] if cells[2].split() else None
    row: Dict[str, Any] = {
        "chip_id": chip_id,
        "second_id": _int(ids[1]) if len(ids) > 1 else None,
        "bus_id": cells[1].lower(),
        "aicore_percent": _number(aicore),
        "memory_used_mib": int(pairs[0][0]) if pairs else None,
        "memory_total_mib": int(pairs[0][1]) if pairs else None,
        "hbm_used_mib": None,
        "hbm_total_mib": None,
    }
    if layout_has_hbm and len(pairs) > 1:
        row["hbm_used_mib"] = int(pairs[1][0])
        row["hbm_total_mib"] = int(pairs[1][1])
    return row


def parse_info_table(text: str) -> Dict[str, Any]:
    """Parse the main ``npu-smi info`` table.

    Returns ``version``, ``layout`` (``chip``, ``chip_phy_id`` or ``chip_device``),
    ``has_hbm``, ``devices`` (one per chip, keyed by ``npu_id``/``chip_id``) and
    ``processes``.  The second id column is reported as ``phy_id`` on A3 and as
    ``device_id`` (logical device) on 310P.
    """
    version = None
    layout = None
    has_hbm = False
    devices: List[Dict[str, Any]] = []
    processes: List[Dict[str, Any]] = []
    section = None
    pending: Optional[Dict[str, Any]] = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped.startswith("|"):
            continue
        if version is None:
            match = re.search(r"Version:\s*(\S+)", stripped)
            if match and "npu-smi" in stripped.lower():
                version = match.group(1)
                continue
        cells = _cells(stripped)
        first = cells[0]
        lowered = stripped.lower()
        if "process id" in lowered and "process name" in lowered:
            section = "processes"
            continue
        if re.match(r"^npu\s+name\b", first.lower()) and "health" in lowered:
            section = "devices"
            continue
        if section == "devices" and re.match(r"^chip\b", first.lower()) and "bus-id" in lowered:
            words = first.lower().split()
            if len(words) > 1 and words[1] == "phy-id":
                layout = "chip_phy_id"
            elif len(words) > 1 and words[1] == "device":
                layout = "chip_device"
            else:
                layout = "chip"
            has_hbm = "hbm-usage" in lowered
            continue
        if section == "devices":
            top = _first_row(cells, has_hbm)
            if top is not None and not _BUS_ID.match(cells[1] if len(cells) > 1 else ""):
                pending = top
                continue
            bottom = _second_row(cells, has_hbm)
            if bottom is not None and pending is not None:
                device = dict(pending)
                second = bottom.pop("second_id")
                device.update(bottom)
                device["phy_id"] = second if layout == "chip_phy_id" else None
                device["device_id"] = second if layout == "chip_device" else None
                devices.append(device)
                pending = None
        elif section == "processes":
            if len(cells) < 4 or "no running processes" in lowered:
                continue
            ids = cells[0].split()
            pid = _int(cells[1])
            if len(ids) < 2 or _int(ids[0]) is None or pid is None:
                continue
            memory = _int(cells[3].split()[0]) if cells[3].split() else None
            processes.append({
                "npu_id": _int(ids[0]),
                "chip_id": _int(ids[1]),
                "pid": pid,
                "name": cells[2],
                "memory_mib": memory,
            })
    if section is None:
        raise NpuSmiParseError("no 'NPU  Name | Health' header found")
    return {
        "version": version,
        "layout": layout,
        "has_hbm": has_hbm,
        "devices": devices,
        "processes": processes,
    }


def device_memory_mib(device: Dict[str, Any]) -> Optional[int]:
    """Memory a model can use on one chip: HBM where the chip has it, else on-card DDR."""
    for key in ("hbm_total_mib", "hbm_capacity_mib"):
        value = device.get(key)
        if value:
            return int(value)
    for key in ("memory_total_mib", "ddr_capacity_mib"):
        value = device.get(key)
        if value:
            return int(value)
    return None
