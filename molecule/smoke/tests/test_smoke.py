"""The test bed boots systemd and runs units on both architectures; the probe
playbook reports the CPU path for each container."""

import json
import os
import re


def test_systemd_is_pid1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"


def test_smoke_unit_active_and_enabled(host):
    unit = host.service("kv-smoke.service")
    assert unit.is_running
    assert unit.is_enabled


def test_architecture_matches_platform(host):
    arch = host.file("/run/kv-smoke.arch").content_string.strip()
    expected = "aarch64" if host.backend.get_hostname().endswith("arm64") else "x86_64"
    assert arch == expected


def _report(host):
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "reports", host.backend.get_hostname() + ".json")
    with open(path) as handle:
        return json.load(handle)


def test_probe_report_says_cpu_backend(host):
    report = _report(host)
    assert report["summary"]["backend"] == "cpu"
    assert report["summary"]["device_count"] == 0
    assert report["pci"]["nvidia_count"] == 0 and report["pci"]["ascend_count"] == 0


def test_probe_report_matches_the_container_cpu(host):
    cpu = _report(host)["cpu"]
    assert cpu["architecture"] == host.check_output("uname -m")
    assert cpu["logical_cpus"] == int(host.check_output("nproc --all"))
    # Under qemu-user the arm64 container sees the x86 host's /proc/cpuinfo,
    # so the SIMD flags are checked against what the file says, not the arch.
    cpuinfo = host.file("/proc/cpuinfo").content_string
    if cpu["architecture"] == "aarch64":
        assert cpu["features"]["neon"] == bool(re.search(r"^Features\s*:.*\basimd\b", cpuinfo, re.M))
        assert cpu["features"]["avx2"] is False
    else:
        assert cpu["features"]["avx2"] == bool(re.search(r"^flags\s*:.*\bavx2\b", cpuinfo, re.M))
        assert cpu["features"]["neon"] is False


def test_probe_summary_table_lists_the_host(host):
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "reports", "summary.txt")
    with open(path) as handle:
        rows = [line.split() for line in handle if line.strip()]
    assert rows[0][0] == "HOST"
    assert any(row[0] == host.backend.get_hostname() and row[1] == "cpu" for row in rows[1:])
