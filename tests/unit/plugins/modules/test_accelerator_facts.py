"""Module-level tests: the real module against replayed hosts and stand-in tools."""

import json
import os
import time

import fakes
import pytest
from conftest import FIXTURES, FIXTURES_SOURCE
from fakes import Reply

ASCEND = os.path.join(FIXTURES, "ascend")
A2 = os.path.join(ASCEND, "atlas-800i-a2")
A2_SYSFS = os.path.join(FIXTURES, "sysfs", "atlas-800i-a2")
PLAIN_SYSFS = os.path.join(FIXTURES, "sysfs", "plain-x86")
H100 = os.path.join(FIXTURES, "nvidia", "hgx-h100")


def kunpeng_a2_host(tmp_path, replies=None, default=None, **extra):
    """Kunpeng 920 + 8 x 910B sysfs, Ascend version files, and (when given) a fake npu-smi."""
    args = fakes.host_args(str(tmp_path), A2_SYSFS, "kunpeng920", "aarch64", **fakes.ascend_root(str(tmp_path)))
    args.update(extra)
    if replies is not None or default is not None:
        fakes.write_tool(args["tool_path"][0], "npu-smi", replies or {}, default=default)
    return args


def test_host_without_accelerators_is_cpu(tmp_path):
    result, warnings = fakes.run_module(fakes.host_args(str(tmp_path), PLAIN_SYSFS, "x86-avx2", "x86_64"))
    facts = fakes.facts_of(result)
    assert result["changed"] is False
    assert warnings == []
    assert facts["summary"]["backend"] == "cpu"
    assert "no Ascend NPU or NVIDIA GPU" in facts["summary"]["backend_reason"]
    assert facts["summary"]["problems"] == []
    assert facts["summary"]["device_count"] == 0
    assert facts["pci"]["scanned"] == 3 and facts["pci"]["ascend_count"] == 0 and facts["pci"]["nvidia_count"] == 0
    cpu = facts["cpu"]
    assert cpu["architecture"] == "x86_64" and cpu["logical_cpus"] == 2
    assert cpu["features"] == {"avx2": True, "avx512": False, "amx": False, "neon": False, "sve": False, "bf16": False}
    assert cpu["numa_nodes"] == 1 and cpu["memory_mib"] == 16000
    assert facts["ascend"]["tool"] is None and facts["nvidia"]["tool"] is None


def test_driverless_ascend_host_reports_missing_tool(tmp_path):
    result, warnings = fakes.run_module(kunpeng_a2_host(tmp_path))
    facts = fakes.facts_of(result)
    summary = facts["summary"]
    assert summary["backend"] == "ascend"
    assert summary["driver_ready"] is False
    assert summary["device_count"] == 8
    assert summary["device_memory_mib"] == []
    assert any("driver tool missing" in p and "8 Ascend 910B" in p for p in summary["problems"]), summary["problems"]
    assert facts["pci"]["ascend_count"] == 8
    assert sorted(d["numa_node"] for d in facts["pci"]["ascend"]) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert facts["cpu"]["kunpeng"] is True and facts["cpu"]["model_name"] == "Kunpeng 920"
    assert facts["cpu"]["numa_nodes"] == 4
    # the version files are read even without npu-smi
    assert facts["ascend"]["driver_version"] == "24.1.rc1"
    assert facts["ascend"]["cann_version"] == "8.1.RC1"
    assert warnings == []  # a missing tool is a finding, not a warning


def test_atlas_a2_with_driver(tmp_path):
    result, warnings = fakes.run_module(kunpeng_a2_host(tmp_path, fakes.npu_smi_replies(A2)))
    facts = fakes.facts_of(result)
    ascend = facts["ascend"]
    assert warnings == []
    assert facts["summary"]["problems"] == []
    assert ascend["source"] == "key-value"
    assert ascend["npu_smi_version"] == "25.0.rc1.1"
    assert ascend["npu_count"] == 8 and ascend["chip_count"] == 8
    assert [d["logic_id"] for d in ascend["devices"]] == list(range(8))
    assert {d["name"] for d in ascend["devices"]} == {"Ascend 910B4"}
    assert [d["hbm_total_mib"] for d in ascend["devices"]] == [32768] * 8
    assert ascend["devices"][0]["bus_id"] == "0000:c1:00.0"
    assert ascend["devices"][0]["power_w"] == 87.2
    assert ascend["devices"][7]["hbm_used_mib"] == 2653
    # bus ids from npu-smi match the ones sysfs found
    assert {d["bus_id"] for d in ascend["devices"]} == {d["bus_id"] for d in facts["pci"]["ascend"]}
    assert len(ascend["boards"]) == 8 and ascend["boards"][5]["npu_id"] == 5
    assert ascend["boards"][0]["device_id"] == "0xd802"
    assert ascend["versions"]["install_info"]["UserName"] == "HwHiAiUser"
    assert ascend["firmware_version"] == "7.1.0.11.220"
    summary = facts["summary"]
    assert summary["backend"] == "ascend" and summary["driver_ready"] is True
    assert summary["device_name"] == "Ascend 910B4"
    assert summary["device_memory_mib"] == [32768] * 8
    assert summary["total_memory_mib"] == 262144


def test_failing_tool_warns_and_reports(tmp_path):
    failure = Reply(rc=9, stderr="dcmi module initialize failed. ret is -8005\n")
    result, warnings = fakes.run_module(kunpeng_a2_host(tmp_path, default=failure))
    facts = fakes.facts_of(result)
    assert any("`npu-smi info`" in w and "rc=9" in w and "-8005" in w for w in warnings), warnings
    assert any("`npu-smi info -l`" in w for w in warnings)
    problems = facts["summary"]["problems"]
    assert any(p.startswith("npu-smi: `npu-smi info` failed with rc=9") for p in problems), problems
    assert any("npu-smi reports only 0" in p for p in problems), problems
    assert facts["summary"]["backend"] == "ascend" and facts["summary"]["driver_ready"] is False
    assert facts["ascend"]["devices"] == []


def test_hanging_tool_times_out_quickly(tmp_path):
    args = kunpeng_a2_host(tmp_path, default=Reply(stdout="never printed\n", sleep=30), command_timeout=1)
    started = time.monotonic()
    result, warnings = fakes.run_module(args)
    elapsed = time.monotonic() - started
    assert elapsed < 10, f"the 30 s sleep was not cut short ({elapsed:.1f} s)"
    facts = fakes.facts_of(result)
    assert facts["ascend"]["findings"] == ["`npu-smi info` timed out after 1 s; further npu-smi queries skipped"]
    assert len(warnings) == 1 and "timed out" in warnings[0]
    assert any("timed out" in p for p in facts["summary"]["problems"])


def test_pci_count_mismatch(tmp_path):
    replies = fakes.npu_smi_replies(os.path.join(ASCEND, "atlas-800i-a2-6of8"))
    result, warnings = fakes.run_module(kunpeng_a2_host(tmp_path, replies))
    facts = fakes.facts_of(result)
    assert warnings == []
    assert facts["ascend"]["chip_count"] == 6
    assert facts["summary"]["problems"] == ["PCI shows 8 Ascend 910B device(s) but npu-smi reports only 6"]
    seen = {d["bus_id"] for d in facts["ascend"]["devices"]}
    missing = sorted(d["bus_id"] for d in facts["pci"]["ascend"] if d["bus_id"] not in seen)
    assert missing == ["0000:41:00.0", "0000:82:00.0"]


def test_device_health_not_ok(tmp_path):
    replies = fakes.npu_smi_replies(A2)
    replies[("info", "-t", "health", "-i", "3", "-c", "0")] = fakes.read(os.path.join(A2, "health-warning.txt"))
    result, dummy = fakes.run_module(kunpeng_a2_host(tmp_path, replies))
    facts = fakes.facts_of(result)
    bad = [d for d in facts["ascend"]["devices"] if d["health"] != "OK"]
    assert [(d["npu_id"], d["health"], d["error_code"]) for d in bad] == [(3, "Warning", "80E18005")]
    assert facts["summary"]["problems"] == ["Ascend NPU 3 chip 0 (0000:82:00.0) health is Warning (error code 80E18005)"]


def test_table_fallback_when_key_value_forms_fail(tmp_path):
    replies = fakes.npu_smi_replies(A2)
    replies[("info", "-l")] = Reply(rc=1, stderr="Invalid command\n")
    replies[("info", "-m")] = Reply(rc=1, stderr="Invalid command\n")
    result, warnings = fakes.run_module(kunpeng_a2_host(tmp_path, replies))
    facts = fakes.facts_of(result)
    assert facts["ascend"]["source"] == "table"
    assert facts["ascend"]["chip_count"] == 8
    assert facts["summary"]["device_memory_mib"] == [32768] * 8
    assert len(warnings) == 2 and all("Invalid command" in w for w in warnings)


def test_garbage_output_is_a_problem_not_a_traceback(tmp_path):
    replies = fakes.npu_smi_replies(A2)
    replies[("info",)] = "Segmentation fault (core dumped)\n"
    replies[("info", "-m")] = "\x00\x01binary junk\n"
    result, warnings = fakes.run_module(kunpeng_a2_host(tmp_path, replies))
    facts = fakes.facts_of(result)
    assert any("`npu-smi info` printed output that could not be parsed" in w for w in warnings), warnings
    assert any("`npu-smi info -m` printed output that could not be parsed" in w for w in warnings), warnings
    # -l still works, so the chips come from it and the per-chip forms
    assert facts["ascend"]["chip_count"] == 8
    assert [d["hbm_total_mib"] for d in facts["ascend"]["devices"]] == [32768] * 8
    assert len(facts["summary"]["problems"]) == 2


def test_atlas_a3_two_chips_per_npu(tmp_path):
    case = os.path.join(ASCEND, "atlas-800i-a3")
    args = fakes.host_args(str(tmp_path), None, "kunpeng920", "aarch64")
    usages = fakes.read(os.path.join(A2, "usages.txt")).replace("32768", "65536")
    replies = fakes.npu_smi_replies(case)
    for key in list(replies):
        if key[:3] == ("info", "-t", "usages"):
            replies[key] = usages
    fakes.write_tool(args["tool_path"][0], "npu-smi", replies)
    result, warnings = fakes.run_module(args)
    facts = fakes.facts_of(result)
    ascend = facts["ascend"]
    assert warnings == []
    assert ascend["table_layout"] == "chip_phy_id"
    assert ascend["npu_count"] == 8 and ascend["chip_count"] == 16
    assert [(d["npu_id"], d["chip_id"], d["phy_id"]) for d in ascend["devices"][:3]] == [(0, 0, 0), (0, 1, 1), (1, 0, 2)]
    assert ascend["devices"][1]["power_w"] is None  # "-" in the table
    assert facts["summary"]["device_memory_mib"] == [65536] * 16
    assert facts["summary"]["total_memory_mib"] == 16 * 65536


def test_nvidia_hgx_h100(tmp_path):
    result, warnings = fakes.run_module(fakes.nvidia_host(str(tmp_path), H100))
    facts = fakes.facts_of(result)
    nvidia = facts["nvidia"]
    assert warnings == []
    assert facts["summary"]["problems"] == []
    assert facts["summary"]["backend"] == "cuda" and facts["summary"]["driver_ready"] is True
    assert nvidia["cuda_version"] == "13.0" and nvidia["driver_version"] == "580.82.07"
    assert nvidia["kernel_module"] == "open"
    assert nvidia["nvswitch_count"] == 4 and nvidia["fabric_manager_required"] is True
    assert len(nvidia["gpus"]) == 8
    assert {g["fabric"]["state"] for g in nvidia["gpus"]} == {"Completed"}
    assert {g["architecture"] for g in nvidia["gpus"]} == {"Hopper"}
    assert [g["bus_id"] for g in nvidia["gpus"]] == sorted(d["bus_id"] for d in facts["pci"]["nvidia"])
    assert facts["summary"]["device_memory_mib"] == [81559] * 8
    assert facts["cpu"]["features"]["amx"] is True and facts["cpu"]["features"]["avx512"] is True


def test_nvswitch_fabric_not_ready(tmp_path):
    case = tmp_path / "case"
    import shutil
    shutil.copytree(H100, str(case))
    xml = (case / "nvidia-smi-q-x.xml").read_text().replace("<state>Completed</state>", "<state>In Progress</state>", 1)
    (case / "nvidia-smi-q-x.xml").write_text(xml)
    result, dummy = fakes.run_module(fakes.nvidia_host(str(tmp_path / "run"), str(case)))
    problems = fakes.facts_of(result)["summary"]["problems"]
    assert problems == ["NVSwitch system: GPU 0 fabric state is In Progress (is nvidia-fabricmanager running?)"]


def test_nvidia_gpus_without_driver(tmp_path):
    args = fakes.host_args(str(tmp_path), os.path.join(H100, "sysfs"), H100, "x86_64")
    result, warnings = fakes.run_module(args)
    facts = fakes.facts_of(result)
    assert facts["summary"]["backend"] == "cuda" and facts["summary"]["driver_ready"] is False
    assert facts["summary"]["device_count"] == 8
    problems = facts["summary"]["problems"]
    assert any("nvidia-smi was not found: driver tool missing" in p for p in problems)
    assert any("no NVIDIA kernel module is loaded" in p for p in problems)
    assert facts["nvidia"]["fabric_manager_required"] is True
    assert warnings == []


def test_check_mode_gives_the_same_facts(tmp_path):
    args = kunpeng_a2_host(tmp_path, fakes.npu_smi_replies(A2))
    normal, dummy = fakes.run_module(args)
    checked, dummy = fakes.run_module(args, check_mode=True)
    assert checked["changed"] is False
    assert fakes.facts_of(checked) == fakes.facts_of(normal)


def _captured_hosts():
    """Folders under fixtures/nvidia that hold a replayable host (the layout fakes.nvidia_host reads)."""
    base = os.path.join(FIXTURES, "nvidia")
    return sorted(name for name in os.listdir(base)
                  if os.path.isfile(os.path.join(base, name, "query-gpu.csv")))


@pytest.mark.parametrize("name", _captured_hosts())
def test_replayed_host_matches_saved_result(tmp_path, name):
    """Every ``fixtures/nvidia/<host>/`` must reproduce its ``expected.json`` exactly.

    To write ``expected.json`` for a new capture (review it before committing):
    ``KVLLM_WRITE_EXPECTED=1 python -m pytest tests/unit -k test_replayed_host_matches_saved_result``.
    """
    case = os.path.join(FIXTURES, "nvidia", name)
    result, warnings = fakes.run_module(fakes.nvidia_host(str(tmp_path), case))
    facts = fakes.comparable(fakes.facts_of(result))
    expected_path = os.path.join(case, "expected.json")
    if os.environ.get("KVLLM_WRITE_EXPECTED") == "1":
        with open(os.path.join(FIXTURES_SOURCE, "nvidia", name, "expected.json"), "w") as handle:
            json.dump(facts, handle, indent=2, sort_keys=True)
            handle.write("\n")
    assert os.path.isfile(expected_path), f"no expected.json for {name}; see this test's docstring"
    with open(expected_path) as handle:
        assert facts == json.load(handle)
    assert warnings == facts["nvidia"]["findings"] + facts["ascend"]["findings"]


def test_hgx_h100_is_replayed():
    assert "hgx-h100" in _captured_hosts()
