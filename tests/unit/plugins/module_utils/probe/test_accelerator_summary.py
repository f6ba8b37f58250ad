"""The backend decision and problem list, from hand-built probe results."""

import pytest
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.accelerator_summary import summarize

CPU = {"model_name": "Kunpeng 920", "architecture": "aarch64", "memory_mib": 1024}
NO_PCI = {"ascend": [], "ascend_count": 0, "ascend_chips": [], "nvidia": [], "nvidia_count": 0, "nvswitch_count": 0}
NO_ASCEND = {"tool": None, "devices": [], "findings": []}
NO_NVIDIA = {"tool": None, "gpus": [], "findings": [], "kernel_module_loaded": False, "fabric_manager_required": False}


def npu(npu_id, bus, health="OK", memory=32768):
    return {"npu_id": npu_id, "chip_id": 0, "bus_id": bus, "health": health, "name": "Ascend 910B4",
            "device_memory_mib": memory, "error_code": None}


def pci_with_npus(count):
    return dict(NO_PCI, ascend=[{"bus_id": f"b{i}"} for i in range(count)], ascend_count=count, ascend_chips=["Ascend 910B"])


def test_cpu_only():
    summary = summarize(NO_PCI, NO_ASCEND, NO_NVIDIA, CPU)
    assert summary["backend"] == "cpu" and summary["driver_ready"] is False
    assert "Kunpeng 920 (aarch64)" in summary["backend_reason"]
    assert summary["problems"] == [] and summary["host_memory_mib"] == 1024


def test_ascend_ready():
    ascend = dict(NO_ASCEND, tool="/usr/local/bin/npu-smi", devices=[npu(i, f"b{i}") for i in range(8)])
    summary = summarize(pci_with_npus(8), ascend, NO_NVIDIA, CPU)
    assert summary["backend"] == "ascend" and summary["driver_ready"] is True
    assert summary["device_count"] == 8 and summary["total_memory_mib"] == 8 * 32768
    assert summary["problems"] == []


def test_a3_two_chips_sharing_nothing_is_not_a_mismatch():
    # 16 chips, 16 PCI functions
    ascend = dict(NO_ASCEND, tool="npu-smi", devices=[npu(i // 2, f"b{i}", memory=65536) for i in range(16)])
    summary = summarize(pci_with_npus(16), ascend, NO_NVIDIA, CPU)
    assert summary["problems"] == [] and summary["device_count"] == 16


def test_mismatch_health_and_findings():
    devices = [npu(i, f"b{i}") for i in range(6)]
    devices[2]["health"] = "Alarm"
    devices[2]["error_code"] = "80CB8009"
    ascend = dict(NO_ASCEND, tool="npu-smi", devices=devices, findings=["`npu-smi info -m` failed with rc=1"])
    summary = summarize(pci_with_npus(8), ascend, NO_NVIDIA, CPU)
    assert summary["problems"] == [
        "npu-smi: `npu-smi info -m` failed with rc=1",
        "PCI shows 8 Ascend 910B device(s) but npu-smi reports only 6",
        "Ascend NPU 2 chip 0 (b2) health is Alarm (error code 80CB8009)",
    ]


def test_both_vendors_prefers_ascend():
    pci = dict(pci_with_npus(1), nvidia=[{"bus_id": "g"}], nvidia_count=1)
    nvidia = dict(NO_NVIDIA, tool="nvidia-smi", kernel_module_loaded=True,
                  gpus=[{"index": 0, "bus_id": "g", "name": "NVIDIA L40S", "memory_total_mib": 46068, "device_memory_mib": 46068}])
    ascend = dict(NO_ASCEND, tool="npu-smi", devices=[npu(0, "b0")])
    summary = summarize(pci, ascend, nvidia, CPU)
    assert summary["backend"] == "ascend"
    assert summary["problems"] == ["both Ascend and NVIDIA accelerators are present; backend 'ascend' was chosen"]


# A backend with no rules of its own here: its findings and its place in the `auto` order come from its record.
FOURTH = {"name": "fourth", "hardware": {"pci_count": "fourth_count", "section": "fourth", "devices": "gpus",
                                         "device": "Fourth GPU", "tool": "fourth-smi"}}


def test_builtin_ranks_are_the_registry_ranks():
    from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
    from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.accelerator_summary import BUILTIN_RANKS

    assert BUILTIN_RANKS == {name: backends.backend(name).rank for name in BUILTIN_RANKS}


@pytest.mark.parametrize("rank, with_npus, backend, problem", [
    (3, False, "fourth", None),
    (3, True, "fourth", "accelerators of several backends are present (ascend, fourth); backend 'fourth' was chosen"),
    (0, True, "ascend", "accelerators of several backends are present (ascend, fourth); backend 'ascend' was chosen"),
])
def test_other_backend_follows_its_record(rank, with_npus, backend, problem):
    pci = dict(pci_with_npus(8 if with_npus else 0), fourth_count=2)
    ascend = dict(NO_ASCEND, tool="/usr/local/bin/npu-smi", devices=[npu(i, f"b{i}") for i in range(8)]) if with_npus else NO_ASCEND
    section = {"tool": "/usr/bin/fourth-smi", "gpus": [{"name": "Fourth X1", "bus_id": "c0"}], "findings": []}
    summary = summarize(pci, ascend, NO_NVIDIA, CPU, [dict(FOURTH, rank=rank, section=section)])
    assert summary["backend"] == backend
    assert "PCI shows 2 Fourth GPU(s) but fourth-smi reports only 1" in summary["problems"]
    if problem:
        assert problem in summary["problems"]
    if backend == "fourth":
        assert summary["backend_reason"] == "fourth-smi reports 1 Fourth GPU(s) (Fourth X1)"
