# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""CPU facts that decide which vLLM build a host can run.

vLLM's CPU backend needs AVX512 (AVX2 with the community build) on x86 and
NEON on arm64; AMX and SVE select faster kernels.  Kunpeng hosts are told
apart from other arm64 servers by the HiSilicon implementer id, because
``/proc/cpuinfo`` on arm64 has no ``model name``.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, Iterable, List, Optional

HISILICON_IMPLEMENTER = "0x48"

# (implementer, part) -> model.  0x48/0xd01 is documented as Kunpeng 920 (TaiShan v110).
KNOWN_ARM_PARTS = {
    ("0x48", "0xd01"): "Kunpeng 920",
}

ARM_IMPLEMENTERS = {
    "0x41": "ARM",
    "0x48": "HiSilicon",
    "0x4e": "NVIDIA",
    "0x50": "Ampere (APM)",
    "0x51": "Qualcomm",
    "0x61": "Apple",
    "0xc0": "Ampere",
}

X86 = ("x86_64", "amd64", "i386", "i686")
ARM64 = ("aarch64", "arm64")


def normalize_architecture(arch: Optional[str]) -> Optional[str]:
    """``amd64`` -> ``x86_64``, ``arm64`` -> ``aarch64``; anything else unchanged."""
    if not arch:
        return None
    lowered = arch.strip().lower()
    if lowered == "amd64":
        return "x86_64"
    if lowered == "arm64":
        return "aarch64"
    return lowered


def _blocks(text: str) -> List[Dict[str, str]]:
    blocks: List[Dict[str, str]] = []
    current: Dict[str, str] = {}
    for line in (text or "").splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        if ":" not in line:
            continue
        key, value = line.split(":", 1)
        current.setdefault(key.strip().lower(), value.strip())
    if current:
        blocks.append(current)
    return blocks


def _hex(value: Optional[str], width: int) -> Optional[str]:
    """``0x48`` / ``0xD01`` -> zero-padded lower-case hex; unparsable text is kept as is."""
    if not value:
        return None
    try:
        return "0x" + format(int(value, 16), f"0{width}x")
    except ValueError:
        return value.lower()


def parse_cpuinfo(text: Optional[str], architecture: Optional[str]) -> Dict[str, Any]:
    """Summarise ``/proc/cpuinfo`` for ``architecture`` (from ``uname -m``).

    ``logical_cpus`` counts ``processor`` entries.  ``features`` has booleans
    for avx2, avx512 (``avx512f``), amx (``amx_tile``) on x86 and sve, neon
    (``asimd``) on arm64; the other architecture's keys are ``False``.
    ``bf16`` is native bfloat16 arithmetic on either: ``avx512_bf16`` or
    ``amx_bf16`` on x86, ``bf16`` (Armv8.6 BF16) on arm64.
    """
    arch = normalize_architecture(architecture)
    blocks = _blocks(text or "")
    processors = [block for block in blocks if "processor" in block and re.match(r"^\d+$", block["processor"])]
    first = processors[0] if processors else (blocks[0] if blocks else {})
    flags: set = set()
    for block in processors or blocks:
        for key in ("flags", "features"):
            if key in block:
                flags.update(block[key].split())
        if flags:
            break
    implementer = _hex(first.get("cpu implementer"), 2)
    part = _hex(first.get("cpu part"), 3)
    model_name = first.get("model name") or first.get("hardware")
    vendor = first.get("vendor_id")
    kunpeng_model = None
    if implementer:
        vendor = ARM_IMPLEMENTERS.get(implementer, f"implementer {implementer}")
        known = KNOWN_ARM_PARTS.get((implementer, part or ""))
        if implementer == HISILICON_IMPLEMENTER:
            kunpeng_model = known or f"HiSilicon part {part}"
        if not model_name:
            model_name = known or (f"{vendor} part {part}" if part else vendor)
    is_x86 = arch in X86
    is_arm = arch in ARM64
    return {
        "architecture": arch,
        "vendor": vendor,
        "model_name": model_name,
        "cpu_implementer": implementer,
        "cpu_part": part,
        "kunpeng": implementer == HISILICON_IMPLEMENTER,
        "kunpeng_model": kunpeng_model,
        "logical_cpus": len(processors),
        "features": {
            "avx2": is_x86 and "avx2" in flags,
            "avx512": is_x86 and "avx512f" in flags,
            "amx": is_x86 and "amx_tile" in flags,
            "neon": is_arm and ("asimd" in flags or "neon" in flags),
            "sve": is_arm and "sve" in flags,
            "bf16": (is_x86 and bool(flags & {"avx512_bf16", "amx_bf16"})) or (is_arm and "bf16" in flags),
        },
    }


def parse_meminfo(text: Optional[str]) -> Optional[int]:
    """``MemTotal`` of ``/proc/meminfo`` in MiB (rounded down), ``None`` when absent."""
    for line in (text or "").splitlines():
        match = re.match(r"^MemTotal:\s+(\d+)\s*kB", line)
        if match:
            return int(match.group(1)) // 1024
    return None


def numa_node_ids(names: Iterable[str]) -> List[int]:
    """NUMA node ids from the entries of ``/sys/devices/system/node`` (``node0`` ...)."""
    ids = []
    for name in names:
        match = re.match(r"^node(\d+)$", name)
        if match:
            ids.append(int(match.group(1)))
    return sorted(ids)
