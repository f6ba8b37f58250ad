"""CPU facts from fixtures/cpu."""

import os

from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import cpu
from conftest import FIXTURES


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def test_kunpeng_920():
    facts = cpu.parse_cpuinfo(fixture("cpu", "kunpeng920", "cpuinfo"), "aarch64")
    assert facts["kunpeng"] is True
    assert facts["kunpeng_model"] == "Kunpeng 920" and facts["model_name"] == "Kunpeng 920"
    assert facts["vendor"] == "HiSilicon" and facts["cpu_implementer"] == "0x48" and facts["cpu_part"] == "0xd01"
    assert facts["logical_cpus"] == 4
    assert facts["features"] == {"avx2": False, "avx512": False, "amx": False, "neon": True, "sve": False, "bf16": False}


def test_other_arm64_is_not_kunpeng():
    facts = cpu.parse_cpuinfo(fixture("cpu", "neoverse-v1", "cpuinfo"), "arm64")
    assert facts["architecture"] == "aarch64"
    assert facts["kunpeng"] is False and facts["kunpeng_model"] is None
    assert facts["model_name"] == "ARM part 0xd40"
    assert facts["features"]["sve"] is True and facts["features"]["neon"] is True


def test_unknown_hisilicon_part_is_still_kunpeng():
    text = "processor\t: 0\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x48\nCPU part\t: 0xd02\n"
    facts = cpu.parse_cpuinfo(text, "aarch64")
    assert facts["kunpeng"] is True and facts["kunpeng_model"] == "HiSilicon part 0xd02"


def test_x86_flags():
    avx2 = cpu.parse_cpuinfo(fixture("cpu", "x86-avx2", "cpuinfo"), "x86_64")
    assert avx2["features"] == {"avx2": True, "avx512": False, "amx": False, "neon": False, "sve": False, "bf16": False}
    assert avx2["model_name"].startswith("Intel(R) Xeon(R) CPU E5-2680") and avx2["vendor"] == "GenuineIntel"
    spr = cpu.parse_cpuinfo(fixture("nvidia", "hgx-h100", "cpuinfo"), "amd64")
    assert spr["architecture"] == "x86_64"
    assert spr["features"]["avx512"] is True and spr["features"]["amx"] is True
    assert spr["kunpeng"] is False and spr["cpu_implementer"] is None


def test_empty_cpuinfo():
    facts = cpu.parse_cpuinfo(None, None)
    assert facts["logical_cpus"] == 0 and facts["model_name"] is None and not any(facts["features"].values())


def test_meminfo_and_numa():
    assert cpu.parse_meminfo(fixture("cpu", "kunpeng920", "meminfo")) == 1583337472 // 1024 // 1024
    assert cpu.parse_meminfo("garbage") is None
    assert cpu.numa_node_ids(["node1", "possible", "node0", "online", "node10"]) == [0, 1, 10]
