"""PCI classification from sysfs trees in fixtures/sysfs and fixtures/nvidia/*/sysfs."""

import os

import pytest
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import pci
from conftest import FIXTURES

RULES = pci.device_rules(backends.BACKENDS)
DEVICE_BACKENDS = [name for name in backends.NAMES if backends.field(name, "hardware")]


@pytest.mark.parametrize("name", DEVICE_BACKENDS)
def test_every_device_backend_is_counted_from_its_record(name):
    """A backend's PCI rule is its record's: one matching function shows up under its section and count."""
    hardware = backends.field(name, "hardware")
    rule = hardware["pci"]
    raw = [{"bus_id": "0000:01:00.0", "vendor": rule["vendor"],
            "device": (rule["device_ids"] or ("0x1234",))[0],
            "class": (rule["classes"] or ("0x1200",))[0] + "00", "numa_node": "0"}]
    found = pci.classify_pci_devices(raw, RULES)
    assert found[hardware["pci_count"]] == 1, name
    assert [d["bus_id"] for d in found[hardware["section"]]] == ["0000:01:00.0"], name


def test_atlas_a2_tree_counts_only_npus():
    found = pci.probe_pci(os.path.join(FIXTURES, "sysfs", "atlas-800i-a2"), RULES)
    assert found["scanned"] == 12
    assert found["ascend_count"] == 8  # HiSilicon NIC, SAS, root port are vendor 0x19e5 too
    assert found["ascend_chips"] == ["Ascend 910B"]
    assert found["nvidia_count"] == 0 and found["nvswitch_count"] == 0
    first = found["ascend"][0]
    assert first == {
        "bus_id": "0000:01:00.0", "vendor_id": "0x19e5", "device_id": "0xd802", "subsystem_vendor_id": "0x19e5",
        "subsystem_device_id": "0x3005", "class": "0x120000", "numa_node": 0, "chip": "Ascend 910B", "product": "Atlas A2",
    }


def test_hgx_tree_gpus_and_nvswitch():
    found = pci.probe_pci(os.path.join(FIXTURES, "nvidia", "hgx-h100", "sysfs"), RULES)
    assert found["nvidia_count"] == 8  # the ASPEED VGA is not NVIDIA
    assert found["nvswitch_count"] == 4
    assert {d["numa_node"] for d in found["nvidia"]} == {0, 1}


def test_missing_sysfs_is_empty(tmp_path):
    found = pci.probe_pci(str(tmp_path / "nothing"), RULES)
    assert found["scanned"] == 0 and found["ascend"] == [] and found["nvidia"] == []


def test_every_ascend_device_id():
    raw = [{"bus_id": f"0000:0{i}:00.0", "vendor": "0x19e5", "device": dev, "class": "0x120000", "numa_node": "-1"}
           for i, dev in enumerate(["0xd801", "0xd802", "0xd803", "0xd500", "0xd100", "0xd806"])]
    found = pci.classify_pci_devices(raw, RULES)
    assert [d["chip"] for d in found["ascend"]] == ["Ascend 910", "Ascend 910B", "Ascend 910_93", "Ascend 310P", "Ascend 310"]
    assert {d["numa_node"] for d in found["ascend"]} == {None}


def test_nvidia_classes():
    raw = [
        {"bus_id": "a", "vendor": "0x10de", "device": "0x2684", "class": "0x030000"},  # VGA GPU
        {"bus_id": "b", "vendor": "0x10de", "device": "0x2335", "class": "0x030200"},  # 3D controller
        {"bus_id": "c", "vendor": "0x10de", "device": "0x22ba", "class": "0x040300"},  # HDMI audio
        {"bus_id": "d", "vendor": "0x10de", "device": "0x22a3", "class": "0x068000"},  # NVSwitch
    ]
    found = pci.classify_pci_devices(raw, RULES)
    assert [d["bus_id"] for d in found["nvidia"]] == ["a", "b"]
    assert [d["bus_id"] for d in found["nvswitch"]] == ["d"]


def test_normalize_bus_id():
    assert pci.normalize_bus_id("00000000:18:00.0") == "0000:18:00.0"
    assert pci.normalize_bus_id("0000:C1:00.0") == "0000:c1:00.0"
    assert pci.normalize_bus_id("18:00.0") == "0000:18:00.0"
    assert pci.normalize_bus_id(None) is None
