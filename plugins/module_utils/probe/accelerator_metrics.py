# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Accelerator readings as node-exporter textfile metrics.

The vendors' exporters (NVIDIA's DCGM exporter, Huawei's npu-exporter) are not
in the distributions' repositories, so the collection ships a small collector
(``roles/monitoring/files/accelerator_metrics_collector.py``) that runs the
vendor tool the probe already parses and writes one ``.prom`` file for the
node exporter's textfile collector.  Everything here is a plain function over
tool output: which tool to run, what a reading means (healthy or not) and the
exposition text.  The metric names are the contract with the alert rules and
dashboards of ``kunpeng.vllm.monitoring``.

Metric names (all gauges unless noted; labels ``vendor``, ``device``,
``bus_id``, ``model``; ``uuid`` on NVIDIA):

- ``kunpeng_accelerator_memory_used_bytes`` / ``_memory_total_bytes``
  (NVIDIA framebuffer; Ascend HBM where the chip has it, else on-card DDR);
- ``kunpeng_accelerator_utilization_ratio`` (0-1; NVIDIA GPU utilisation,
  Ascend AI Core usage);
- ``kunpeng_accelerator_temperature_celsius``, ``kunpeng_accelerator_power_watts``;
- ``kunpeng_accelerator_healthy`` (1/0, with the vendor's ``health`` text);
- ``kunpeng_accelerator_ecc_errors_total`` (counter; ``kind`` corrected or
  uncorrected, ``scope`` volatile or aggregate; only where reported);
- ``kunpeng_accelerator_devices``, ``kunpeng_accelerator_collector_success``
  and ``kunpeng_accelerator_collector_last_run_timestamp_seconds`` (labels
  ``vendor``), so a missing file and a failing tool are both visible.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import npu_smi, nvidia_smi

MIB = 1024 * 1024
PREFIX = "kunpeng_accelerator_"

# vendor -> (tool, arguments); the same invocations the probe uses.
TOOLS = {
    "nvidia": ("nvidia-smi", ["-q", "-x"]),
    "ascend": ("npu-smi", ["info"]),
}

# Ascend health texts that mean the chip is usable (npu-smi prints ``OK``;
# ``Warning``, ``Alarm``, ``Critical`` and anything else are not).
_ASCEND_HEALTHY = ("ok",)

# (name, type, help) in exposition order.
METRICS = (
    ("memory_used_bytes", "gauge", "Device memory in use (NVIDIA framebuffer, Ascend HBM or on-card DDR)."),
    ("memory_total_bytes", "gauge", "Device memory size (NVIDIA framebuffer, Ascend HBM or on-card DDR)."),
    ("utilization_ratio", "gauge", "Compute utilisation, 0-1 (NVIDIA GPU utilisation, Ascend AI Core usage)."),
    ("temperature_celsius", "gauge", "Device temperature."),
    ("power_watts", "gauge", "Device power draw."),
    ("healthy", "gauge", "1 when the vendor tool reports the device healthy, else 0 (health label: its words)."),
    ("ecc_errors_total", "counter", "ECC errors the driver counted, by kind and scope."),
    ("devices", "gauge", "Devices the vendor tool listed."),
    ("collector_success", "gauge", "1 when the vendor tool ran and its output parsed, else 0."),
    ("collector_last_run_timestamp_seconds", "gauge", "When the collector last ran (Unix time)."),
)


def vendors_present(which: Callable[[str], Optional[str]]) -> List[str]:
    """Vendors whose tool is on this host (``which`` is ``shutil.which`` or a test double)."""
    return [vendor for vendor in sorted(TOOLS) if which(TOOLS[vendor][0])]


def nvidia_health(reading: Dict[str, Any]) -> Tuple[bool, str]:
    """Healthy unless the driver reports an uncorrectable volatile ECC error,
    a failed row remap or a recovery action other than ``None``.

    Those are the conditions NVIDIA's GPU memory error-management guide
    (row remapping, "GPU recovery action") says need a reset or a drain.
    """
    volatile = reading.get("ecc", {}).get("volatile", {})
    if volatile.get("uncorrected"):
        return False, "uncorrectable ECC errors"
    if (reading.get("remapped_row_failure") or "").lower() == "yes":
        return False, "row remapping failed"
    action = reading.get("recovery_action")
    if action and action.lower() != "none":
        return False, "recovery action: " + action
    return True, "OK"


def nvidia_devices(xml_text: str) -> List[Dict[str, Any]]:
    """Normalised devices from ``nvidia-smi -q -x``."""
    devices = []
    for reading in nvidia_smi.parse_xml_readings(xml_text):
        healthy, health = nvidia_health(reading)
        utilization = reading["utilization_percent"]
        devices.append({
            "vendor": "nvidia",
            "device": str(reading["index"]),
            "bus_id": reading["bus_id"] or "",
            "model": reading["product_name"] or "",
            "uuid": reading["uuid"] or "",
            "memory_used_bytes": _bytes(reading["memory_used_mib"]),
            "memory_total_bytes": _bytes(reading["memory_total_mib"]),
            "utilization_ratio": utilization / 100.0 if utilization is not None else None,
            "temperature_celsius": reading["temperature_c"],
            "power_watts": reading["power_w"],
            "healthy": healthy,
            "health": health,
            "ecc": reading["ecc"],
        })
    return devices


def ascend_devices(info_text: str) -> List[Dict[str, Any]]:
    """Normalised devices (one per chip) from the ``npu-smi info`` table."""
    table = npu_smi.parse_info_table(info_text)
    devices = []
    for chip in table["devices"]:
        if chip.get("hbm_total_mib"):
            used, total = chip.get("hbm_used_mib"), chip["hbm_total_mib"]
        else:
            used, total = chip.get("memory_used_mib"), chip.get("memory_total_mib")
        aicore = chip.get("aicore_percent")
        health = chip.get("health") or "unknown"
        devices.append({
            "vendor": "ascend",
            "device": "{}-{}".format(chip["npu_id"], chip["chip_id"]),
            "bus_id": chip.get("bus_id") or "",
            "model": chip.get("name") or "",
            "uuid": "",
            "memory_used_bytes": _bytes(used),
            "memory_total_bytes": _bytes(total),
            "utilization_ratio": aicore / 100.0 if isinstance(aicore, (int, float)) else None,
            "temperature_celsius": chip.get("temp_c"),
            "power_watts": chip.get("power_w"),
            "healthy": health.lower() in _ASCEND_HEALTHY,
            "health": health,
            "ecc": {},
        })
    return devices


PARSERS = {"nvidia": nvidia_devices, "ascend": ascend_devices}


def _bytes(mib: Optional[int]) -> Optional[int]:
    return mib * MIB if mib is not None else None


def collect(vendors: List[str], run: Callable[[List[str]], Tuple[int, str, str]]) -> Dict[str, Dict[str, Any]]:
    """Run each vendor's tool and parse it: ``{vendor: {"ok", "devices", "error"}}``.

    ``run(argv)`` returns ``(rc, stdout, stderr)``.  A tool that fails or
    prints something the parser rejects gives ``ok: False`` with the reason,
    never a partial device list.
    """
    results = {}
    for vendor in vendors:
        tool, args = TOOLS[vendor]
        rc, out, err = run([tool] + args)
        if rc != 0:
            results[vendor] = {"ok": False, "devices": [], "error": f"{tool} exited {rc}: {(err or out).strip()[:200]}"}
            continue
        try:
            devices = PARSERS[vendor](out)
        except ValueError as exc:
            results[vendor] = {"ok": False, "devices": [], "error": f"{tool} output not understood: {exc}"}
            continue
        results[vendor] = {"ok": True, "devices": devices, "error": None}
    return results


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: List[Tuple[str, str]]) -> str:
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels) + "}"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def samples(results: Dict[str, Dict[str, Any]], now: float) -> Dict[str, List[Tuple[List[Tuple[str, str]], Any]]]:
    """``{metric name: [(labels, value), ...]}`` for every reading that was reported."""
    series: Dict[str, List[Tuple[List[Tuple[str, str]], Any]]] = dict((name, []) for name, _t, _h in METRICS)
    for vendor in sorted(results):
        result = results[vendor]
        for device in result["devices"]:
            labels = [("vendor", vendor), ("device", device["device"]), ("bus_id", device["bus_id"]),
                      ("model", device["model"])]
            if device["uuid"]:
                labels.append(("uuid", device["uuid"]))
            for name in ("memory_used_bytes", "memory_total_bytes", "utilization_ratio", "temperature_celsius",
                         "power_watts"):
                if device[name] is not None:
                    series[name].append((labels, device[name]))
            series["healthy"].append((labels + [("health", device["health"])], device["healthy"]))
            for scope in sorted(device["ecc"]):
                for kind in ("corrected", "uncorrected"):
                    count = device["ecc"][scope].get(kind)
                    if count is not None:
                        series["ecc_errors_total"].append((labels + [("kind", kind), ("scope", scope)], count))
        vendor_label = [("vendor", vendor)]
        series["devices"].append((vendor_label, len(result["devices"])))
        series["collector_success"].append((vendor_label, result["ok"]))
        series["collector_last_run_timestamp_seconds"].append((vendor_label, round(now, 3)))
    return series


def render(results: Dict[str, Dict[str, Any]], now: float) -> str:
    """The textfile: ``# HELP`` / ``# TYPE`` and samples for every metric that has any."""
    series = samples(results, now)
    lines = []
    for name, kind, text in METRICS:
        if not series[name]:
            continue
        full = PREFIX + name
        lines.append(f"# HELP {full} {text}")
        lines.append(f"# TYPE {full} {kind}")
        for labels, value in series[name]:
            lines.append(full + _labels(labels) + " " + _value(value))
    return "\n".join(lines) + "\n" if lines else ""
