"""nvidia-smi and /proc/driver/nvidia/version parsers."""

import os

import pytest
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import nvidia_smi
from conftest import FIXTURES

NVIDIA = os.path.join(FIXTURES, "nvidia")


def fixture(*parts):
    with open(os.path.join(NVIDIA, *parts)) as handle:
        return handle.read()


def test_query_gpu_h100():
    gpus = nvidia_smi.parse_query_gpu(fixture("hgx-h100", "query-gpu.csv"))
    assert len(gpus) == 8
    assert gpus[0] == {
        "index": 0, "uuid": "GPU-0f1c2c36-0d6e-4b7e-9f3e-1b2a3c4d5e60", "name": "NVIDIA H100 80GB HBM3",
        "bus_id": "0000:18:00.0", "memory_total_mib": 81559, "memory_used_mib": 0, "driver_version": "580.82.07",
        "compute_cap": "9.0", "persistence_mode": "Enabled", "mig_mode": "Disabled",
    }


def test_query_gpu_not_available_values():
    line = "0, GPU-abc, NVIDIA L40S, 00000000:41:00.0, 46068, 1, 535.129.03, 8.9, Disabled, [N/A]\n"
    assert nvidia_smi.parse_query_gpu(line)[0]["mig_mode"] is None


@pytest.mark.parametrize("text", [
    "",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
    'Field "compute_cap" is not a valid field to query.\n',
    "name, memory.total [MiB]\nNVIDIA H100, 81559 MiB\n",
])
def test_query_gpu_garbage_raises(text):
    with pytest.raises(nvidia_smi.NvidiaSmiParseError):
        nvidia_smi.parse_query_gpu(text)


def test_query_args_name_every_field():
    assert nvidia_smi.QUERY_ARGS == [
        "--query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,driver_version,compute_cap,persistence_mode,mig.mode.current",
        "--format=csv,noheader,nounits",
    ]


def test_xml_h100_fabric_and_unknown_elements():
    parsed = nvidia_smi.parse_query_xml(fixture("hgx-h100", "nvidia-smi-q-x.xml"))
    assert parsed["driver_version"] == "580.82.07" and parsed["cuda_version"] == "13.0" and parsed["attached_gpus"] == 8
    gpu = parsed["gpus"][0]
    assert gpu["bus_id"] == "0000:18:00.0" and gpu["architecture"] == "Hopper" and gpu["memory_total_mib"] == 81559
    assert gpu["fabric"] == {"state": "Completed", "status": "Success", "clique_id": "32766",
                             "cluster_uuid": "00000000-0000-0000-0000-000000000000"}
    assert gpu["nvlink"] == {}


def test_xml_older_dtd_without_fabric_data():
    parsed = nvidia_smi.parse_query_xml(fixture("nvidia-smi-q-x-v11-l40s.xml"))
    assert parsed["cuda_version"] == "12.2"
    gpu = parsed["gpus"][0]
    assert gpu["fabric"] == {}  # all N/A
    assert gpu["addressing_mode"] is None
    assert gpu["nvlink"] == {"nvlink_state_placeholder/link_0": "Inactive"}


@pytest.mark.parametrize("text", ["", "not xml at all", "<html><body>502</body></html>", "<nvidia_smi_log><gpu>"])
def test_xml_garbage_raises(text):
    with pytest.raises(nvidia_smi.NvidiaSmiParseError):
        nvidia_smi.parse_query_xml(text)


def test_proc_version_open_and_proprietary():
    open_module = nvidia_smi.parse_proc_version(fixture("hgx-h100", "proc-driver-nvidia-version"))
    assert open_module["loaded"] is True
    assert open_module["kernel_module"] == "open" and open_module["driver_version"] == "580.82.07"
    proprietary = nvidia_smi.parse_proc_version(fixture("proc-driver-nvidia-version-proprietary"))
    assert proprietary["kernel_module"] == "proprietary" and proprietary["driver_version"] == "535.129.03"
    assert nvidia_smi.parse_proc_version(None) == {"loaded": False, "driver_version": None, "kernel_module": None, "banner": None}
    with pytest.raises(nvidia_smi.NvidiaSmiParseError):
        nvidia_smi.parse_proc_version("something else\n")
