# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The one Ascend chip table: PCI device id -> chip name -> Atlas series -> package-name stem.

Every other place that needs one of these facts reads it from :data:`CHIPS`:
``pci.py`` names the chips it finds on the bus, ``compat_matrix.py`` turns
them into the Atlas series vllm-ascend supports, and ``ascend_plan.py``
picks the package-name stem of Huawei's ``.run`` files.  A new chip is one
new row here.

Sources: the PCI ids are Huawei's (vendor ``0x19e5``, as ``lspci -n`` shows
them on Atlas servers); the series follow the product names of Huawei's
"CANN Software Installation Guide" (Atlas A2 = 910B, Atlas A3 = 910_93,
Atlas inference series = 310P); the stems are the series token of the
package names on Huawei's download pages (``Ascend-hdk-910b-npu-driver_*``,
``Atlas-A3-hdk-npu-driver_*``, ``Ascend-hdk-310p-npu-driver_*``).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, List, NamedTuple, Optional

HUAWEI_VENDOR = "0x19e5"

ATLAS_A1 = "A1"
ATLAS_A2 = "A2"
ATLAS_A3 = "A3"
ATLAS_300I_DUO = "300I Duo"
ATLAS_310 = "310"


class Chip(NamedTuple):
    device_id: str  # PCI device id, lower case with 0x
    chip: str  # the name accelerator_facts reports in pci.ascend_chips
    product: str  # product family, for people
    series: str  # Atlas series (compat_matrix's rows name these)
    package_stem: Optional[str]  # series token of Huawei's package names; None: the role installs nothing for it
    npu_smi_prefix: Optional[str]  # what npu-smi's Name column starts with, where it is unambiguous


CHIPS: List[Chip] = [
    Chip("0xd801", "Ascend 910", "Atlas A1 (910)", ATLAS_A1, None, None),
    Chip("0xd802", "Ascend 910B", "Atlas A2", ATLAS_A2, "910b", "910b"),
    # npu-smi names A3 chips "Ascend910", the same as the A1 chip: no prefix.
    Chip("0xd803", "Ascend 910_93", "Atlas A3", ATLAS_A3, "A3", None),
    Chip("0xd500", "Ascend 310P", "Atlas 300I Duo / 310P", ATLAS_300I_DUO, "310p", "310p"),
    Chip("0xd100", "Ascend 310", "Atlas 300 / 310", ATLAS_310, None, None),
]

BY_DEVICE_ID: Dict[str, Chip] = {row.device_id: row for row in CHIPS}
BY_NAME: Dict[str, Chip] = {row.chip.lower(): row for row in CHIPS}

# Package stems the ascend role can install, in table order.
PACKAGE_STEMS: List[str] = [row.package_stem for row in CHIPS if row.package_stem]


def chip_by_name(name: Any) -> Optional[Chip]:
    """The row of a chip name as ``pci.ascend_chips`` spells it (case does not matter)."""
    return BY_NAME.get(str(name or "").strip().lower())


def series_of_chip(name: Any) -> Optional[str]:
    row = chip_by_name(name)
    return row.series if row else None


def stem_of_chip(name: Any) -> Optional[str]:
    row = chip_by_name(name)
    return row.package_stem if row else None


def series_of_npu_smi_name(name: Any) -> Optional[str]:
    """Atlas series from npu-smi's chip name (``910B4``, ``Ascend310P3``), or None when it is ambiguous."""
    text = str(name or "").lower().replace("ascend", "").strip()
    for row in CHIPS:
        if row.npu_smi_prefix and text.startswith(row.npu_smi_prefix):
            return row.series
    return None
