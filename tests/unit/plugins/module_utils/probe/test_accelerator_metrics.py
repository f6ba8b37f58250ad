"""Accelerator metrics: the collector's parsing, health decisions and exposition text.

Inputs are the committed captures: the real H200 host (fixtures/nvidia/h200),
the other nvidia-smi DTDs, and the Ascend doubles (fixtures/ascend, the same
files molecule/ascend/doubles/npu-smi replays).  When promtool is on PATH,
every rendered text also passes ``promtool check metrics``.
"""

import os
import re

import pytest
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import accelerator_metrics as am
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import nvidia_smi
from conftest import FIXTURES
from promtool import promtool_check_metrics


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def sample(text, name, **labels):
    """Value of the one sample of ``name`` whose labels include ``labels``."""
    found = []
    for line in text.splitlines():
        match = re.match(r"^(\w+)\{(.*)\} (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2)))
        if all(have.get(key) == value for key, value in labels.items()):
            found.append(float(match.group(3)))
    assert len(found) == 1, (name, labels, found)
    return found[0]


H200 = fixture("nvidia", "h200", "nvidia-smi-q-x.xml")
A2_TABLE = fixture("ascend", "atlas-800i-a2", "info.txt")


def test_h200_readings_from_the_real_capture():
    readings = nvidia_smi.parse_xml_readings(H200)
    assert readings == [{
        "index": 0, "bus_id": "0000:00:06.0", "uuid": "GPU-4c39815b-4f05-5f36-dc17-871cf534ce20",
        "product_name": "NVIDIA H200", "memory_used_mib": 0, "memory_total_mib": 143771,
        "utilization_percent": 0.0, "temperature_c": 38.0, "power_w": 80.89,
        "ecc": {"volatile": {"corrected": 0, "uncorrected": 0}, "aggregate": {"corrected": 0, "uncorrected": 0}},
        "remapped_row_failure": "No", "remapped_row_pending": "No", "recovery_action": "None",
    }]


def test_readings_agree_with_the_probe_on_the_same_capture():
    """The collector and the probe read the same memory size and bus id from one XML."""
    probe = nvidia_smi.parse_query_xml(H200)["gpus"][0]
    reading = nvidia_smi.parse_xml_readings(H200)[0]
    assert (reading["bus_id"], reading["memory_total_mib"]) == (probe["bus_id"], probe["memory_total_mib"])
    csv = nvidia_smi.parse_query_gpu(fixture("nvidia", "h200", "query-gpu.csv"))[0]
    assert (reading["index"], reading["memory_used_mib"]) == (csv["index"], csv["memory_used_mib"])


@pytest.mark.parametrize("path, expected", [
    # v11 DTD (no readings in this trimmed capture): identity only, nothing invented
    (("nvidia", "nvidia-smi-q-x-v11-l40s.xml"), {"memory_total_mib": 46068, "power_w": None, "ecc": {}}),
    (("nvidia", "hgx-h100", "nvidia-smi-q-x.xml"), {"memory_total_mib": 81559, "temperature_c": None}),
])
def test_other_dtds_give_none_for_what_they_lack(path, expected):
    reading = nvidia_smi.parse_xml_readings(fixture(*path))[0]
    assert {key: reading[key] for key in expected} == expected


def test_v11_ecc_single_and_double_bit_totals():
    text = H200.replace("<ecc_errors>", "<ecc_errors><volatile><single_bit><total>3</total></single_bit>"
                        "<double_bit><total>1</total></double_bit></volatile>", 1)
    text = re.sub(r"(<ecc_errors><volatile>.*?</volatile>)\s*<volatile>.*?</volatile>", r"\1", text, count=1, flags=re.S)
    assert nvidia_smi.parse_xml_readings(text)[0]["ecc"]["volatile"] == {"corrected": 3, "uncorrected": 1}


@pytest.mark.parametrize("change, healthy, health", [
    (None, True, "OK"),
    (("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>2</dram_uncorrectable>"), False,
     "uncorrectable ECC errors"),
    (("<remapped_row_failure>No<", "<remapped_row_failure>Yes<"), False, "row remapping failed"),
    (("<gpu_recovery_action>None<", "<gpu_recovery_action>Reset<"), False, "recovery action: Reset"),
    # corrected errors alone do not make a GPU unhealthy
    (("<dram_correctable>0</dram_correctable>", "<dram_correctable>7</dram_correctable>"), True, "OK"),
])
def test_nvidia_health(change, healthy, health):
    text = H200 if change is None else H200.replace(change[0], change[1], 1)
    device = am.nvidia_devices(text)[0]
    assert (device["healthy"], device["health"]) == (healthy, health)


def test_ascend_a2_devices_use_hbm():
    devices = am.ascend_devices(A2_TABLE)
    assert len(devices) == 8
    first = devices[0]
    assert (first["device"], first["bus_id"], first["model"]) == ("0-0", "0000:c1:00.0", "910B4")
    assert first["memory_used_bytes"] == 2654 * am.MIB and first["memory_total_bytes"] == 32768 * am.MIB
    assert (first["power_watts"], first["temperature_celsius"], first["healthy"]) == (87.2, 33, True)


def test_ascend_310p_uses_ddr_and_reports_no_power():
    devices = am.ascend_devices(fixture("ascend", "atlas-300i-duo", "info.txt"))
    assert devices[0]["memory_used_bytes"] == 1782 * am.MIB and devices[0]["memory_total_bytes"] == 44280 * am.MIB
    assert all(device["power_watts"] is None for device in devices)
    assert "kunpeng_accelerator_power_watts" not in am.render({"ascend": {"ok": True, "devices": devices, "error": None}}, 0)


def test_ascend_a3_two_chips_per_npu():
    devices = am.ascend_devices(fixture("ascend", "atlas-800i-a3", "info.txt"))
    assert len(set(device["device"] for device in devices)) == len(devices)


def test_ascend_unhealthy_chip():
    lines = A2_TABLE.splitlines()
    row = next(index for index, line in enumerate(lines) if re.match(r"^\| 3\s+910B4", line))
    lines[row] = lines[row].replace("| OK   ", "| Alarm", 1)
    devices = am.ascend_devices("\n".join(lines))
    assert [(d["device"], d["health"]) for d in devices if not d["healthy"]] == [("3-0", "Alarm")]


@pytest.mark.parametrize("present, expected", [
    ({"nvidia-smi"}, ["nvidia"]), ({"npu-smi"}, ["ascend"]), ({"npu-smi", "nvidia-smi"}, ["ascend", "nvidia"]), (set(), []),
])
def test_vendors_present(present, expected):
    assert am.vendors_present(lambda tool: "/usr/bin/" + tool if tool in present else None) == expected


def runner(answers):
    calls = []

    def run(argv):
        calls.append(argv)
        return answers[argv[0]]
    return run, calls


def test_collect_runs_the_probes_commands():
    run, calls = runner({"nvidia-smi": (0, H200, ""), "npu-smi": (0, A2_TABLE, "")})
    results = am.collect(["ascend", "nvidia"], run)
    assert calls == [["npu-smi", "info"], ["nvidia-smi", "-q", "-x"]]
    assert [len(results[v]["devices"]) for v in ("ascend", "nvidia")] == [8, 1]


@pytest.mark.parametrize("answer, error", [
    ((9, "", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"),
     "nvidia-smi exited 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"),
    ((0, "Failed to initialize NVML: Driver/library version mismatch", ""), "nvidia-smi output not understood: not XML"),
])
def test_collect_failures_give_no_devices_and_a_zero_success(answer, error):
    run, _calls = runner({"nvidia-smi": answer})
    results = am.collect(["nvidia"], run)
    assert results["nvidia"]["ok"] is False and results["nvidia"]["devices"] == []
    assert results["nvidia"]["error"].startswith(error)
    text = am.render(results, 1700000000.0)
    assert sample(text, "kunpeng_accelerator_collector_success", vendor="nvidia") == 0
    assert "kunpeng_accelerator_memory_used_bytes" not in text
    rc, output = promtool_check_metrics(text)
    assert rc == 0, output


def test_h200_textfile():
    run, _calls = runner({"nvidia-smi": (0, H200, "")})
    text = am.render(am.collect(["nvidia"], run), 1700000000.0)
    gpu = {"vendor": "nvidia", "device": "0", "uuid": "GPU-4c39815b-4f05-5f36-dc17-871cf534ce20"}
    assert sample(text, "kunpeng_accelerator_memory_total_bytes", **gpu) == 143771 * am.MIB
    assert sample(text, "kunpeng_accelerator_memory_used_bytes", **gpu) == 0
    assert sample(text, "kunpeng_accelerator_power_watts", **gpu) == 80.89
    assert sample(text, "kunpeng_accelerator_temperature_celsius", **gpu) == 38
    assert sample(text, "kunpeng_accelerator_utilization_ratio", **gpu) == 0
    assert sample(text, "kunpeng_accelerator_healthy", health="OK", **gpu) == 1
    assert sample(text, "kunpeng_accelerator_ecc_errors_total", kind="uncorrected", scope="volatile", **gpu) == 0
    assert sample(text, "kunpeng_accelerator_devices", vendor="nvidia") == 1
    assert sample(text, "kunpeng_accelerator_collector_last_run_timestamp_seconds", vendor="nvidia") == 1700000000.0
    rc, output = promtool_check_metrics(text)
    assert rc == 0, output


def test_ascend_textfile_passes_promtool():
    run, _calls = runner({"npu-smi": (0, A2_TABLE, "")})
    text = am.render(am.collect(["ascend"], run), 1700000000.0)
    assert sample(text, "kunpeng_accelerator_memory_used_bytes", device="7-0") == 2653 * am.MIB
    rc, output = promtool_check_metrics(text)
    assert rc == 0, output


def test_label_values_are_escaped():
    devices = am.nvidia_devices(H200.replace("<product_name>NVIDIA H200<", '<product_name>NVIDIA "H200"\\x<', 1))
    text = am.render({"nvidia": {"ok": True, "devices": devices, "error": None}}, 0)
    assert 'model="NVIDIA \\"H200\\"\\\\x"' in text


def test_no_vendor_tool_renders_nothing():
    assert am.render({}, 0) == ""
