"""npu-smi parsers against the Ascend doubles in fixtures/ascend (see its README)."""

import os

import pytest
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import npu_smi
from conftest import FIXTURES

ASCEND = os.path.join(FIXTURES, "ascend")


def fixture(*parts):
    with open(os.path.join(ASCEND, *parts)) as handle:
        return handle.read()


def test_a2_table_eight_910b4():
    table = npu_smi.parse_info_table(fixture("atlas-800i-a2", "info.txt"))
    assert table["version"] == "25.0.rc1.1"
    assert table["layout"] == "chip" and table["has_hbm"] is True
    devices = table["devices"]
    assert [d["npu_id"] for d in devices] == list(range(8))
    first = devices[0]
    assert first == {
        "npu_id": 0, "name": "910B4", "health": "OK", "power_w": 87.2, "temp_c": 33,
        "hugepages_used": 0, "hugepages_total": 0, "chip_id": 0, "bus_id": "0000:c1:00.0",
        "aicore_percent": 0, "memory_used_mib": 0, "memory_total_mib": 0,
        "hbm_used_mib": 2654, "hbm_total_mib": 32768, "phy_id": None, "device_id": None,
    }
    assert devices[7]["bus_id"] == "0000:42:00.0" and devices[7]["hbm_used_mib"] == 2653
    assert table["processes"] == []
    assert npu_smi.device_memory_mib(first) == 32768


def test_documented_one_npu_excerpt_parses():
    """The first NPU of the Atlas 800I A2 table, the layout Huawei's npu-smi command reference shows for `npu-smi info`."""
    text = "\n".join(fixture("atlas-800i-a2", "info.txt").splitlines()[:9])
    devices = npu_smi.parse_info_table(text)["devices"]
    assert [(d["npu_id"], d["bus_id"], d["hbm_total_mib"]) for d in devices] == [(0, "0000:c1:00.0", 32768)]


def test_a3_table_two_chips_per_npu():
    table = npu_smi.parse_info_table(fixture("atlas-800i-a3", "info.txt"))
    assert table["layout"] == "chip_phy_id"
    devices = table["devices"]
    assert len(devices) == 16
    assert [(d["npu_id"], d["chip_id"], d["phy_id"]) for d in devices[:4]] == [(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
    assert {d["name"] for d in devices} == {"Ascend910"}
    assert {d["hbm_total_mib"] for d in devices} == {65536}
    assert devices[0]["power_w"] == 165.3
    assert devices[1]["power_w"] is None  # "-" on the second die


def test_310p_table_without_hbm_column():
    table = npu_smi.parse_info_table(fixture("atlas-300i-duo", "info.txt"))
    assert table["version"] == "23.0.0"
    assert table["layout"] == "chip_device" and table["has_hbm"] is False
    devices = table["devices"]
    assert [(d["npu_id"], d["chip_id"], d["device_id"]) for d in devices] == [(1, 0, 0), (1, 1, 1), (2, 0, 2), (2, 1, 3)]
    assert all(d["power_w"] is None for d in devices)  # "NA"
    assert [d["memory_total_mib"] for d in devices] == [44280, 43693, 44280, 43693]
    assert all(d["hbm_total_mib"] is None for d in devices)
    assert [npu_smi.device_memory_mib(d) for d in devices] == [44280, 43693, 44280, 43693]
    assert table["processes"] == [{"npu_id": 1, "chip_id": 0, "pid": 1374233, "name": "python3.10", "memory_mib": 8241}]


def test_table_with_processes_and_ids_from_four():
    table = npu_smi.parse_info_table(fixture("tables", "a2-npu4-7-processes.txt"))
    assert [d["npu_id"] for d in table["devices"]] == [4, 5, 6, 7]
    assert table["devices"][1]["power_w"] is None
    assert [d["hbm_used_mib"] for d in table["devices"]] == [30120, 30118, 30120, 30119]
    assert [(p["npu_id"], p["pid"], p["name"], p["memory_mib"]) for p in table["processes"]] == [
        (4, 2871935, "python3", 27456), (5, 2871936, "VLLMWorker_TP1", 27454),
        (6, 2871937, "VLLMWorker_TP2", 27456), (7, 2871938, "VLLMWorker_TP3", 27455)]


@pytest.mark.parametrize("text", ["", "Segmentation fault\n", "+-----+\n| nothing here |\n"])
def test_table_garbage_raises(text):
    with pytest.raises(npu_smi.NpuSmiParseError):
        npu_smi.parse_info_table(text)


def test_info_list():
    parsed = npu_smi.parse_info_list(fixture("atlas-800i-a2", "info-l.txt"))
    assert parsed["total_count"] == 8
    assert parsed["npus"] == [{"npu_id": n, "chip_count": 1} for n in range(8)]
    a3 = npu_smi.parse_info_list(fixture("atlas-800i-a3", "info-l.txt"))
    assert {n["chip_count"] for n in a3["npus"]} == {2}
    with pytest.raises(npu_smi.NpuSmiParseError):
        npu_smi.parse_info_list("dcmi module initialize failed\n")


def test_info_mapping_drops_mcu():
    chips = npu_smi.parse_info_mapping(fixture("atlas-800i-a2", "info-m.txt"))
    assert len(chips) == 16
    mcu = [c for c in chips if not c["compute"]]
    assert len(mcu) == 8 and {c["name"] for c in mcu} == {"Mcu"} and {c["logic_id"] for c in mcu} == {None}
    compute = [c for c in chips if c["compute"]]
    assert [(c["npu_id"], c["chip_id"], c["logic_id"], c["name"]) for c in compute[:2]] == [
        (0, 0, 0, "Ascend 910B4"), (1, 0, 1, "Ascend 910B4")]


def test_info_mapping_with_phy_id_column():
    chips = [c for c in npu_smi.parse_info_mapping(fixture("atlas-800i-a3", "info-m.txt")) if c["compute"]]
    assert len(chips) == 16
    assert chips[3] == {"npu_id": 1, "chip_id": 1, "logic_id": 3, "phy_id": 3, "name": "Ascend910", "compute": True}


def test_mapping_garbage_raises():
    with pytest.raises(npu_smi.NpuSmiParseError):
        npu_smi.parse_info_mapping("Error: permission denied\n")


def test_board():
    board = npu_smi.parse_board(fixture("atlas-800i-a2", "board.txt"))
    assert board == {
        "npu_id": 0, "product_name": None, "software_version": "24.1.rc1", "firmware_version": "7.1.0.11.220",
        "compatibility": "OK", "bus_id": "0000:c1:00.0", "vendor_id": "0x19e5", "device_id": "0xd802", "chip_count": 1,
    }


def test_health_ok_and_warning():
    assert npu_smi.parse_health(fixture("atlas-800i-a2", "health.txt")) == {
        "health": "OK", "error_code": None, "error_information": None}
    warning = npu_smi.parse_health(fixture("atlas-800i-a2", "health-warning.txt"))
    assert warning["health"] == "Warning" and warning["error_code"] == "80E18005"
    assert "single-bit ECC" in warning["error_information"]
    with pytest.raises(npu_smi.NpuSmiParseError):
        npu_smi.parse_health("NPU ID : 0\n")


def test_usages_hbm_and_ddr():
    a2 = npu_smi.parse_usages(fixture("atlas-800i-a2", "usages.txt"))
    assert a2["hbm_capacity_mib"] == 32768 and a2["hbm_usage_percent"] == 8 and a2["ddr_capacity_mib"] == 0
    assert npu_smi.device_memory_mib(a2) == 32768
    duo = npu_smi.parse_usages(fixture("atlas-300i-duo", "usages.txt"))
    assert "hbm_capacity_mib" not in duo and duo["ddr_capacity_mib"] == 44280
    assert npu_smi.device_memory_mib(duo) == 44280
    with pytest.raises(npu_smi.NpuSmiParseError):
        npu_smi.parse_usages("Chip ID : 0\n")
